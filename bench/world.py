"""The benchmark world: real pages, a search engine and a model on loopback, with latencies.

Like the tests' :class:`~sleuth.testing.OfflineWeb` (and built from its parts: the BM25
index and SearXNG payload of ``sleuth.testing._search``, the ``ScriptedLLM`` endpoint and
``ScriptedResearcher``'s replies), but slow the way the internet is (see
:mod:`bench.latency`), bigger, and logging when every request started and ended on the
server side, which is what the critical path is computed from.

Pages:

* every paragraph of ``../shared/data/hotpotqa/hotpotqa_train_corpus.json`` (994) as a
  small encyclopedia page;
* the tests' corpus of real saved articles (``tests/data/corpus``, 42 pages);
* the other articles of the Article Extraction Benchmark (``../shared/data/aeb``);
* the heavy real pages of :mod:`bench.pages` at their real sizes: WCXB dev (1,497),
  Mozilla Readability's test pages (120 of 130) and Postlight's fixtures (165 of 170):
  those the corpus serves are not served twice.

Each page is on the host of its real site (:mod:`bench.hosts`: the encyclopedia on one
host, news articles on their papers' hosts, …), one loopback address per site, so
sleuth's per-host rules bind as they do on the web; ``--hosts page`` puts every page on
an address of its own instead (``127.K.x.y``, K the set's number in :data:`KINDS`), the
world of the figures before 2026-11-28.

``--kinds`` serves only some of these sets, ``--also KIND:KEY`` adds one page of a set
that is not served and ``--drop KIND:KEY`` leaves pages out (the relevance benchmark's
world, :mod:`bench.relevance`).

The main host ``127.0.0.1`` serves SearXNG's ``/search``, the model under ``/v1``, and the
control endpoints ``/_bench/log`` (GET; ``?clear=1`` empties it), ``/_bench/pages``,
``/_bench/body?url=`` (a page's bytes, at once) and ``/_bench/scale`` (POST ``?value=``).

It runs in its own process (``python -m bench.world``, which prints one JSON line with
its addresses once it listens), so its CPU never competes with sleuth's for the GIL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

import uvicorn
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from bench.catalog import (
    KINDS,
    REPO,
    PageEntry,
    address_of_page,
    data_dir,
    load_pages,
    slug,
)
from bench.hosts import HOST_MODES, address, assign_sites, by_site
from bench.latency import Latency, tokens
from sleuth.testing._chat_wire import stream_reply
from sleuth.testing._search import IndexEntry, SearchIndex, searxng_payload
from sleuth.testing.llm import ScriptedLLM, _completion
from sleuth.testing.researcher import MARKERS, PROMPTS, ScriptedResearcher, section

__all__ = ["KINDS", "MODEL", "REPO", "PageEntry", "World", "data_dir"]

MODEL = "bench-model"
_HOLD_LIMIT = 600.0


@dataclass
class _State:
    latency: Latency
    log: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.log.append(entry)


async def _hold(seconds: float | None, receive: Receive) -> bool:
    """Wait ``seconds`` (None: until the client leaves); True if the client left first."""

    async def left() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(left())
    try:
        await asyncio.wait_for(asyncio.shield(watcher), _HOLD_LIMIT if seconds is None else seconds)
        return True
    except TimeoutError:
        return False
    finally:
        watcher.cancel()


class _Timed(Response):
    """A model reply held for time-to-first-token + tokens / throughput, then logged."""

    def __init__(self, body: dict[str, Any], state: _State, entry: dict[str, Any]) -> None:
        super().__init__(json.dumps(body), media_type="application/json")
        self.state = state
        self.entry = entry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        seconds = self.state.latency.llm(self.entry["completion_tokens"])
        left = await _hold(seconds, receive)
        if not left:
            await super().__call__(scope, receive, send)
        self.state.record({**self.entry, "end": time.time(), "left": left})


class World:
    """The pages, the search index and the model; :meth:`app` is the ASGI app."""

    def __init__(
        self,
        latency: Latency,
        data: Path | None = None,
        kinds: tuple[str, ...] = tuple(KINDS),
        drop: frozenset[str] = frozenset(),
        hosts: str = "site",
        also: frozenset[str] = frozenset(),
    ) -> None:
        if hosts not in HOST_MODES:
            raise ValueError(f"hosts must be one of {HOST_MODES}, not {hosts!r}")
        self.state = _State(latency)
        self.pages = load_pages(data or data_dir(), kinds, drop, also)
        assign_sites(self.pages)
        self.hosts = hosts
        self.by_url: dict[str, PageEntry] = {}
        #: (address, port) -> that host's pages by their percent-decoded path
        self.sites: dict[tuple[str, int], dict[str, PageEntry]] = {}
        self.main: tuple[str, int] = ("", 0)
        self.llm = ScriptedLLM(models=[MODEL])
        # plant: every deep-report section carries a fabricated citation and URL, which the
        # timing part checks are gone from the report.
        self.researcher = ScriptedResearcher(plant=True)
        for name in PROMPTS:
            self.llm.add(
                self._timed(name, getattr(self.researcher, name)),
                contains=MARKERS[name],
                times=None,
            )
        self.index: SearchIndex | None = None
        self.sockets: list[socket.socket] = []

    # -- the model -------------------------------------------------------------------------
    def _timed(
        self, stage: str, reply: Callable[[dict[str, Any]], str]
    ) -> Callable[[dict[str, Any]], Response]:
        def answer(body: dict[str, Any]) -> Response:
            start = time.time()
            text = reply(body)
            messages = body.get("messages") or []
            prompt = sum(tokens(str(m.get("content", ""))) + 4 for m in messages)
            completion = tokens(text)
            user = next(
                (str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"),
                "",
            )
            about = ""
            if stage in ("summarize", "merge"):
                found = re.search(r"^URL: (\S+)", section(user, "PAGE") or user, re.MULTILINE)
                about = found.group(1) if found else ""
            elif stage == "select":
                about = section(user, "QUERIES")  # one query per line
            elif stage == "learn":  # deep mode: the branch's question
                about = section(user, "SUBQUESTION")
            elif stage == "section":
                about = section(user, "SECTION").split("\n", 1)[0]
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
            entry = {
                "kind": "llm",
                "stage": stage,
                "key": about,
                "start": start,
                "prompt_tokens": prompt,
                "completion_tokens": completion,
            }
            if body.get("stream"):  # as a real model streams: first token, then its rate
                return self._streamed(text, body, usage, entry)
            return _Timed(
                _completion(text, str(body.get("model") or MODEL), "stop", usage), self.state, entry
            )

        return answer

    def _streamed(
        self, text: str, body: dict[str, Any], usage: dict[str, int], entry: dict[str, Any]
    ) -> Response:
        """The reply as Server-Sent Events: the first words after the time to first token,
        the rest at the model's rate; logged with when its first words were sent."""
        latency = self.state.latency
        options = body.get("stream_options") or {}
        include = isinstance(options, dict) and bool(options.get("include_usage"))

        def first() -> None:
            entry["first_token"] = time.time()

        response = stream_reply(
            text,
            str(body.get("model") or MODEL),
            "stop",
            usage if include else None,
            first_token=latency.scale * latency.ttft,
            tokens_per_s=latency.tokens_per_s / max(latency.scale, 1e-9),
            on_first=first,
        )
        chunks = response.body_iterator

        async def logged() -> Any:
            try:
                async for chunk in chunks:
                    yield chunk
            finally:
                self.state.record({**entry, "end": time.time(), "streamed": True})

        response.body_iterator = logged()
        return response

    # -- serving ---------------------------------------------------------------------------
    def bind(self) -> None:
        """A listening socket per host (and the main host), each on a random port: per
        site (``hosts="site"``) or per page (``"page"``)."""
        self.main = self._listen("127.0.0.1")
        if self.hosts == "site":
            for n, (_, pages) in enumerate(by_site(self.pages)):
                self._serve(address(n), pages)  # type: ignore[arg-type]
        else:
            counts: dict[str, int] = {}
            for page in self.pages:
                n = counts[page.kind] = counts.get(page.kind, -1) + 1
                self._serve(address_of_page(page.kind, n), [page])
        self.index = SearchIndex([IndexEntry(p.url, p.title, p.text) for p in self.pages])

    def _serve(self, host: str, pages: list[PageEntry]) -> None:
        """One listening socket on ``host`` for ``pages``; each gets its URL there (a
        path the host already serves gets a suffix naming the page)."""
        key = self._listen(host)
        routes = self.sites[key] = {}
        for page in pages:
            if unquote(page.path) in routes:
                page.path = f"{page.path.rstrip('/')}/~{slug(page.kind + '-' + page.key)}"
            routes[unquote(page.path)] = page
            page.url = f"http://{key[0]}:{key[1]}{page.path}"
            self.by_url[page.url] = page

    def _listen(self, address: str) -> tuple[str, int]:
        # IPPROTO_TCP: see OfflineWeb._listen (TCP_NODELAY on accepted sockets).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind((address, 0))
        sock.listen(128)
        sock.setblocking(False)
        self.sockets.append(sock)
        host, port = sock.getsockname()[:2]
        return str(host), int(port)

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point: route by the local address the client dialled."""
        if scope["type"] != "http":
            return
        server = scope.get("server") or ("", 0)
        key = (str(server[0]), int(server[1] or 0))
        path = str(scope.get("path", ""))
        if key == self.main:
            if path.startswith("/v1"):
                await self.llm.root_app(scope, receive, send)
                return
            response = await self._main(scope, receive, path)
        # ASGI's path is percent-decoded; page paths are stored as they appear in URLs
        # (a title like "Alû" is /wiki/Al%C3%BB), so compare decoded with decoded.
        elif (page := self.sites.get(key, {}).get(path)) is not None:
            await self._page(page, scope, receive, send)
            return
        else:
            response = Response("<h1>404 Not Found</h1>", status_code=404)
        await response(scope, receive, send)

    async def _page(self, page: PageEntry, scope: Scope, receive: Receive, send: Send) -> None:
        start = time.time()
        seconds = self.state.latency.page(page.latency_key)
        left = await _hold(seconds, receive)
        if not left:
            await Response(page.body(), media_type=page.content_type)(scope, receive, send)
        self.state.record(
            {
                "kind": "page",
                "key": page.url,
                "start": start,
                "end": time.time(),
                "left": left,
                "hang": seconds is None,
            }
        )

    async def _main(self, scope: Scope, receive: Receive, path: str) -> Response:
        params = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if path == "/search":
            start = time.time()
            query = params.get("q", "").strip()
            assert self.index is not None
            payload = searxng_payload(self.index, query, max(1, int(params.get("pageno", 1))), 20)
            left = await _hold(self.state.latency.search(query), receive)
            self.state.record(
                {
                    "kind": "search",
                    "key": query,
                    "start": start,
                    "end": time.time(),
                    "left": left,
                    "urls": [hit["url"] for hit in payload["results"]],
                }
            )
            return JSONResponse(payload)
        if path == "/_bench/log":
            with self.state.lock:
                log = list(self.state.log)
                if params.get("clear"):
                    self.state.log.clear()
            return JSONResponse(log)
        if path == "/_bench/pages":
            return JSONResponse(
                [
                    {
                        "url": p.url,
                        "kind": p.kind,
                        "key": p.key,
                        "title": p.title,
                        "size": p.size,
                        "site": p.site,
                    }
                    for p in self.pages
                ]
            )
        if path == "/_bench/body":  # for timing extraction outside a run: no latency
            page = self.by_url.get(params.get("url", ""))
            if page is None:
                return Response("no such page", status_code=404)
            return Response(page.body(), media_type=page.content_type)
        if path == "/_bench/scale":
            self.state.latency = replace(self.state.latency, scale=float(params["value"]))
            return JSONResponse({"scale": self.state.latency.scale})
        return Response("<h1>404 Not Found</h1>", status_code=404)


def main(argv: list[str] | None = None) -> int:
    """Serve the world until stdin closes: ``python -m bench.world [--seed N] [--scale X]``."""
    parser = argparse.ArgumentParser(prog="python -m bench.world", description=__doc__)
    parser.add_argument("--seed", type=int, default=Latency.seed)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--ttft", type=float, default=Latency.ttft)
    parser.add_argument("--tokens-per-s", type=float, default=Latency.tokens_per_s)
    parser.add_argument(
        "--kinds",
        default=",".join(KINDS),
        help=f"the page sets to serve, comma-separated (of {', '.join(KINDS)})",
    )
    parser.add_argument(
        "--drop",
        action="append",
        default=[],
        metavar="KIND:KEY",
        help="leave this page out (repeatable)",
    )
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="KIND:KEY",
        help="serve this page too, though its set is not in --kinds (repeatable)",
    )
    parser.add_argument(
        "--hosts",
        choices=HOST_MODES,
        default="site",
        help="site: each page on its real site's host (default); page: each on its own",
    )
    args = parser.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    if unknown := [k for k in kinds if k not in KINDS]:
        parser.error(f"unknown kinds: {', '.join(unknown)}")
    world = World(
        Latency(seed=args.seed, scale=args.scale, ttft=args.ttft, tokens_per_s=args.tokens_per_s),
        kinds=kinds,
        drop=frozenset(args.drop),
        hosts=args.hosts,
        also=frozenset(args.also),
    )
    world.bind()
    config = uvicorn.Config(
        world.app,
        lifespan="off",
        log_config=None,
        log_level="warning",
        access_log=False,
        http="h11",
        ws="none",
        loop="asyncio",
        interface="asgi3",
        timeout_keep_alive=30,
        backlog=256,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=world.sockets)), daemon=True
    )
    thread.start()
    while not server.started:
        if not thread.is_alive():
            return 1
        time.sleep(0.01)
    base = f"http://{world.main[0]}:{world.main[1]}"
    print(
        json.dumps(
            {"base_url": base, "llm_url": base + "/v1", "model": MODEL, "pages": len(world.pages)}
        ),
        flush=True,
    )
    sys.stdin.read()  # the runner closes our stdin to stop us
    server.should_exit = True
    thread.join(5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
