"""The local web app behind ``sleuth serve``: one page, a JSON API and a Server-Sent Events stream.

Routes::

    GET  /                          the page (inline CSS and JS, nothing external);
                                    /?run=ID opens with that stored run's report
    GET  /api/config                defaults for the form, providers, whether the store is on
    POST /api/runs                  start a research (JSON body); 409 while one is running
    GET  /api/live                  the runs as they start, however started (Server-Sent
                                    Events: the one running when it connects, then each new)
    GET  /api/runs/{id}/events      the run's progress, then its report, as Server-Sent Events
    POST /api/runs/{id}/stop        cancel a running research
    GET  /api/runs/{id}/report.html the finished report as one self-contained HTML file
    GET  /api/runs/{id}/report.md   ... as Markdown
    GET  /api/history               past runs from the run store (when it is on)
    GET  /api/history/{id}          one stored report, rendered

One research runs at a time. Its events are kept, so a page that reconnects (or a
second tab) replays them from the start or from ``Last-Event-ID``; every page follows
``/api/live`` and so shows a run started by another tab or by a script as it goes.
Requests must name a loopback host or the address the server was bound to
(DNS-rebinding guard) unless it was bound beyond loopback on purpose, and a POST must be
JSON (at most ``MAX_BODY_BYTES``, refused with 413 as soon as it is over) from the
page's own origin. Every response says ``X-Content-Type-Options: nosniff``; the page and
the report download carry their Content-Security-Policy as a header. Text a run sends
(events, reports) is made valid, so no lone surrogate can break a stream or a download.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sleuth._origin import origin_allowed
from sleuth._valid import valid_data, valid_text
from sleuth.errors import ConfigError, SleuthError
from sleuth.models import Report
from sleuth.progress import Event
from sleuth.report.html import REPORT_CSP, render_fragment, render_html
from sleuth.report.waterfall import render_waterfall
from sleuth.settings import DEEP_DEFAULTS, Settings, load_settings, with_options
from sleuth.web.history import history, history_run
from sleuth.web.page import render_page
from sleuth.web.respond import error as _error
from sleuth.web.respond import for_page

__all__ = [
    "LOOPBACK_HOSTS",
    "MAX_BODY_BYTES",
    "LiveRun",
    "WebState",
    "create_app",
    "for_page",
    "host_names",
]

LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]
#: The most bytes a request body may have: a form is a few hundred.
MAX_BODY_BYTES = 64 * 1024
KEEP_RUNS = 20
KEEPALIVE_S = 15.0
#: The form's fields (settings names); everything else comes from the server's settings.
FORM_FIELDS = ("depth", "max_sources", "search", "model", "mode")


@dataclass
class LiveRun:
    """One research started from the page: its event log, and its report once done."""

    id: str
    question: str
    settings: Settings
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    report: Report | None = None
    started: float = field(default_factory=time.monotonic)
    done: bool = False

    def add(self, name: str, data: dict[str, Any]) -> None:
        """Append one SSE message and wake every stream that waits for it."""
        self.events.append((name, data))
        self.changed.set()
        self.changed = asyncio.Event()

    def on_event(self, event: Event) -> None:
        """The progress callback: every pipeline event becomes a ``progress`` message."""
        self.add(
            "progress",
            {
                "kind": event.kind,
                "message": event.message,
                "data": event.data,
                "t": round(time.monotonic() - self.started, 3),
            },
        )


class WebState:
    """The server's settings and its runs (newest last, at most ``KEEP_RUNS``)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.runs: OrderedDict[str, LiveRun] = OrderedDict()
        #: Set (and replaced) whenever a run starts: what ``/api/live`` waits for.
        self.started = asyncio.Event()

    def running(self) -> LiveRun | None:
        return next((run for run in self.runs.values() if not run.done), None)

    def keep(self, run: LiveRun) -> None:
        self.runs[run.id] = run
        self.started.set()
        self.started = asyncio.Event()
        while len(self.runs) > KEEP_RUNS:
            oldest = next(iter(self.runs))
            if not self.runs[oldest].done:
                break
            del self.runs[oldest]


def host_names(bound: str) -> list[str]:
    """The Host names answered by a server bound to the loopback address ``bound``:
    the usual loopback names and ``bound`` itself (``--host 127.0.0.2``)."""
    bare = bound.strip("[]").lower()
    own = [f"[{bare}]"] if ":" in bare else [bare]
    return [*LOOPBACK_HOSTS, *(name for name in own if name not in LOOPBACK_HOSTS)]


