"""What comes over the wire from the model server: capped in bytes, checked in shape.

:func:`model_http_client` is the HTTP client under the openai SDK, with every reply
capped in bytes; :func:`read_completion` reads the SDK's chat completion object, whose
fields can hold anything the server sent (the SDK does not check them).

The SDK reads a whole reply into memory before parsing it, and httpx's timeouts are
per read: a server that sends an endless body (or one byte every few seconds) is
read forever. A response hook counts the bytes of every response (chat replies,
error bodies, the model list) and stops at :data:`MAX_REPLY_BYTES`, closing the
connection; a declared ``Content-Length`` over the cap is refused before any of the
body is read. The time a call may take is bounded by the caller
(:class:`~sleuth.llm.client.LLMClient` puts a deadline on each attempt).

Replies are asked for uncompressed (``Accept-Encoding: identity``), so the cap
counts the bytes that are parsed; one compressed anyway is refused rather than
inflated (a gzip body can inflate a thousandfold past any cap).
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from sleuth._tls import client_tls

__all__ = [
    "MAX_REPLY_BYTES",
    "UNPARSABLE",
    "Completion",
    "Misshapen",
    "ReplyRefused",
    "cause",
    "content_text",
    "headers_of",
    "model_http_client",
    "parse_retry_after",
    "read_completion",
    "token_count",
]

_E = TypeVar("_E", bound=BaseException)

#: Most bytes of one reply from the model server. A chat reply of 32,000 tokens is
#: about 130 kB of English, and even 128,000 tokens of CJK escaped as ``\uXXXX`` JSON
#: is under 1 MB; 4 MiB leaves room for that four times over, while eight calls in
#: flight (the default --llm-concurrency) hold at most 32 MiB of reply bytes.
MAX_REPLY_BYTES = 4 * 1024 * 1024


#: What the SDK raises, unwrapped, for a body it cannot parse: bytes that are not UTF-8,
#: text that is not JSON, JSON nested deeper than the parser's recursion limit.
UNPARSABLE = (UnicodeDecodeError, json.JSONDecodeError, RecursionError)


class ReplyRefused(httpx.TransportError):
    """The reply was not read to its end: over the byte cap, or compressed.

    A transport error, so the SDK wraps it like a broken connection (in
    ``APIConnectionError``); the client finds it again in the error's causes.
    """


def _too_large(limit: int) -> str:
    return f"the reply is larger than {limit // 2**20} MiB (not read further)"


class _CappedStream(httpx.AsyncByteStream):
    """A response body that raises :class:`ReplyRefused` once it passes ``limit`` bytes."""

    def __init__(self, stream: httpx.AsyncByteStream, limit: int, request: httpx.Request) -> None:
        self._stream = stream
        self._limit = limit
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._stream:
            seen += len(chunk)
            if seen > self._limit:
                raise ReplyRefused(_too_large(self._limit), request=self._request)
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


def _capper(limit: int) -> Callable[[httpx.Response], Awaitable[None]]:
    """A response hook: refuses what is over ``limit`` or compressed, caps the rest.

    httpx runs response hooks before it reads the body, and closes the response
    when one raises.
    """

    async def cap(response: httpx.Response) -> None:
        declared = response.headers.get("content-length", "").strip()
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if declared.isdigit() and int(declared) > limit:
            raise ReplyRefused(_too_large(limit), request=response.request)
        if encoding not in ("", "identity"):
            raise ReplyRefused(
                f"the reply is compressed ({encoding[:40]}) although none was asked for",
                request=response.request,
            )
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _CappedStream(response.stream, limit, response.request)

    return cap


def model_http_client(timeout: float, *, limit: int = MAX_REPLY_BYTES) -> httpx.AsyncClient:
    """The ``http_client`` for ``openai.AsyncOpenAI``: replies capped at ``limit`` bytes.

    Otherwise as the SDK's own client (redirects followed, proxies from the
    environment); ``timeout`` applies to each connect and read, and does not bound a
    whole call (see the module docstring).
    """
    return httpx.AsyncClient(
        timeout=timeout,
        follow_redirects=True,
        **client_tls(limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100)),
        headers={"Accept-Encoding": "identity"},
        event_hooks={"response": [_capper(limit)]},
    )


# -- reading errors ---------------------------------------------------------------------


def parse_retry_after(
    headers: Mapping[str, str] | None, *, now: float | None = None
) -> float | None:
    """Seconds a server asked us to wait, or None when it did not say (or said nonsense).

    Reads ``retry-after-ms`` (OpenAI's) first, then ``Retry-After`` as seconds or as an
    HTTP date (relative to ``now``, a Unix time, default the current time). Dates in
    the past mean zero.
    """
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            millis = float(raw_ms)
        except ValueError:
            millis = -1.0
        if millis >= 0 and millis == millis:  # not NaN
            return millis / 1000
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
        return seconds if seconds >= 0 and seconds == seconds and seconds != float("inf") else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def cause(exc: BaseException, kind: type[_E]) -> _E | None:
    """``exc`` or the first of its causes that is a ``kind`` (the SDK wraps transport errors)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def headers_of(exc: BaseException) -> dict[str, str]:
    """The headers of the response an SDK error carries ({} when none)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    return dict(headers.items()) if headers is not None else {}


# -- reading a completion --------------------------------------------------------------


class Misshapen(ValueError):
    """A reply that parsed as JSON but is not shaped like a chat completion."""


@dataclass(frozen=True)
class Completion:
    """The checked fields of one chat completion; token counts None when not reported."""

    text: str
    model: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    #: (id, name, arguments) of each tool call.
    calls: tuple[tuple[str, str, str], ...]


def read_completion(completion: Any) -> Completion | None:
    """The first choice of ``completion``; None when it has none; Misshapen when a field
    that must be a list or text is something else."""
    choices = getattr(completion, "choices", None) or []
    if not isinstance(choices, list):
        raise Misshapen("'choices' is not a list")
    if not choices:
        return None
    message = getattr(choices[0], "message", None)
    text = content_text(getattr(message, "content", None))
    if text is None:
        raise Misshapen("the message content is not text")
    raw_calls = getattr(message, "tool_calls", None) or []
    if not isinstance(raw_calls, list):
        raise Misshapen("'tool_calls' is not a list")
    calls = tuple(
        _tool_call(n, c)
        for n, c in enumerate(raw_calls)
        if getattr(c, "function", None) is not None
    )
    usage = getattr(completion, "usage", None)
    model = getattr(completion, "model", None)
    finish = getattr(choices[0], "finish_reason", None)
    return Completion(
        text=text,
        model=model if isinstance(model, str) and model else None,
        finish_reason=finish if isinstance(finish, str) else None,
        prompt_tokens=token_count(getattr(usage, "prompt_tokens", None)),
        completion_tokens=token_count(getattr(usage, "completion_tokens", None)),
        calls=calls,
    )


def content_text(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a list of parts; None for neither."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...] (some servers)
        parts = [
            part.get("text") if isinstance(part, dict) else getattr(part, "text", None)
            for part in content
        ]
        return "".join(p for p in parts if isinstance(p, str))
    return None


def token_count(value: Any) -> int | None:
    """A token count a server may report (an int, not a bool, not negative), else None."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else None


def _tool_call(n: int, call: Any) -> tuple[str, str, str]:
    function = call.function
    arguments = getattr(function, "arguments", None)
    if isinstance(arguments, dict):  # some servers send the object, not its JSON text
        arguments = json.dumps(arguments, ensure_ascii=False)
    name = getattr(function, "name", None)
    return (
        str(getattr(call, "id", "") or f"call_{n}"),
        name if isinstance(name, str) else "",
        arguments if isinstance(arguments, str) else "",
    )
