"""Fetching: URL in, ``Page`` (or ``FetchFailure`` saying why not) out.

A :class:`Fetcher` serves one research run, or all the runs of a driver that shares it.
It owns one HTTP/2-capable client whose every connection goes through the SSRF guard
(:mod:`sleuth.fetch.guard`; the optional browser's requests are made by it too: see
:mod:`sleuth.fetch.browser`), follows redirects itself (every hop checked), bounds work
globally and per host, gives each page's download one deadline (redirects included;
extraction, in :mod:`sleuth.extraction`'s workers, comes after it), reads at most
``max_page_bytes`` of decompressed body (:mod:`sleuth.fetch.body`), holds at most
``concurrency + extract_workers`` bodies between their download and the end of their
extraction (further downloads wait for extraction to catch up), and never fetches one
canonical URL twice. Politeness (:mod:`sleuth.fetch.politeness`): the starts of two
requests to one host are ``host_delay`` apart, one host gives at most
``max_pages_per_host`` pages, and with ``respect_robots`` its robots.txt is obeyed.
``allow_domains``/``deny_domains`` are applied by the guard to every hop. The requests
themselves (pacing, redirects, robots.txt, the browser's) are made by its base,
:class:`~sleuth.fetch.transfer.HttpTransfer`; a page is read (rendered, extracted, or
made into a failure) by :class:`~sleuth.fetch._reading.PageReading`.

Two optional seams keep it independent of the run store (:mod:`sleuth.fetch.cache`): a
:class:`PageCache` (consulted before the network, revalidated with a conditional request
when stale, filled after) and :class:`LocalDocuments`, the only way a ``file://`` URL is
read. A cached page answers only where this run's rules would let it be fetched
(:meth:`Fetcher.usable`): the cache remembers whether each page came from a public
address, so a page read under ``--allow-private-urls`` is not a way round the guard.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import httpx

from sleuth import timeline
from sleuth._version import __version__
from sleuth.errors import BlockedURLError, FetchError
from sleuth.extraction.workers import start_pool
from sleuth.fetch._reading import PageReading
from sleuth.fetch.browser import (
    Browser,
    playwright_installed,
    require_playwright,
)
from sleuth.fetch.cache import (
    CachedResult,
    LocalDocuments,
    NotModified,
    PageCache,
    Validators,
    lookup,
    quietly,
)
from sleuth.fetch.config import FetchConfig
from sleuth.fetch.guard import DomainRules, GuardedTransport, is_public_address
from sleuth.fetch.politeness import (
    CAPPED,
    Politeness,
)
from sleuth.fetch.transfer import _HEADERS
from sleuth.models import FetchFailure, Page
from sleuth.urls import canonicalize, host_of

__all__ = [
    "DEFAULT_USER_AGENT",
    "CachedResult",
    "Fetcher",
    "LocalDocuments",
    "PageCache",
    "RunFetcher",
    "Validators",
    "fetch_page",
]

log = logging.getLogger(__name__)

#: Idle connections kept open at most (reused when a host is asked again).
KEEPALIVE = 32

DEFAULT_USER_AGENT = f"sleuth/{__version__} (+https://github.com/sleuth-research/sleuth)"


@dataclass
class _Entry:
    """One canonical URL's fetch, shared by everyone who asks for it."""

    task: asyncio.Task[Page | FetchFailure]
    waiters: int = 0


def _refused(url: str, reason: str) -> FetchFailure:
    """A URL refused before any request (blocked, or over a page cap): a span of no time."""
    timeline.instant("download", "fetch", url, outcome="failed", detail=reason)
    return FetchFailure(url=url, reason=reason)


def _noted(result: Page | FetchFailure) -> Page | FetchFailure:
    """``result`` told to the open span (a local document's read)."""
    if isinstance(result, Page):
        timeline.note(size=len(result.text), detail=result.content_type)
    else:
        timeline.note(outcome="failed", detail=result.reason)
    return result