async def _read_body(request: Request, cap: int = MAX_BODY_BYTES) -> bytes | None:
    """The request body, or None as soon as it is over ``cap`` bytes (never read whole)."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > cap:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > cap:
            return None
    return bytes(body)


def run_settings(base: Settings, form: dict[str, Any]) -> Settings:
    """The server's settings with the form's choices applied; ConfigError for bad ones.

    Only choices that differ from the server's own count as set: a form sent as it
    was shown must not turn a default into an explicit choice (``--docs`` searches
    the web only when ``--search`` was given).
    """
    values = base.model_dump(exclude_unset=True)
    chosen = {}
    for key in FORM_FIELDS:
        value = form.get(key)
        if isinstance(value, str):
            value = value.strip()
        if value not in (None, ""):
            chosen[key] = value
    trial = load_settings({**values, **chosen}, env={})  # validates every choice
    changed = {
        key: value for key, value in chosen.items() if getattr(trial, key) != getattr(base, key)
    }
    return with_options(base, changed)


async def _execute(run: LiveRun) -> None:
    """Run the research and append its outcome (report or error) and an ``end`` message."""
    from sleuth.pipeline.quick import research

    try:
        report = await research(run.question, settings=run.settings, on_event=run.on_event)
    except asyncio.CancelledError:
        run.add("failed", {"message": "stopped"})
    except SleuthError as exc:
        run.add("failed", {"message": str(exc)})
    except Exception as exc:  # the page shows it; the server keeps serving
        run.add("failed", {"message": f"internal error: {type(exc).__name__}: {exc}"})
    else:
        run.report = report
        stats = report.stats
        run.add(
            "report",
            {
                # The page drew this run's timeline live: it gets the finished one (with
                # the critical path) to put in its place, not a second copy in the report.
                "html": for_page(render_fragment(report, timeline=False)),
                "timeline_html": for_page(render_waterfall(report, open_=True)),
                "confidence": report.confidence,
                "sources": len(report.sources),
                "failures": len(report.failures),
                "tokens": stats.prompt_tokens + stats.completion_tokens,
                "elapsed_s": round(time.monotonic() - run.started, 3),
                "run_id": report.run_id,
            },
        )
    finally:
        run.done = True
        run.add("end", {})


def _same_origin(request: Request) -> bool:
    return origin_allowed(
        request.headers.get("origin"), request.url.scheme, request.headers.get("host")
    )


async def start_run(request: Request) -> Response:
    state: WebState = request.app.state.web
    if not request.headers.get("content-type", "").startswith("application/json"):
        return _error("send JSON", 415)
    if not _same_origin(request):
        return _error("cross-origin request refused", 403)
    body = await _read_body(request)
    if body is None:
        return _error(f"the request body is over {MAX_BODY_BYTES // 1024} KiB", 413)
    try:
        form = valid_data(json.loads(body))
    except (ValueError, RecursionError):
        return _error("the body is not valid JSON", 400)
    if not isinstance(form, dict):
        return _error("the body must be a JSON object", 400)
    from sleuth.pipeline.context import check_run, clean_question

    unknown = sorted(set(form) - {"question", *FORM_FIELDS})
    if unknown:
        return _error(
            f"unknown field {unknown[0]!r} (the fields are: question, {', '.join(FORM_FIELDS)})",
            400,
        )
    try:
        question = clean_question(form.get("question", ""))
        settings = run_settings(state.settings, form)
        # Everything the run would check before starting is checked now: a bad choice is
        # this request's 400, not a run that fails later in the event stream.
        await check_run(question, settings)
    except ConfigError as exc:
        return _error(str(exc), 400)
    # A bad request is told what is wrong with it first; a good one, that it must wait.
    if state.running() is not None:
        return _error("a research is already running; wait for it or stop it", 409)
    run = LiveRun(id=secrets.token_hex(6), question=question, settings=settings)
    state.keep(run)
    run.task = asyncio.create_task(_execute(run))
    return JSONResponse({"id": run.id, "events": f"/api/runs/{run.id}/events"}, status_code=201)


def _sse(index: int, name: str, data: dict[str, Any]) -> str:
    payload = valid_text(json.dumps(valid_data(data), ensure_ascii=False, default=str))
    return f"id: {index}\nevent: {name}\ndata: {payload}\n\n"


async def _follow(run: LiveRun, start: int) -> AsyncIterator[str]:
    index = start
    yield "retry: 1000\n\n"
    while True:
        while index < len(run.events):
            name, data = run.events[index]
            index += 1
            yield _sse(index, name, data)
        if run.done:
            return
        try:
            await asyncio.wait_for(run.changed.wait(), KEEPALIVE_S)
        except TimeoutError:
            yield ": keep-alive\n\n"


def _announce(run: LiveRun) -> dict[str, Any]:
    return {"id": run.id, "question": run.question, "events": f"/api/runs/{run.id}/events"}


async def _runs_as_they_start(state: WebState) -> AsyncIterator[str]:
    """The running run at once (if any), then each run as it starts (even one that is
    over by the time this stream hears of it: a page shows its report)."""
    yield "retry: 1000\n\n"
    running = state.running()
    told = {run_id for run_id, run in state.runs.items() if run is not running}
    while True:
        started = state.started
        for run in [r for r in state.runs.values() if r.id not in told]:
            told.add(run.id)
            yield _sse(len(told), "run", _announce(run))
        try:
            await asyncio.wait_for(started.wait(), KEEPALIVE_S)
        except TimeoutError:
            yield ": keep-alive\n\n"


async def live_runs(request: Request) -> Response:
    state: WebState = request.app.state.web
    return StreamingResponse(
        _runs_as_they_start(state),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _get_run(request: Request) -> LiveRun | None:
    state: WebState = request.app.state.web
    return state.runs.get(request.path_params["run_id"])


async def run_events(request: Request) -> Response:
    run = _get_run(request)
    if run is None:
        return _error("no such run", 404)
    try:
        start = max(0, int(request.headers.get("last-event-id", "0")))
    except ValueError:
        start = 0
    return StreamingResponse(
        _follow(run, start),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def stop_run(request: Request) -> Response:
    run = _get_run(request)
    if run is None:
        return _error("no such run", 404)
    if not _same_origin(request):
        return _error("cross-origin request refused", 403)
    if run.task is not None and not run.done:
        run.task.cancel()
    return JSONResponse({"stopped": True})


async def run_report(request: Request) -> Response:
    run = _get_run(request)
    fmt = request.path_params["fmt"]
    if run is None or run.report is None or fmt not in ("html", "md"):
        return _error("no report for that run (yet)", 404)
    if fmt == "md":
        return PlainTextResponse(
            valid_text(run.report.markdown), media_type="text/markdown; charset=utf-8"
        )
    # The document's own <meta> CSP, as a header too: it then holds from the first byte.
    return HTMLResponse(
        valid_text(render_html(run.report)),
        headers={"Content-Security-Policy": REPORT_CSP, "Referrer-Policy": "no-referrer"},
    )


async def config(request: Request) -> Response:
    from sleuth.search import provider_names

    settings: Settings = request.app.state.web.settings
    search = ",".join(settings.search)
    providers = provider_names()
    if search not in providers:
        providers = [search, *providers]
    return JSONResponse(
        {
            "depth": settings.depth,
            "max_sources": settings.max_sources,
            "search": search,
            "mode": settings.mode,
            "deep_max_sources": DEEP_DEFAULTS["max_sources"],
            "providers": providers,
            "model": settings.model or "",
            "no_llm": settings.no_llm,
            "store": not settings.no_store,
        }
    )


async def page(request: Request) -> Response:
    nonce = secrets.token_urlsafe(16)
    csp = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
        "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    )
    return HTMLResponse(
        render_page(nonce),
        headers={
            "Content-Security-Policy": csp,
            "Referrer-Policy": "no-referrer",
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store",
        },
    )


class _NoSniff:
    """ASGI middleware: ``X-Content-Type-Options: nosniff`` on every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).setdefault("X-Content-Type-Options", "nosniff")
            await send(message)

        await self.app(scope, receive, send_with_header)


def create_app(settings: Settings, *, allowed_hosts: list[str] | None = None) -> Starlette:
    """The ASGI app; ``allowed_hosts`` are the Host names it answers (default: loopback)."""
    routes = [
        Route("/", page),
        Route("/api/config", config),
        Route("/api/runs", start_run, methods=["POST"]),
        Route("/api/live", live_runs),
        Route("/api/runs/{run_id}/events", run_events),
        Route("/api/runs/{run_id}/stop", stop_run, methods=["POST"]),
        Route("/api/runs/{run_id}/report.{fmt:str}", run_report),
        Route("/api/history", history),
        Route("/api/history/{run_id}", history_run),
    ]
    hosts = LOOPBACK_HOSTS if allowed_hosts is None else allowed_hosts
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(_NoSniff),  # outermost: the 400s get it too
            Middleware(TrustedHostMiddleware, allowed_hosts=hosts),
        ],
    )
    app.state.web = WebState(settings)
    return app
