"""A streamed chat reply: read chunk by chunk, its text passed on as it arrives.

:func:`read_streamed` reads the reply to a request made with ``"stream": true``: the
Server-Sent Events of ``chat.completion.chunk`` objects (usage from the last chunk when
the server sends one), or, from a server that does not stream, the plain completion it
sent instead. Either way the result is the :class:`~sleuth.llm._wire.Completion` that a
non-streamed call gives, so counting, caching and the run record do not change.

:class:`TextTeller` turns the arriving text into ``report_text`` progress events, at
most one per :data:`TELL_INTERVAL_S`: a fast model does not flood the web page's event
stream or an MCP client. Each event carries the new text (``delta``) and where it starts
(``offset``): an offset of 0 after text was told means the reply started again (a retry).
"""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import httpx
import openai

from sleuth.llm._wire import Completion, Misshapen, content_text, read_completion, token_count
from sleuth.progress import Event, ProgressCallback

__all__ = ["TELL_INTERVAL_S", "TextTeller", "read_streamed", "refuses_streaming"]

#: Least seconds between two ``report_text`` events (at most ten a second).
TELL_INTERVAL_S = 0.1


class TextTeller:
    """Tells ``progress`` the text of a reply as it is written (see the module docstring)."""

    def __init__(
        self, progress: ProgressCallback, stage: str, interval: float = TELL_INTERVAL_S
    ) -> None:
        self._progress = progress
        self._stage = stage
        self._interval = interval
        self._parts: list[str] = []
        self._chars = 0
        self._told = 0
        self._last: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """A new attempt: its text starts from nothing (told with offset 0)."""
        self._cancel()
        self._parts, self._chars, self._told = [], 0, 0

    def add(self, piece: str) -> None:
        """Text that just arrived: told now, or within the interval with what follows it."""
        self._parts.append(piece)
        self._chars += len(piece)
        loop = asyncio.get_running_loop()
        wait = 0.0 if self._last is None else self._last + self._interval - loop.time()
        if wait <= 0:
            self.flush()
        elif self._timer is None:
            self._timer = loop.call_later(wait, self.flush)

    def flush(self) -> None:
        """Tell the text not yet told (nothing when there is none)."""
        self._cancel()
        text = "".join(self._parts)
        self._parts = [text]
        if len(text) == self._told and self._told:
            return
        words = len(text.split())
        self._progress(
            Event(
                "report_text",
                f"writing the {self._stage}: {words:,} words",
                {
                    "stage": self._stage,
                    "offset": self._told,
                    "delta": text[self._told :],
                    "chars": len(text),
                    "words": words,
                },
            )
        )
        self._told = len(text)
        self._last = asyncio.get_running_loop().time()

    def close(self) -> None:
        """The reply is complete: tell what is left at once."""
        if self._chars > self._told:
            self.flush()
        self._cancel()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def refuses_streaming(status: int | None, message: str) -> bool:
    """Whether a refused request was refused for asking to stream (``stream``,
    ``stream_options``): the server is then asked again without."""
    return status in (400, 422) and "stream" in message.lower()


async def read_streamed(raw: Any, teller: TextTeller | None) -> Completion | None:
    """The reply behind ``raw`` (the SDK's raw response to a streamed request), its text
    told to ``teller`` as it arrives; None when it holds no choice. Misshapen for a
    chunk or body that is not shaped like a chat completion."""
    response = raw.http_response
    try:
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "text/event-stream":  # a server that does not stream: one JSON body
            try:
                raw_body = await response.aread()
            except httpx.HTTPError as exc:  # as the SDK reports a body it could not read
                raise openai.APIConnectionError(request=response.request) from exc
            body = json.loads(raw_body, object_hook=lambda d: SimpleNamespace(**d))
            return read_completion(body)
        return await _read_chunks(raw.parse(), teller)
    finally:
        await response.aclose()


async def _read_chunks(chunks: Any, teller: TextTeller | None) -> Completion | None:
    parts: list[str] = []
    model: str | None = None
    finish: str | None = None
    prompt = answer = None
    chosen = False
    async for chunk in chunks:
        named = getattr(chunk, "model", None)
        model = named if isinstance(named, str) and named else model
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            prompt = token_count(getattr(usage, "prompt_tokens", None))
            answer = token_count(getattr(usage, "completion_tokens", None))
        choices = getattr(chunk, "choices", None) or []
        if not isinstance(choices, list):
            raise Misshapen("'choices' is not a list")
        for choice in choices:
            if getattr(choice, "index", 0) not in (0, None):
                continue  # one answer was asked for; another choice is not it
            chosen = True
            text = content_text(getattr(getattr(choice, "delta", None), "content", None))
            if text is None:
                raise Misshapen("the message content is not text")
            if text:
                parts.append(text)
                if teller is not None:
                    teller.add(text)
            reason = getattr(choice, "finish_reason", None)
            finish = reason if isinstance(reason, str) and reason else finish
    if teller is not None:
        teller.close()
    if not chosen:
        return None
    return Completion(
        text="".join(parts),
        model=model,
        finish_reason=finish,
        prompt_tokens=prompt,
        completion_tokens=answer,
        calls=(),
    )