class RunFetcher:
    """One run's view of a :class:`Fetcher` that may serve several runs (a batch).

    Fetches go through the shared fetcher: its per-host pacing clock, its slots, its
    robots.txt cache, its page cache, and one request for a page two runs want at once.
    What is the run's own: ``--max-pages-per-host`` (``pages``, counted per run, so one
    question's pages never use up another's) and ``cache_hits``, the pages the cache
    served this run (the report's ``cached_fetches``).
    """

    def __init__(self, fetcher: Fetcher) -> None:
        self.fetcher = fetcher
        #: Pages the cache served this run (fresh, or a 304 answer).
        self.cache_hits = 0
        #: Pages this run took from each host (its --max-pages-per-host count).
        self.pages: Counter[str] = Counter()

    async def fetch(self, url: str) -> Page | FetchFailure:
        """:meth:`Fetcher.fetch`, counted against this run."""
        return await self.fetcher.fetch(url, run=self)

    async def usable(self, url: str, cached: CachedResult) -> bool:
        """:meth:`Fetcher.usable`."""
        return await self.fetcher.usable(url, cached)

    @property
    def robots_notes(self) -> dict[str, str]:
        """:attr:`Fetcher.robots_notes` (the fetcher's, for every run it serves)."""
        return self.fetcher.robots_notes


