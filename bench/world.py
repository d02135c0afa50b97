"""The benchmark world: real pages, a search engine and a model on loopback, with latencies.

Like the tests' :class:`~sleuth.testing.OfflineWeb` (and built from its parts: the BM25
index and SearXNG payload of ``sleuth.testing._search``, the ``ScriptedLLM`` endpoint and
``ScriptedResearcher``'s replies), but slow the way the internet is (see
:mod:`bench.latency`), bigger, and logging when every request started and ended on the
server side, which is what the critical path is computed from.

Pages, each on its own loopback address (an IP host is its own site):

* every paragraph of ``../shared/data/hotpotqa/hotpotqa_train_corpus.json`` (994) as a
  small encyclopedia page, on ``127.1.x.y``;
* the tests' corpus of real saved articles (``tests/data/corpus``, 42 pages), on ``127.2.0.n``;
* the other articles of the Article Extraction Benchmark (``../shared/data/aeb``), on
  ``127.3.0.n``;
* the heavy real pages of :mod:`bench.pages` at their real sizes: WCXB dev (1,497, on
  ``127.4.x.y``), Mozilla Readability's test pages (120 of 130, ``127.5.0.n``) and
  Postlight's fixtures (165 of 170, ``127.6.0.n``): those the corpus serves are not
  served twice.

``--kinds`` serves only some of these sets and ``--drop KIND:KEY`` leaves pages out
(the relevance benchmark's world, :mod:`bench.relevance`).

The main host ``127.0.0.1`` serves SearXNG's ``/search``, the model under ``/v1``, and the
control endpoints ``/_bench/log`` (GET; ``?clear=1`` empties it), ``/_bench/pages``,
``/_bench/body?url=`` (a page's bytes, at once) and ``/_bench/scale`` (POST ``?value=``).

It runs in its own process (``python -m bench.world``, which prints one JSON line with
its addresses once it listens), so its CPU never competes with sleuth's for the GIL.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import html
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import uvicorn
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from bench.latency import Latency, tokens
from bench.pages import read_body, real_pages
from sleuth.testing._corpus import Corpus
from sleuth.testing._search import IndexEntry, SearchIndex, searxng_payload
from sleuth.testing.llm import ScriptedLLM, _completion
from sleuth.testing.researcher import MARKERS, PROMPTS, ScriptedResearcher, section

__all__ = ["KINDS", "MODEL", "PageEntry", "World", "data_dir"]

MODEL = "bench-model"
REPO = Path(__file__).resolve().parents[1]
_HOLD_LIMIT = 600.0
#: Every set of pages the world can serve, and the second octet of their addresses.
KINDS = {"hotpotqa": 1, "corpus": 2, "aeb": 3, "wcxb": 4, "readability": 5, "postlight": 6}


def data_dir() -> Path:
    """``../shared/data`` beside the checkout (or ``$SLEUTH_BENCH_DATA``)."""
    return Path(os.environ.get("SLEUTH_BENCH_DATA", REPO.parent / "shared" / "data"))


@dataclass
class PageEntry:
    """One page of the world: where it lives, what it is, and its bytes."""

    kind: str  # one of KINDS
    key: str  # HotpotQA title, corpus doc id, AEB id, WCXB id, test-page or fixture name
    title: str
    text: str
    path: str
    body: Callable[[], bytes]
    content_type: str = "text/html; charset=utf-8"
    url: str = ""
    size: int = 0  # bytes of the body (0: not measured)
    #: What the page's latency is seeded with: its path, or for the heavy sets (whose
    #: paths repeat, "/" above all) kind, key and path.
    latency_key: str = ""

    def __post_init__(self) -> None:
        self.latency_key = self.latency_key or self.path


def _slug(title: str) -> str:
    return quote(title.replace(" ", "_"), safe="_()-.,'")


def _wiki_page(title: str, sentences: list[str]) -> bytes:
    """A HotpotQA paragraph as an encyclopedia page, with the chrome real ones have."""
    esc = html.escape
    text = esc("".join(sentences).strip())
    nav = "".join(
        f'<li><a href="/wiki/{p}">{p.replace("_", " ")}</a></li>'
        for p in (
            "Main_Page",
            "Contents",
            "Current_events",
            "Random_article",
            "About",
            "Contact_us",
            "Donate",
            "Help",
        )
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)} - Wikipedia</title></head><body>"
        f'<header><nav><ul>{nav}</ul></nav><form><input name="search" '
        f'placeholder="Search Wikipedia"></form></header>'
        f"<main><article><h1>{esc(title)}</h1>"
        f'<p class="tagline">From Wikipedia, the free encyclopedia</p>'
        f"<p>{text}</p></article></main>"
        f"<footer><p>Text is available under the Creative Commons Attribution-ShareAlike "
        f'License; additional terms may apply.</p><ul><li><a href="/privacy">Privacy '
        f'policy</a></li><li><a href="/about">About Wikipedia</a></li><li><a '
        f'href="/disclaimers">Disclaimers</a></li></ul></footer></body></html>'
    ).encode()


def _gunzip(file: Path) -> bytes:
    return gzip.decompress(file.read_bytes())


def _load_pages(
    data: Path, kinds: tuple[str, ...] = tuple(KINDS), drop: frozenset[str] = frozenset()
) -> list[PageEntry]:
    """The pages of ``kinds``, without those named ``kind:key`` in ``drop``."""
    pages = _light_pages(data)
    heavy = tuple(k for k in kinds if k in ("wcxb", "readability", "postlight"))
    served = _corpus_sources()
    pages += [
        PageEntry(
            p.kind,
            p.key,
            p.title,
            p.text,
            p.path,
            partial(read_body, p.file),
            size=p.size,
            latency_key=f"/{p.kind}/{p.key}{p.path}",
        )
        for p in real_pages(data, heavy)
        if f"{p.kind}:{p.key}" not in served
    ]
    return [p for p in pages if p.kind in kinds and f"{p.kind}:{p.key}" not in drop]


def _corpus_sources() -> set[str]:
    """``kind:key`` of the Readability and Postlight pages the corpus already serves."""
    served = set()
    for doc in Corpus.load(REPO / "tests" / "data" / "corpus").docs:
        kind, _, file = doc.source.partition(":")
        if kind == "readability" and file.endswith("/source.html"):
            served.add(f"readability:{file.rsplit('/', 2)[-2]}")
        elif kind == "postlight":
            served.add(f"postlight:{file.rsplit('/', 1)[-1].removesuffix('.html')}")
    return served


def _light_pages(data: Path) -> list[PageEntry]:
    pages: list[PageEntry] = []
    corpus_file = data / "hotpotqa" / "hotpotqa_train_corpus.json"
    if corpus_file.is_file():
        paragraphs: dict[str, list[str]] = json.loads(corpus_file.read_text(encoding="utf-8"))
        for title, sentences in paragraphs.items():
            pages.append(
                PageEntry(
                    "hotpotqa",
                    title,
                    title,
                    "".join(sentences).strip(),
                    f"/wiki/{_slug(title)}",
                    body=partial(_wiki_page, title, sentences),
                    size=len(_wiki_page(title, sentences)),
                )
            )
    corpus = Corpus.load(REPO / "tests" / "data" / "corpus")
    seen_urls: set[str] = set()
    for doc in corpus.docs:
        if doc.original_url:
            seen_urls.add(doc.original_url.split("?")[0].rstrip("/"))
        pages.append(
            PageEntry(
                "corpus",
                doc.id,
                doc.title,
                doc.text,
                doc.path,
                body=partial(corpus.body, doc.file),
                content_type=doc.content_type,
                size=len(corpus.body(doc.file)),
            )
        )
    aeb = data / "aeb"
    if (aeb / "ground-truth.json").is_file():
        truth: dict[str, dict[str, str]] = json.loads(
            (aeb / "ground-truth.json").read_text(encoding="utf-8")
        )
        for page_id, entry in sorted(truth.items()):
            url = str(entry.get("url", "")).split("?")[0].rstrip("/")
            file = aeb / "html" / f"{page_id}.html.gz"
            if (
                not url
                or any(url.startswith(s) or s.startswith(url) for s in seen_urls)
                or not file.is_file()
            ):
                continue  # already served as a corpus page
            raw = gzip.decompress(file.read_bytes())
            found = re.search(rb"<title[^>]*>(.*?)</title>", raw, re.DOTALL | re.IGNORECASE)
            title = (
                html.unescape(found.group(1).decode("utf-8", "replace")).strip() if found else ""
            ) or page_id[:12]
            path = urlsplit(str(entry.get("url", ""))).path or f"/{page_id}"
            pages.append(
                PageEntry(
                    "aeb",
                    page_id,
                    " ".join(title.split())[:200],
                    str(entry.get("articleBody", "")),
                    path,
                    body=partial(_gunzip, file),
                    size=len(raw),
                )
            )
    return pages


def _address(kind: str, index: int) -> str:
    return f"127.{KINDS[kind]}.{index // 250}.{index % 250 + 1}"


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
    ) -> None:
        self.state = _State(latency)
        self.pages = _load_pages(data or data_dir(), kinds, drop)
        self.by_url: dict[str, PageEntry] = {}
        self.sites: dict[tuple[str, int], PageEntry] = {}
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
            return _Timed(
                _completion(text, str(body.get("model") or MODEL), "stop", usage), self.state, entry
            )

        return answer

    # -- serving ---------------------------------------------------------------------------
    def bind(self) -> None:
        """A listening socket per page (and the main host), each on a random port."""
        self.main = self._listen("127.0.0.1")
        counts: dict[str, int] = {}
        entries: list[IndexEntry] = []
        for page in self.pages:
            n = counts[page.kind] = counts.get(page.kind, -1) + 1
            key = self._listen(_address(page.kind, n))
            self.sites[key] = page
            page.url = f"http://{key[0]}:{key[1]}{page.path}"
            self.by_url[page.url] = page
            entries.append(IndexEntry(page.url, page.title, page.text))
        self.index = SearchIndex(entries)

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
        elif key in self.sites and unquote(self.sites[key].path) == path:
            await self._page(self.sites[key], scope, receive, send)
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
                    {"url": p.url, "kind": p.kind, "key": p.key, "title": p.title, "size": p.size}
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
    args = parser.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    if unknown := [k for k in kinds if k not in KINDS]:
        parser.error(f"unknown kinds: {', '.join(unknown)}")
    world = World(
        Latency(seed=args.seed, scale=args.scale, ttft=args.ttft, tokens_per_s=args.tokens_per_s),
        kinds=kinds,
        drop=frozenset(args.drop),
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
