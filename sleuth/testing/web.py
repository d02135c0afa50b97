"""``OfflineWeb``: a small, real HTTP world on loopback for tests and benchmarks.

One Starlette app is served by one uvicorn ``Server`` in a daemon thread, on
many listening sockets at once: the main host (SearXNG-compatible ``/search``,
the request log) on ``127.0.0.1``, each corpus document on its own address
``127.0.1.N`` and each hostile case on ``127.0.2.N``, every one with a random
port. An IP host is its own domain, so per-domain logic sees distinct sites.

The main host also serves an OpenAI-compatible API under ``/v1`` (``web.llm_url``):
``web.llm``, a :class:`~sleuth.testing.llm.ScriptedLLM` whose replies each test
scripts. A test may swap in a fresh one (``web.llm = ScriptedLLM()``); requests go
to whichever is there when they arrive, and are logged by it, not by the web.

    with OfflineWeb() as web:
        httpx.get(web.url("/search"), params={"q": "hong kong", "format": "json"})
        web.llm.add('["query one"]', contains="web search queries")
        sleuth.research_sync(..., base_url=web.llm_url, model="scripted-model")
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import socket
import sys
import threading
import time
import warnings
from collections.abc import Collection
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from starlette.types import Receive, Scope, Send

from sleuth.testing._app import OfflineApp, RequestRecord, Site, WebState
from sleuth.testing._corpus import Corpus, Doc, Topic, default_corpus_dir
from sleuth.testing._search import IndexEntry, SearchIndex
from sleuth.testing.llm import ScriptedLLM

__all__ = ["COSTLY", "FLOODS", "Doc", "OfflineWeb", "RequestRecord", "Topic"]

_MAIN_ADDRESS = "127.0.0.1"
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 10.0

#: The hostile cases whose markup is built to be costly to extract (floods of elements).
FLOODS = frozenset({"div_flood", "br_flood", "paragraph_flood"})
#: The hostile cases a research pays for in time: the floods' extraction, and the slow
#: drip, which holds a research on its topic until the page deadline.
COSTLY = FLOODS | {"slow_drip"}


def _doc_address(index: int) -> str:
    return f"127.0.1.{index + 1}"


def _hostile_address(index: int) -> str:
    return f"127.0.2.{index + 1}"


class OfflineWeb:
    """A loopback web of real saved pages, hostile pages and a SearXNG-like search.

    Use it as a context manager; it starts in well under a second and stops
    within about half a second, ending slow and endless responses. Attributes
    are filled in on ``__enter__``. ``latency`` (seconds added to every corpus
    and hostile page response) and ``search_failures`` (the next N searches answer 500) can
    be changed while the web runs. ``one_site=True`` serves every corpus page from one
    address (``127.0.1.1``), each at its own path: a site with many pages.
    ``unlisted`` names hostile cases that search leaves out (:data:`COSTLY`, say); they
    are still served at their ``hostile`` URLs.
    """

    base_url: str
    searxng_url: str
    page_urls: list[str]
    docs: list[Doc]
    hostile: dict[str, str]
    topics: list[Topic]

    def __init__(
        self,
        corpus_dir: Path | None = None,
        *,
        latency: float = 0.0,
        llm: ScriptedLLM | None = None,
        one_site: bool = False,
        unlisted: Collection[str] = (),
    ) -> None:
        root = corpus_dir if corpus_dir is not None else default_corpus_dir()
        if root is None:
            raise FileNotFoundError(
                "no corpus: pass corpus_dir or run from a checkout with tests/data/corpus"
            )
        self.corpus = Corpus.load(Path(root))
        self._state = WebState(latency=latency)
        self.llm = llm if llm is not None else ScriptedLLM()
        self.base_url = self.searxng_url = ""
        self.page_urls, self.docs, self.hostile = [], [], {}
        self.topics = list(self.corpus.topics)
        self._sockets: list[socket.socket] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        #: Every corpus page on one address, each at its own path (hostile pages keep
        #: theirs): one site with many pages, for the rules per site (pacing, page caps).
        self.one_site = one_site
        #: The hostile cases search leaves out.
        self.unlisted = frozenset(unlisted)

    # -- knobs -------------------------------------------------------------------------------

    @property
    def latency(self) -> float:
        """Seconds added before every corpus and hostile page response."""
        return self._state.latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self._state.latency = max(0.0, float(seconds))

    @property
    def search_failures(self) -> int:
        """How many of the next ``/search`` requests answer HTTP 500."""
        with self._state.lock:
            return self._state.search_failures

    @search_failures.setter
    def search_failures(self, count: int) -> None:
        with self._state.lock:
            self._state.search_failures = max(0, int(count))

    # -- request log -------------------------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        """A snapshot of every request received since start (or the last ``reset_log``)."""
        with self._state.lock:
            return list(self._state.log)

    def requests_for(self, url: str) -> list[RequestRecord]:
        """The logged requests for ``url``'s host and path (and query, if it has one)."""
        parts = urlsplit(url)
        path = parts.path or "/"
        return [
            record
            for record in self.requests
            if record.host == parts.netloc
            and record.path == path
            and (not parts.query or record.query == parts.query)
        ]

    def reset_log(self) -> None:
        """Forget every logged request."""
        with self._state.lock:
            self._state.log.clear()

    # -- addresses ---------------------------------------------------------------------------

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` on the main host."""
        return self.base_url + (path if path.startswith("/") else "/" + path)

    @property
    def llm_url(self) -> str:
        """The OpenAI-compatible API root served by ``self.llm`` (``<base_url>/v1``)."""
        return self.base_url + "/v1"

    @property
    def search_options(self) -> dict[str, Any]:
        """The research options that search this web: its SearXNG endpoint, with its
        loopback addresses allowed (``sleuth.research(q, **web.search_options)``)."""
        return {"search": "searxng", "searxng_url": self.searxng_url, "allow_private_urls": True}

    def doc(self, doc_id: str) -> Doc:
        """The corpus document with id ``doc_id``."""
        for doc in self.docs:
            if doc.id == doc_id:
                return doc
        raise KeyError(doc_id)

    # -- life cycle --------------------------------------------------------------------------

    def __enter__(self) -> OfflineWeb:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Bind every site's socket, build the search index and start serving."""
        if self._thread is not None:
            raise RuntimeError("this OfflineWeb was already started")
        try:
            app = self._bind_and_build()
            config = uvicorn.Config(
                app,
                lifespan="off",
                log_config=None,
                log_level="warning",
                access_log=False,
                http="h11",
                ws="none",
                loop="asyncio",
                timeout_graceful_shutdown=2,
                timeout_keep_alive=5,
            )
            self._server = uvicorn.Server(config)
            self._thread = threading.Thread(target=self._serve, name="offline-web", daemon=True)
            self._thread.start()
            self._wait_started()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """End all responses in flight, stop the server thread and close the sockets."""
        self._state.stopping.set()
        server, thread = self._server, self._thread
        if server is not None:
            server.should_exit = True
        if thread is not None and thread.is_alive():
            thread.join(_STOP_TIMEOUT / 2)
            if thread.is_alive() and server is not None:
                server.force_exit = True
                thread.join(_STOP_TIMEOUT / 2)
        for sock in self._sockets:
            sock.close()

    def _serve(self) -> None:
        assert self._server is not None
        try:
            asyncio.run(self._server.serve(sockets=self._sockets))
        except BaseException as exc:  # reported by start() or left for inspection
            self._error = exc

    def _wait_started(self) -> None:
        assert self._server is not None and self._thread is not None
        deadline = time.monotonic() + _START_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the offline web did not start") from self._error
            time.sleep(0.002)

    def _listen(self, address: str) -> tuple[str, int]:
        """A listening socket on ``address`` (random port); 127.0.0.1 where it is missing."""
        # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose
        # proto says TCP, and without it every small response waits ~40 ms (Nagle and
        # delayed ACK) between its header and body segments.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.bind((address, 0))
        except OSError:
            if address == _MAIN_ADDRESS:
                sock.close()
                raise
            warnings.warn(
                f"cannot bind {address}; serving that site on {_MAIN_ADDRESS}",
                RuntimeWarning,
                stacklevel=3,
            )
            sock.bind((_MAIN_ADDRESS, 0))
        sock.listen(128)
        sock.setblocking(False)
        self._sockets.append(sock)
        host, port = sock.getsockname()[:2]
        return str(host), int(port)

    def _bind_and_build(self) -> _LLMMount:
        sites: dict[tuple[str, int], Site] = {}
        main = self._listen(_MAIN_ADDRESS)
        sites[main] = None
        self.base_url = self.searxng_url = f"http://{main[0]}:{main[1]}"
        entries: list[IndexEntry] = []
        shared = self._listen(_doc_address(0)) if self.one_site else None
        if shared is not None:
            sites[shared] = {entry.path: entry for entry in self.corpus.docs}
        for index, entry in enumerate(self.corpus.docs):
            key = shared or self._listen(_doc_address(index))
            if shared is None:
                sites[key] = entry
            url = f"http://{key[0]}:{key[1]}{entry.path}"
            self.docs.append(
                Doc(
                    entry.id,
                    url,
                    entry.title,
                    entry.text,
                    entry.content_type,
                    entry.source,
                    entry.licence,
                    entry.original_url,
                )
            )
            entries.append(IndexEntry(url, entry.title, entry.text))
        for index, (name, case) in enumerate(sorted(self.corpus.hostile.items())):
            key = self._listen(_hostile_address(index))
            sites[key] = case
            self.hostile[name] = url = f"http://{key[0]}:{key[1]}{case.path}"
            if name in self.unlisted:
                continue
            entries.append(
                IndexEntry(url, case.title, f"{case.snippet}\n{case.text}", snippet=case.snippet)
            )
        self.page_urls = [doc.url for doc in self.docs]
        links = [(doc.url, doc.title) for doc in self.docs]
        links += [(url, name) for name, url in self.hostile.items()]
        app = OfflineApp(self.corpus, SearchIndex(entries), self._state, sites, links)
        return _LLMMount(self, app, main)


class _LLMMount:
    """The offline web's app, with ``/v1/...`` on the main host handed to ``web.llm``."""

    def __init__(self, web: OfflineWeb, app: OfflineApp, main: tuple[str, int]) -> None:
        self.web = web
        self.app = app
        self.main = main

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point."""
        server = scope.get("server") or ("", 0)
        path = str(scope.get("path", ""))
        if (
            scope["type"] == "http"
            and (str(server[0]), int(server[1] or 0)) == self.main
            and (path == "/v1" or path.startswith("/v1/"))
        ):
            await self.web.llm.root_app(scope, receive, send)
            return
        await self.app(scope, receive, send)


def demo_command(web: OfflineWeb, question: str) -> str:
    """A ``sleuth`` command line that researches ``question`` on this offline web."""
    # "Double quotes" read better than shlex's '...'"'"'...' for a question with an
    # apostrophe, and mean the same wherever the shell would not expand anything in them.
    quoted = f'"{question}"' if not set(question) & set('"$`\\!') else shlex.quote(question)
    return (
        shlex.join(
            [
                "sleuth",
                "--search",
                "searxng",
                "--searxng-url",
                web.searxng_url,
                "--allow-private-urls",
            ]
        )
        + " "
        + quoted
    )


def main(argv: list[str] | None = None) -> None:
    """Serve the offline web until interrupted: ``python -m sleuth.testing [CORPUS_DIR]``.

    The first lines printed are a ready-to-paste ``sleuth`` command that researches one
    of the corpus's questions on it: a first run with no network at all.
    """
    args = sys.argv[1:] if argv is None else argv
    try:
        web = OfflineWeb(Path(args[0]) if args else None)
    except (FileNotFoundError, NotADirectoryError, ValueError) as exc:
        print(f"python -m sleuth.testing: {exc}", file=sys.stderr)
        sys.exit(2)
    with web:
        print(
            "The offline web is serving on 127.0.0.1 until Ctrl-C. In another terminal, "
            "research one of its questions:\n"
        )
        print(f"  {demo_command(web, web.topics[0].question)}\n", flush=True)
        print(f"search: {web.searxng_url}/search?q=...&format=json")
        for doc in web.docs:
            print(f"doc     {doc.url}")
        for name, url in web.hostile.items():
            print(f"hostile {name:14} {url}")
        for topic in web.topics:
            print(f"topic   {topic.id}: {topic.question}")
        sys.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