class Fetcher(PageReading):
    """Fetches pages for one research run; use as ``async with Fetcher(settings) as f``.

    ``settings``: a :class:`~sleuth.fetch.config.FetchConfig`, or the settings table it is
    made from.

    ``transport`` replaces the guarded network transport (tests use
    ``httpx.MockTransport``); URLs and redirect hops are still checked with
    :func:`check_url`, but connect-time address checks are then the transport's
    business. ``cache`` answers before the network (``cache_hits`` counts the
    pages it served, fresh or revalidated); ``documents`` reads ``file://`` URLs,
    which without it are refused. ``clock`` and ``sleep`` pace the requests to one
    host (``host_delay``); tests pass fake ones to see the spacing without waiting.

    Several runs may share one fetcher, each through its own :class:`RunFetcher`
    (:meth:`for_run`). ``keep`` bounds how many finished pages stay in memory for
    another caller of the same URL (None: all, as one run wants; a batch keeps the
    latest few, and its page cache answers for the rest).
    """

    def __init__(
        self,
        settings: FetchConfig | object,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        cache: PageCache | None = None,
        documents: LocalDocuments | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        keep: int | None = None,
    ) -> None:
        self._config = config = FetchConfig.of(settings)
        self._transport = transport
        self._cache = cache
        self._documents = documents
        #: The run a plain :meth:`fetch` counts against (a fetcher used by one run).
        self._own = RunFetcher(self)
        self._client: httpx.AsyncClient | None = None
        self._browser: Browser | None = None
        self._entries: dict[str, _Entry] = {}
        self._keep = keep
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._slots = asyncio.Semaphore(config.concurrency)
        # Pages between the start of their download and the end of their extraction: a
        # body waits in memory for an extraction worker, so when extraction falls behind
        # (a deep run's big pages), downloads wait instead, and the bodies held are at
        # most this many times max_page_bytes.
        self._reading = asyncio.Semaphore(config.concurrency + max(1, config.extract_workers))
        self._host_slots: dict[str, asyncio.Semaphore] = {}
        self._domains = DomainRules(config.allow_domains, config.deny_domains)
        self._user_agent = config.user_agent or DEFAULT_USER_AGENT
        self._polite = Politeness(
            config, self._user_agent, self._read_robots, clock=clock, sleep=sleep
        )

    async def __aenter__(self) -> Self:
        settings = self._config
        # The extraction workers start now, in the background, while the first pages
        # download (after the searches: never on the way to the first search request).
        start_pool(settings.extract_workers)
        if settings.fetch_engine == "playwright":
            require_playwright()
            self._browser = Browser(self._fetch_for_browser, settings.max_page_bytes)
            await self._browser.start()
        elif playwright_installed():
            # Only started if a script-only page turns up.
            self._browser = Browser(self._fetch_for_browser, settings.max_page_bytes)
        # httpcore scans every pooled connection for each request: hundreds of idle ones
        # (a batch's fetcher, its pages on many hosts) cost more CPU than reconnecting.
        limits = httpx.Limits(
            max_connections=settings.concurrency,
            max_keepalive_connections=min(settings.concurrency, KEEPALIVE),
        )
        transport = self._transport or GuardedTransport(
            allow_private=settings.allow_private_urls,
            http2=True,
            limits=limits,
            domains=self._domains,
        )
        headers = {**_HEADERS, "User-Agent": self._user_agent}
        self._client = httpx.AsyncClient(
            transport=transport,
            headers=headers,
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(settings.timeout, connect=min(settings.timeout, 10.0)),
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        pending: list[asyncio.Task[Any]] = [
            e.task for e in self._entries.values() if not e.task.done()
        ]
        pending += self._polite.pending()
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._browser is not None:
            await self._browser.close()

    @property
    def cache_hits(self) -> int:
        """Pages served by ``cache`` without a download (fresh, or a 304 answer) to
        plain :meth:`fetch` calls (a :class:`RunFetcher` counts its own)."""
        return self._own.cache_hits

    def for_run(self) -> RunFetcher:
        """A new run's view of this fetcher (its own page caps and cache-hit count)."""
        return RunFetcher(self)

    async def fetch(self, url: str, *, run: RunFetcher | None = None) -> Page | FetchFailure:
        """Fetch and extract ``url``; every page problem comes back as a ``FetchFailure``.

        Calls for one canonical URL share one request, concurrent or not (with ``keep``,
        a finished one only while it is among the latest ``keep``). ``run``: whose
        page caps and cache hits the request counts against (default: the fetcher's own).
        """
        if self._client is None:
            raise RuntimeError("use the Fetcher as 'async with Fetcher(settings) as fetcher'")
        key = canonicalize(url)
        entry = self._entries.get(key)
        if entry is None:
            entry = _Entry(asyncio.ensure_future(self._fetch_fresh(url, run or self._own)))
            self._entries[key] = entry
            if self._keep is not None:
                entry.task.add_done_callback(lambda task: self._forget_old(key, task))
        entry.waiters += 1
        try:
            # shield: one caller giving up must not cancel the fetch for the others.
            result = await asyncio.shield(entry.task)
        except asyncio.CancelledError:
            entry.waiters -= 1
            if entry.waiters == 0 and not entry.task.done() and self._keep is None:
                # Nobody wants it any more: free its slots, and let a later call retry.
                # (A fetcher shared by many runs lets it finish: the next run that wants
                # the page then finds it, instead of asking the site a second time.)
                entry.task.cancel()
                self._entries.pop(key, None)
            raise
        entry.waiters -= 1
        return result if result.url == url else result.model_copy(update={"url": url})

    def _forget_old(self, key: str, task: asyncio.Task[Page | FetchFailure]) -> None:
        """Keep at most ``keep`` finished pages in memory: a batch's would grow without end."""
        assert self._keep is not None
        if task.cancelled() or task.exception() is not None:
            return
        result = task.result()
        if isinstance(result, FetchFailure) and result.reason.startswith(CAPPED):
            # One run's cap, not the page's answer: another run asks again.
            if (entry := self._entries.get(key)) is not None and entry.task is task:
                del self._entries[key]
            return
        self._finished[key] = None
        self._finished.move_to_end(key)
        while len(self._finished) > self._keep:
            old, _ = self._finished.popitem(last=False)
            entry = self._entries.get(old)
            if entry is not None and entry.task.done():
                del self._entries[old]

    async def _fetch_fresh(self, url: str, run: RunFetcher) -> Page | FetchFailure:
        """A local document, the cache's answer, or a (conditional) download."""
        if url.strip()[:5].lower() == "file:":
            if self._documents is None:
                return _refused(
                    url, "blocked: file URLs are read only from the documents folder (--docs)"
                )
            with timeline.span("extract", "fetch", url):
                return _noted(await self._documents.read(url))
        # Rules first, cache second: a page cached under other settings is not a way in.
        try:
            self._check(url)
            if self._config.respect_robots:
                await self._polite.obey_robots(url)
        except BlockedURLError as exc:
            return _refused(url, f"blocked: {exc.reason}")
        cached = await lookup(self._cache, url)
        if cached is not None and not await self.usable(url, cached):
            cached = None  # read under rules that this run's refuse: as if never cached
        if cached is not None and cached.fresh:
            run.cache_hits += 1
            timeline.instant("download", "fetch", url, detail="from the page cache")
            return cached.result
        capped = self._polite.take_page(host_of(url), run.pages)
        if capped is not None:
            # Like a blocked URL, not cached: it depends on this run, not on the page.
            return _refused(url, capped)
        stale = cached if cached is not None and isinstance(cached.result, Page) else None
        try:
            result, validators, public = await self._fetch_network(url, stale)
        except NotModified as answer:
            assert stale is not None and self._cache is not None
            run.cache_hits += 1
            await quietly(self._cache.revalidated(url, answer.validators))
            return stale.result
        # A blocked URL cost no request, and whether it is blocked depends on the settings.
        blocked = isinstance(result, FetchFailure) and result.reason.startswith("blocked: ")
        if self._cache is not None and not blocked:
            await quietly(self._cache.put(url, result, validators, public=public))
        return result

    async def usable(self, url: str, cached: CachedResult) -> bool:
        """Whether ``cached`` may answer for ``url`` in this run, with no request sent.

        Only where a fetch under this run's settings would have got it: the URL and the
        page's final URL pass the guard and the domain lists (and robots.txt under
        ``respect_robots``), and the page came from a public address, or from one these
        settings allow for its host (``allow_private_urls``, an ``--allow-domains`` host).
        Where it came from is what the cache remembers (``CachedResult.public``), not
        what the name resolves to today: no DNS lookup, and a name pointed elsewhere
        since cannot launder a private page. Otherwise the entry is as if never cached,
        and the fetch itself meets the guard.
        """
        result = cached.result
        last = result.final_url if isinstance(result, Page) and result.final_url else url
        try:
            for hop in dict.fromkeys((url, last)):
                self._check(hop)
                if self._config.respect_robots:
                    await self._polite.obey_robots(hop)
        except BlockedURLError:
            return False
        return bool(cached.public) or self._private_allowed(last)

    def _private_allowed(self, url: str) -> bool:
        """Whether this run lets ``url``'s host be at a non-public address."""
        if self._config.allow_private_urls:
            return True
        try:
            host = httpx.URL(url.strip()).raw_host.decode("ascii", "replace").lower()
        except (httpx.InvalidURL, ValueError):
            return False
        return self._domains.allows_private(host)

    def _public(self, url: str, address: str | None) -> bool:
        """Whether what was read from ``url`` (the last hop) surely came from a public address.

        Under rules that refuse private addresses for its host, the guard checked every
        address it connected to; otherwise only the address the transport reports can tell.
        """
        if not self._private_allowed(url):
            return True
        return address is not None and is_public_address(address)

    async def _fetch_network(
        self, url: str, stale: CachedResult | None
    ) -> tuple[Page | FetchFailure, Validators, bool]:
        """Download and extract ``url``; raises NotModified when a conditional GET gets 304.

        The flag says whether the result surely came from a public address (see _public).
        The download and the extraction are each a span of the run's timeline.
        """
        conditional = None
        if stale is not None and isinstance(stale.result, Page) and stale.validators.headers():
            conditional = (stale.result.final_url, stale.validators)
        timeout = self._config.timeout
        host_slots = self._host_slots.setdefault(
            host_of(url), asyncio.Semaphore(self._config.per_host_concurrency)
        )
        # A body is held from its download to the end of its extraction: at most
        # self._reading pages are between the two (see __init__).
        async with self._reading:
            with timeline.span("download", "fetch", url):
                try:
                    # Host slot first, so a page waiting for its host holds no global slot.
                    async with host_slots, self._slots:
                        # The deadline starts once the page really starts, not while it queues.
                        timeline.started()
                        start = time.monotonic()
                        async with asyncio.timeout(timeout):
                            download = await self._get(url, conditional)
                except NotModified:
                    timeline.note(outcome="cached", status=304, detail="not modified since cached")
                    raise
                except Exception as exc:
                    failure = self._failure(url, exc)
                    timeline.note(outcome="failed", status=failure.status, detail=failure.reason)
                    return failure, Validators(), self._public(url, None)
                timeline.note(
                    status=download.status,
                    size=len(download.data),
                    final_url=download.url if download.url != url else None,
                    detail=download.engine if download.engine != "httpx" else "",
                )
            # Extraction is outside the deadline and the slots: it has a deadline of its
            # own (--extract-timeout), and a page that arrived in time must not fail while
            # it queues for an extraction worker behind a big page.
            try:
                with timeline.span("extract", "fetch", url):
                    try:
                        page, validators = await self._read(url, start, download)
                    except Exception as exc:
                        timeline.note(outcome="failed", detail=self._failure(url, exc).reason)
                        raise
                    timeline.note(size=len(page.text), detail=page.content_type)
                return page, validators, self._public(download.url, download.address)
            except Exception as exc:
                return self._failure(url, exc), Validators(), self._public(url, None)


async def fetch_page(url: str, settings: FetchConfig | object) -> Page:
    """Fetch one page under ``settings`` (a :class:`FetchConfig`, or the settings table);
    raises :class:`BlockedURLError` or :class:`FetchError` when it can't."""
    async with Fetcher(settings) as fetcher:
        result = await fetcher.fetch(url)
    if isinstance(result, Page):
        return result
    if result.reason.startswith("blocked: "):
        raise BlockedURLError(url, result.reason.removeprefix("blocked: "))
    raise FetchError(url, result.reason)
