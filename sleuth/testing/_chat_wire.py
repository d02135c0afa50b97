"""The wire format of the scripted model server: completions, SSE chunks, errors, usage.

:func:`stream_reply` sends a reply as OpenAI's ``chat.completion.chunk`` events, a few
words per chunk, optionally paced like a real model: ``first_token`` seconds before the
first words, then ``tokens_per_s`` (a token counted as four characters, as a BPE
tokenizer counts English prose).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

__all__ = ["completion", "error_response", "stream_reply", "tokens_of", "usage_of"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


def _words(text: str) -> int:
    return len(text.split())


def usage_of(
    spec: bool | tuple[int, int], messages: list[dict[str, Any]], text: str
) -> dict[str, int] | None:
    """The usage a reply reports: ``spec`` True counts words, a pair gives the numbers,
    False reports none."""
    if spec is False:
        return None
    if isinstance(spec, tuple):
        prompt, completion = spec
    else:
        prompt = sum(_words(str(m.get("content", ""))) for m in messages)
        completion = _words(text)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def error_response(status: int, message: str, *, retry_after: str | None = None) -> Response:
    headers = {"retry-after": retry_after} if retry_after is not None else None
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return JSONResponse(body, status_code=status, headers=headers)


def completion(
    text: str, model: str, finish_reason: str, usage: dict[str, int] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def tokens_of(text: str) -> int:
    """Tokens of ``text`` as a BPE tokenizer counts English prose: about 4 characters each."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def stream_reply(
    text: str,
    model: str,
    finish_reason: str,
    usage: dict[str, int] | None,
    *,
    first_token: float = 0.0,
    tokens_per_s: float | None = None,
    on_first: Callable[[], None] | None = None,
) -> StreamingResponse:
    """``text`` as Server-Sent Events (see the module docstring); ``usage`` (when given)
    in a last chunk of its own, as OpenAI sends it for ``include_usage``. ``on_first`` is
    called as the first words are sent."""
    return StreamingResponse(
        _chunks(text, model, finish_reason, usage, first_token, tokens_per_s, on_first),
        media_type="text/event-stream",
    )


async def _chunks(
    text: str,
    model: str,
    finish_reason: str,
    usage: dict[str, int] | None,
    first_token: float,
    tokens_per_s: float | None,
    on_first: Callable[[], None] | None,
) -> AsyncIterator[str]:
    base = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        return f"data: {json.dumps({**base, 'choices': choices, **extra})}\n\n"

    if first_token > 0:
        await asyncio.sleep(first_token)
    yield event(
        [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]
    )
    for n, piece in enumerate(re.findall(r"\S+\s*|\s+", text)):
        if n == 0 and on_first is not None:
            on_first()
        yield event([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
        if tokens_per_s:
            await asyncio.sleep(tokens_of(piece) / tokens_per_s)
    yield event([{"index": 0, "delta": {}, "finish_reason": finish_reason}])
    if usage is not None:
        yield event([], usage=usage)
    yield "data: [DONE]\n\n"
