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

__all__ = ["RecordedRequest", "ScriptedLLM"]

#: What a scripted reply may be: the text, or a function of the request body that
#: returns the text, a whole JSON body (dict), or any Starlette response.
Reply = str | Callable[[dict[str, Any]], "str | dict[str, Any] | Response"]

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}


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
        self.in_flight = 0
        self.max_in_flight = 0
        self.base_url = ""
        self.root_url = ""
        self._steps: list[_Step] = []
        self._lock = threading.Lock()
        self.app = Starlette(routes=[
            Route("/chat/completions", self._chat, methods=["POST"]),
            Route("/models", self._models, methods=["GET"]),
        ])
        self.root_app = Starlette(routes=[
            Mount("/v1", app=self.app),
            Route("/api/tags", self._ollama_tags, methods=["GET"]),
        ])

    # -- scripting ---------------------------------------------------------------
    def add(self, reply: Reply, *, model: str | None = None, contains: str | None = None,
            times: int | None = 1, usage: bool | tuple[int, int] = True,
            finish_reason: str = "stop", delay: float = 0.0) -> ScriptedLLM:
        """Script a reply. ``usage``: True counts words, ``(prompt, completion)`` gives
        the numbers, False leaves usage out. ``delay`` holds the request that long
        (server side) before answering."""
        return self._push(_Step(reply=reply, model=model, contains=contains, times=times,
                                usage=usage, finish_reason=finish_reason, delay=delay))

    def fail(self, status: int = 500, *, message: str | None = None,
             retry_after: float | str | None = None, model: str | None = None,
             contains: str | None = None, times: int | None = 1,
             delay: float = 0.0) -> ScriptedLLM:
        """Script an OpenAI-style error response, with a ``Retry-After`` header if given
        (a number of seconds or an HTTP date string)."""
        text = message or f"scripted failure {status}"
        after = None if retry_after is None else str(retry_after)
        return self._push(_Step(reply=None, status=status, message=text, retry_after=after,
                                model=model, contains=contains, times=times, delay=delay))

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
        config = uvicorn.Config(self.root_app, log_level="warning", lifespan="off",
                                timeout_graceful_shutdown=1)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                                  name="scripted-llm", daemon=True)
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
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"}
                for m in self.models]
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
            model=body.get("model"), messages=list(body.get("messages") or []),
            stream=bool(body.get("stream")), body=body, headers=dict(request.headers))
        step = self._take(recorded)
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if step is not None and step.delay:
                await asyncio.sleep(step.delay)
            return self._respond(step, recorded)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _respond(self, step: _Step | None, recorded: RecordedRequest) -> Response:
        if step is None:
            start = " ".join(recorded.last_user.split())[:80]
            return _error(500, "ScriptedLLM: script exhausted — nothing scripted matches "
                          f"model={recorded.model!r}, last user message {start!r}")
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
                media_type="text/event-stream")
        return EscapedJSONResponse(_completion(produced, model, step.finish_reason, usage))


def _usage(spec: bool | tuple[int, int], recorded: RecordedRequest,
           text: str) -> dict[str, int] | None:
    if spec is False:
        return None
    if isinstance(spec, tuple):
        prompt, completion = spec
    else:
        prompt = sum(_words(str(m.get("content", ""))) for m in recorded.messages)
        completion = _words(text)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def _error(status: int, message: str, *, retry_after: str | None = None) -> Response:
    headers = {"retry-after": retry_after} if retry_after is not None else None
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return JSONResponse(body, status_code=status, headers=headers)


def _completion(text: str, model: str, finish_reason: str,
                usage: dict[str, int] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


async def _sse(text: str, model: str, finish_reason: str,
               usage: dict[str, int] | None) -> AsyncIterator[str]:
    """The reply as OpenAI's chat.completion.chunk events, a few words per chunk."""
    base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}

    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        return f"data: {json.dumps({**base, 'choices': choices, **extra})}\n\n"

    yield event([{"index": 0, "delta": {"role": "assistant", "content": ""},
                  "finish_reason": None}])
    for piece in re.findall(r"\S+\s*|\s+", text):
        yield event([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
    yield event([{"index": 0, "delta": {}, "finish_reason": finish_reason}])
    if usage is not None:
        yield event([], usage=usage)
    yield "data: [DONE]\n\n"
