"""The one ASGI app behind every address of the offline web.

Each fake site listens on its own socket; the app tells them apart by the local
address a request came in on (``scope["server"]``), not by the Host header, so
a client that sends any Host still reaches the site whose address it dialled.
"""

from __future__ import annotations

import asyncio
import html
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from sleuth.testing._corpus import Corpus, DocEntry, HostileEntry
from sleuth.testing._hostile import HostileResponder
from sleuth.testing._responses import EscapedJSONResponse
from sleuth.testing._search import SearchIndex, searxng_payload

__all__ = ["OfflineApp", "RequestRecord", "WebState"]

HTML = "text/html; charset=utf-8"
#: Paths on the main host that are not logged (the log's own endpoint).
_UNLOGGED_PREFIX = "/_offline/"


@dataclass(frozen=True)
class RequestRecord:
    """One request the offline web received.

    ``host`` is the ``ip:port`` the client connected to (the netloc of the URL it
    asked for), ``path`` the decoded path, ``query`` the raw query string and
    ``time`` the ``time.time()`` at which the request arrived.
    """

    method: str
    host: str
    path: str
    query: str
    time: float


@dataclass
class WebState:
    """What tests may change while the web runs, plus the request log."""

    latency: float = 0.0
    search_failures: int = 0
    results_per_page: int = 20
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    log: list[RequestRecord] = field(default_factory=list)

    def record(self, entry: RequestRecord) -> None:
        """Append ``entry`` to the request log."""
        with self.lock:
            self.log.append(entry)

    def take_failure(self) -> bool:
        """Consume one pending search failure; ``True`` if this search must fail."""
        with self.lock:
            if self.search_failures > 0:
                self.search_failures -= 1
                return True
            return False


#: None: the main host; a dict: one site serving several corpus pages, by path.
Site = DocEntry | HostileEntry | dict[str, DocEntry] | None


class OfflineApp:
    """Routes each request to the main host, a corpus page or a hostile case."""

    def __init__(
        self,
        corpus: Corpus,
        index: SearchIndex,
        state: WebState,
        sites: dict[tuple[str, int], Site],
        home_links: list[tuple[str, str]],
    ) -> None:
        self.corpus = corpus
        self.index = index
        self.state = state
        self.sites = sites
        self.home_links = home_links
        self.hostile = HostileResponder(corpus, state.stopping)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point: log the request, then answer it."""
        if scope["type"] != "http":
            return
        server = scope.get("server") or ("", 0)
        key = (str(server[0]), int(server[1] or 0))
        path: str = scope["path"]
        if not path.startswith(_UNLOGGED_PREFIX):
            self.state.record(
                RequestRecord(
                    method=scope["method"],
                    host=f"{key[0]}:{key[1]}",
                    path=path,
                    query=scope.get("query_string", b"").decode("latin-1"),
                    time=time.time(),
                )
            )
        response = await self._route(key, scope, receive, path)
        await response(scope, receive, send)

    async def _route(
        self, key: tuple[str, int], scope: Scope, receive: Receive, path: str
    ) -> Response:
        if key not in self.sites:
            return _not_found()
        site = self.sites[key]
        if site is None:
            return await self._main(scope, receive, path)
        if isinstance(site, dict):
            site = site.get(path)
            if site is None:
                return _not_found()
        if isinstance(site, DocEntry):
            if path != site.path:
                return _not_found()
            await self._latency()
            return Response(self.corpus.body(site.file), media_type=site.content_type)
        if path not in self.hostile.paths(site):
            return _not_found()
        await self._latency()  # hostile sites are page hosts too: as slow as the rest
        return self.hostile.respond(site, path)

    async def _latency(self) -> None:
        if self.state.latency > 0:
            await asyncio.sleep(self.state.latency)

    async def _main(self, scope: Scope, receive: Receive, path: str) -> Response:
        if path == "/search":
            return await self._search(Request(scope, receive))
        if path == "/":
            return Response(self._home(), media_type=HTML)
        if path == "/_offline/requests":
            with self.state.lock:
                records = [vars(record) for record in self.state.log]
            return JSONResponse(records)
        return _not_found()

    async def _search(self, request: Request) -> Response:
        """SearXNG's ``/search`` (GET, or POST with a form): JSON only, 403 for other formats."""
        if request.method not in ("GET", "HEAD", "POST"):
            return Response("Method Not Allowed", status_code=405)
        params = dict(request.query_params)
        if request.method == "POST":
            params.update(parse_qsl((await request.body()).decode("utf-8", "replace")))
        if self.state.take_failure():
            return Response("<h1>Internal Server Error</h1>", status_code=500, media_type=HTML)
        if params.get("format") != "json":
            return Response("<h1>403 Forbidden</h1>", status_code=403, media_type=HTML)
        query = params.get("q", "").strip()
        if not query:
            return JSONResponse({"error": "search query is empty"}, status_code=400)
        try:
            pageno = max(1, int(params.get("pageno", "1")))
        except ValueError:
            return JSONResponse({"error": "invalid pageno"}, status_code=400)
        payload: dict[str, Any] = searxng_payload(
            self.index, query, pageno, self.state.results_per_page
        )
        return EscapedJSONResponse(payload)  # a hostile result's lone surrogate goes out too

    def _home(self) -> str:
        items = "\n".join(
            f'<li><a href="{html.escape(url)}">{html.escape(title)}</a></li>'
            for url, title in self.home_links
        )
        return (
            "<!DOCTYPE html><html><head><title>Offline web</title></head><body>"
            f"<h1>Offline web</h1><ul>\n{items}\n</ul></body></html>"
        )


def _not_found() -> Response:
    return Response("<h1>404 Not Found</h1>", status_code=404, media_type=HTML)
