"""``ScriptedLLM``: an OpenAI-compatible chat server whose answers a test scripts.

It serves ``POST /chat/completions`` (plain JSON, or Server-Sent Events with
``"stream": true``, including the final usage chunk when
``stream_options.include_usage`` is set) and ``GET /models``, and logs every request::

    with ScriptedLLM.serve() as llm:          # uvicorn on 127.0.0.1, random port
        llm.add('["query one", "query two"]', contains="web search queries")
        llm.fail(429, retry_after=2)          # the next request is rate limited
        llm.add("a summary", model="small", times=None)   # every request for "small"
        ... LLMConfig(base_url=llm.base_url, model="big") ...
        assert llm.requests[0].model == "big"

Each request takes the first scripted step that matches it (``model`` equal,
``contains`` a substring of the last user message), in the order added; a step is
used ``times`` times (None: forever). A request nothing matches gets a 500 whose
message starts "ScriptedLLM: script exhausted", and lands in ``unmatched`` too.

``llm.misbehave(mode)`` scripts a reply that breaks at the HTTP level instead (bytes
that are not UTF-8, truncated or 100,000-deep JSON, an oversized or endless body, a
drip, a long wait before the headers; see :data:`MISBEHAVIOURS`); a request whose
client went away before its reply was complete lands in ``disconnected``.

``llm.app`` is the bare ASGI app with routes relative to the API root, for mounting
at ``/v1`` on another server; ``llm.root_app`` adds that mount and Ollama's
``/api/tags`` (listing ``models``), as ``serve()`` runs it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from sleuth.testing._chat_wire import (
    completion,
    error_response,
    stream_reply,
    tokens_of,
    usage_of,
)
from sleuth.testing._responses import EscapedJSONResponse

#: The old private name, which the bench world imports.
_completion = completion

__all__ = ["MISBEHAVIOURS", "RecordedRequest", "ScriptedLLM"]

#: What a scripted reply may be: the text, or a function of the request body that
#: returns the text, a whole JSON body (dict), or any Starlette response.
Reply = str | Callable[[dict[str, Any]], "str | dict[str, Any] | Response"]

#: What ``ScriptedLLM.misbehave`` can send, each as ``application/json`` with status 200:
#: ``bad-utf8`` a completion holding bytes that are not UTF-8; ``truncated-json`` one cut
#: off mid-string; ``deep-nesting`` 100,000 nested arrays (200 kB); ``oversized`` a valid
#: completion of ``size`` bytes (default 16 MiB, with its Content-Length); ``endless`` a
#: completion whose text never ends (64 KiB chunks, no Content-Length); ``drip`` a valid
#: completion sent one byte every ``seconds`` (default 2); ``delay`` a valid completion
#: after ``seconds`` (default 3600) before the headers.
MISBEHAVIOURS = (
    "bad-utf8",
    "truncated-json",
    "deep-nesting",
    "oversized",
    "endless",
    "drip",
    "delay",
)
_DEFAULT_SECONDS = {"drip": 2.0, "delay": 3600.0}
_CHUNK = b"a" * 65536


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, for assertions."""

    model: str | None
    messages: list[dict[str, Any]]
    stream: bool
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def last_user(self) -> str:
        """Content of the last user message ("" if none)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) else json.dumps(content)
        return ""


@dataclass
class _Step:
    reply: Reply | None
    status: int = 200
    message: str = ""
    retry_after: str | None = None
    model: str | None = None
    contains: str | None = None
    times: int | None = 1
    usage: bool | tuple[int, int] = True
    finish_reason: str = "stop"
    delay: float = 0.0
    first_token: float = 0.0
    tokens_per_s: float | None = None
    misbehaviour: str | None = None
    seconds: float = 0.0
    size: int = 0
    used: int = field(default=0)

    def matches(self, request: RecordedRequest) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        if self.model is not None and request.model != self.model:
            return False
        return self.contains is None or self.contains in request.last_user


class ScriptedLLM:
    """A scripted OpenAI-compatible endpoint; see the module docstring."""

    def __init__(self, *, models: tuple[str, ...] | list[str] = ("scripted-model",)) -> None:
        self.models = list(models)
        self.requests: list[RecordedRequest] = []
        self.unmatched: list[RecordedRequest] = []
        #: Requests of ``misbehave`` steps whose client closed the connection before the
        #: reply was complete (a cancelled or capped call).
        self.disconnected: list[RecordedRequest] = []
        self.in_flight = 0
        #: When (``time.time()``) each streamed reply sent its first words, in order.
        self.first_words: list[float] = []
        self.max_in_flight = 0
        self.base_url = ""
        self.root_url = ""
        self._steps: list[_Step] = []
        self._lock = threading.Lock()
        self.app = Starlette(
            routes=[
                Route("/chat/completions", self._chat, methods=["POST"]),
                Route("/models", self._models, methods=["GET"]),
            ]
        )
        self.root_app = Starlette(
            routes=[
                Mount("/v1", app=self.app),
                Route("/api/tags", self._ollama_tags, methods=["GET"]),
            ]
        )

    # -- scripting ---------------------------------------------------------------
    def add(
        self,
        reply: Reply,
        *,
        model: str | None = None,
        contains: str | None = None,
        times: int | None = 1,
        usage: bool | tuple[int, int] = True,
        finish_reason: str = "stop",
        delay: float = 0.0,
        first_token: float = 0.0,
        tokens_per_s: float | None = None,
    ) -> ScriptedLLM:
        """Script a reply. ``usage``: True counts words, ``(prompt, completion)`` gives
        the numbers, False leaves usage out. ``delay`` holds the request that long
        (server side) before answering. ``first_token`` and ``tokens_per_s`` pace the
        reply like a real model's: a streamed one sends its first words after
        ``first_token`` seconds and the rest at that rate (four characters a token); a
        plain one is held for the whole time."""
        return self._push(
            _Step(
                reply=reply,
                model=model,
                contains=contains,
                times=times,
                usage=usage,
                finish_reason=finish_reason,
                delay=delay,
                first_token=first_token,
                tokens_per_s=tokens_per_s,
            )
        )

    def fail(
        self,
        status: int = 500,
        *,
        message: str | None = None,
        retry_after: float | str | None = None,
        model: str | None = None,
        contains: str | None = None,
        times: int | None = 1,
        delay: float = 0.0,
    ) -> ScriptedLLM:
        """Script an OpenAI-style error response, with a ``Retry-After`` header if given
        (a number of seconds or an HTTP date string)."""
        text = message or f"scripted failure {status}"
        after = None if retry_after is None else str(retry_after)
        return self._push(
            _Step(
                reply=None,
                status=status,
                message=text,
                retry_after=after,
                model=model,
                contains=contains,
                times=times,
                delay=delay,
            )
        )

    def misbehave(
        self,
        mode: str,
        *,
        model: str | None = None,
        contains: str | None = None,
        times: int | None = 1,
        seconds: float | None = None,
        size: int = 16 * 1024 * 1024,
    ) -> ScriptedLLM:
        """Script a reply that breaks at the HTTP level (``mode``: one of
        :data:`MISBEHAVIOURS`). ``seconds`` is the drip's pause between bytes or the
        delay before the headers; ``size`` the length of an ``oversized`` reply."""
        if mode not in MISBEHAVIOURS:
            raise ValueError(f"unknown misbehaviour {mode!r}; one of {', '.join(MISBEHAVIOURS)}")
        pause = _DEFAULT_SECONDS.get(mode, 0.0) if seconds is None else seconds
        return self._push(
            _Step(
                reply=None,
                model=model,
                contains=contains,
                times=times,
                misbehaviour=mode,
                seconds=pause,
                size=size,
            )
        )

    def wait_disconnected(self, count: int = 1, timeout: float = 30.0) -> bool:
        """Block until ``count`` requests are in ``disconnected`` (False after ``timeout``).

        The server notices a closed connection on its own time (a drip, between two
        bytes): a test that asserts the disconnect waits for it here.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.disconnected) >= count:
                    return True
            time.sleep(0.01)  # a poll for a condition, not a timing assumption
        return False

    def _push(self, step: _Step) -> ScriptedLLM:
        with self._lock:
            self._steps.append(step)
        return self

    @property
    def remaining(self) -> int:
        """Uses left in limited steps (steps with ``times=None`` are not counted)."""
        with self._lock:
            return sum(s.times - s.used for s in self._steps if s.times is not None)

    # -- serving -------------------------------------------------------------------
    @classmethod
    @contextmanager
    def serve(cls, **kwargs: Any) -> Iterator[ScriptedLLM]:
        """A new ScriptedLLM running on 127.0.0.1 (random port) for the ``with`` block."""
        llm = cls(**kwargs)
        with llm.running():
            yield llm

    @contextmanager
    def running(self, host: str = "127.0.0.1") -> Iterator[ScriptedLLM]:
        """Run ``root_app`` with uvicorn in a thread; sets ``base_url`` and ``root_url``."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.root_app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="scripted-llm", daemon=True
        )
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                sock.close()
                raise RuntimeError("ScriptedLLM server did not start")
            time.sleep(0.005)  # startup poll, not a timing assumption
        self.root_url = f"http://{host}:{port}"
        self.base_url = f"{self.root_url}/v1"
        try:
            yield self
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            sock.close()

    # -- endpoints -----------------------------------------------------------------
    async def _models(self, request: Request) -> Response:
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in self.models
        ]
        return JSONResponse({"object": "list", "data": data})

    async def _ollama_tags(self, request: Request) -> Response:
        return JSONResponse({"models": [{"name": m, "model": m} for m in self.models]})

    def _take(self, recorded: RecordedRequest) -> _Step | None:
        with self._lock:
            self.requests.append(recorded)
            for step in self._steps:
                if step.matches(recorded):
                    step.used += 1
                    return step
            self.unmatched.append(recorded)
            return None

    async def _chat(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return error_response(400, "request body is not JSON")
        except ClientDisconnect:  # the client gave up (a cancelled call): nobody to answer
            return Response(status_code=499)
        if not isinstance(body, dict):
            return error_response(400, "request body must be a JSON object")
        recorded = RecordedRequest(
            model=body.get("model"),
            messages=list(body.get("messages") or []),
            stream=bool(body.get("stream")),
            body=body,
            headers=dict(request.headers),
        )
        step = self._take(recorded)
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if step is not None and step.misbehaviour is not None:
                return await self._misbehave(step, recorded, request)
            if step is not None and step.delay:
                await asyncio.sleep(step.delay)
            if step is not None and not recorded.stream and step.reply is not None:
                await asyncio.sleep(_plain_time(step, recorded))
            return self._respond(step, recorded)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _respond(self, step: _Step | None, recorded: RecordedRequest) -> Response:
        if step is None:
            start = " ".join(recorded.last_user.split())[:80]
            return error_response(
                500,
                "ScriptedLLM: script exhausted — nothing scripted matches "
                f"model={recorded.model!r}, last user message {start!r}",
            )
        if step.reply is None:
            return error_response(step.status, step.message, retry_after=step.retry_after)
        produced = step.reply(recorded.body) if callable(step.reply) else step.reply
        if isinstance(produced, Response):
            return produced
        # Escaped JSON, as OpenAI's servers send it: a scripted "\ud800" arrives as the escape.
        if isinstance(produced, dict):
            return EscapedJSONResponse(produced)
        model = recorded.model or (self.models[0] if self.models else "scripted-model")
        usage = usage_of(step.usage, recorded.messages, produced)
        if recorded.stream:
            options = recorded.body.get("stream_options") or {}
            include = bool(options.get("include_usage")) if isinstance(options, dict) else False
            return stream_reply(
                produced,
                model,
                step.finish_reason,
                usage if include else None,
                first_token=step.first_token,
                tokens_per_s=step.tokens_per_s,
                on_first=lambda: self._first_words(recorded),
            )
        return EscapedJSONResponse(completion(produced, model, step.finish_reason, usage))

    def _first_words(self, recorded: RecordedRequest) -> None:
        with self._lock:
            self.first_words.append(time.time())

    # -- misbehaving -----------------------------------------------------------------
    def _gone(self, recorded: RecordedRequest) -> None:
        with self._lock:
            self.disconnected.append(recorded)

    async def _misbehave(
        self, step: _Step, recorded: RecordedRequest, request: Request
    ) -> Response:
        mode = step.misbehaviour
        model = recorded.model or "scripted-model"
        valid = json.dumps(
            completion("a reply from a misbehaving server", model, "stop", None)
        ).encode()
        if mode == "delay":
            if await _disconnects_within(request, step.seconds):
                self._gone(recorded)
                return Response(status_code=499)
            return Response(valid, media_type="application/json")
        if mode == "drip" or mode == "endless":
            stream = (
                self._drip(valid, step.seconds, recorded)
                if mode == "drip"
                else self._endless(model, recorded)
            )
            return StreamingResponse(stream, media_type="application/json")
        if mode == "bad-utf8":
            body = valid.replace(b"a reply", b"a \xff\xfe\xc3( reply")
        elif mode == "truncated-json":
            body = valid[: len(valid) // 2]
        elif mode == "deep-nesting":
            body = b"[" * 100_000 + b"]" * 100_000
        else:  # oversized: valid JSON, ``size`` bytes long
            empty = len(json.dumps(completion("", model, "stop", None)))
            body = json.dumps(
                completion("x" * max(0, step.size - empty), model, "stop", None)
            ).encode()
        return Response(body, media_type="application/json")

    async def _drip(
        self, body: bytes, pause: float, recorded: RecordedRequest
    ) -> AsyncIterator[bytes]:
        complete = False
        try:
            for n in range(len(body)):
                yield body[n : n + 1]
                await asyncio.sleep(pause)
            complete = True
        finally:
            if not complete:
                self._gone(recorded)

    async def _endless(self, model: str, recorded: RecordedRequest) -> AsyncIterator[bytes]:
        head = json.dumps(completion("", model, "stop", None)).encode()
        try:
            yield head[: head.index(b'"content": "') + len(b'"content": "')]
            while True:
                yield _CHUNK
                await asyncio.sleep(0)  # let the server notice a closed connection
        finally:
            self._gone(recorded)


def _plain_time(step: _Step, recorded: RecordedRequest) -> float:
    """Seconds a paced step holds a reply that is not streamed: as long as its stream."""
    if not step.first_token and not step.tokens_per_s:
        return 0.0
    text = step.reply if isinstance(step.reply, str) else ""
    rate = step.tokens_per_s
    return step.first_token + (tokens_of(text) / rate if rate else 0.0)


async def _disconnects_within(request: Request, seconds: float) -> bool:
    """True when the client closes the connection within ``seconds`` (the body is read)."""

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    try:
        await asyncio.wait_for(gone(), timeout=seconds)
    except TimeoutError:
        return False
    return True
