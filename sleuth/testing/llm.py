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
import re
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

from sleuth.testing._responses import EscapedJSONResponse

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

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


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


def _words(text: str) -> int:
    return len(text.split())


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
    ) -> ScriptedLLM:
        """Script a reply. ``usage``: True counts words, ``(prompt, completion)`` gives
        the numbers, False leaves usage out. ``delay`` holds the request that long
        (server side) before answering."""
        return self._push(
            _Step(
                reply=reply,
                model=model,
                contains=contains,
                times=times,
                usage=usage,
                finish_reason=finish_reason,
                delay=delay,
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
            return _error(400, "request body is not JSON")
        except ClientDisconnect:  # the client gave up (a cancelled call): nobody to answer
            return Response(status_code=499)
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object")
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
            return self._respond(step, recorded)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _respond(self, step: _Step | None, recorded: RecordedRequest) -> Response:
        if step is None:
            start = " ".join(recorded.last_user.split())[:80]
            return _error(
                500,
                "ScriptedLLM: script exhausted — nothing scripted matches "
                f"model={recorded.model!r}, last user message {start!r}",
            )
        if step.reply is None:
            return _error(step.status, step.message, retry_after=step.retry_after)
        produced = step.reply(recorded.body) if callable(step.reply) else step.reply
        if isinstance(produced, Response):
            return produced
        # Escaped JSON, as OpenAI's servers send it: a scripted "\ud800" arrives as the escape.
        if isinstance(produced, dict):
            return EscapedJSONResponse(produced)
        model = recorded.model or (self.models[0] if self.models else "scripted-model")
        usage = _usage(step.usage, recorded, produced)
        if recorded.stream:
            options = recorded.body.get("stream_options") or {}
            include = bool(options.get("include_usage")) if isinstance(options, dict) else False
            return StreamingResponse(
                _sse(produced, model, step.finish_reason, usage if include else None),
                media_type="text/event-stream",
            )
        return EscapedJSONResponse(_completion(produced, model, step.finish_reason, usage))

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
            _completion("a reply from a misbehaving server", model, "stop", None)
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
            empty = len(json.dumps(_completion("", model, "stop", None)))
            body = json.dumps(
                _completion("x" * max(0, step.size - empty), model, "stop", None)
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
        head = json.dumps(_completion("", model, "stop", None)).encode()
        try:
            yield head[: head.index(b'"content": "') + len(b'"content": "')]
            while True:
                yield _CHUNK
                await asyncio.sleep(0)  # let the server notice a closed connection
        finally:
            self._gone(recorded)


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


def _usage(
    spec: bool | tuple[int, int], recorded: RecordedRequest, text: str
) -> dict[str, int] | None:
    if spec is False:
        return None
    if isinstance(spec, tuple):
        prompt, completion = spec
    else:
        prompt = sum(_words(str(m.get("content", ""))) for m in recorded.messages)
        completion = _words(text)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _error(status: int, message: str, *, retry_after: str | None = None) -> Response:
    headers = {"retry-after": retry_after} if retry_after is not None else None
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return JSONResponse(body, status_code=status, headers=headers)


def _completion(
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


async def _sse(
    text: str, model: str, finish_reason: str, usage: dict[str, int] | None
) -> AsyncIterator[str]:
    """The reply as OpenAI's chat.completion.chunk events, a few words per chunk."""
    base = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        return f"data: {json.dumps({**base, 'choices': choices, **extra})}\n\n"

    yield event(
        [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]
    )
    for piece in re.findall(r"\S+\s*|\s+", text):
        yield event([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
    yield event([{"index": 0, "delta": {}, "finish_reason": finish_reason}])
    if usage is not None:
        yield event([], usage=usage)
    yield "data: [DONE]\n\n"
