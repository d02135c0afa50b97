"""The services research runs may share, opened once and each part on first use.

:class:`Services` holds the store session (the store, its page and reply caches, the
``--docs`` index), the search providers' HTTP client, the LLM client (its concurrency
limit) and the :class:`~sleuth.fetch.Fetcher` (its per-host pacing clock, per-host page
caps and robots.txt cache). A driver opens it once with :func:`open_services`, after
:func:`check_settings`; each part opens on first use, so a run that never fetches starts
no fetcher, and the extraction workers start after the searches, not on the way to them.
The quick driver opens one per run; drivers that run many questions or branches share
one between their runs.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

from sleuth._extras import missing_extra
from sleuth.errors import ProviderError
from sleuth.llm.config import resolve_config
from sleuth.llm.run import open_llm_client
from sleuth.models import Failure
from sleuth.pipeline.recorder import StoreSession
from sleuth.progress import ProgressCallback
from sleuth.search import make_search_client
from sleuth.search.base import get_provider
from sleuth.settings import Settings
from sleuth.store.docs import check_folder

if TYPE_CHECKING:
    import httpx

    from sleuth.fetch import Fetcher
    from sleuth.llm.client import LLMClient, LLMUsage

__all__ = ["SERVICE_FIELDS", "Services", "check_settings", "open_services"]


def check_settings(settings: Settings) -> None:
    """The cheap checks of a run's settings, made before a run record is created.

    Unknown providers, ``local`` without ``--docs``, a missing or unreadable
    documents folder and a configured model without the openai package raise
    :class:`~sleuth.errors.ConfigError` here, so a mistyped command leaves no failed
    run behind. (API keys are checked when searching.)
    """
    for name in settings.search:
        get_provider(name)
    if resolve_config(settings) is not None and importlib.util.find_spec("openai") is None:
        raise missing_extra("llm", "openai", "a configured model")
    if "local" in settings.search and settings.docs is None:
        raise ProviderError(
            "search provider 'local' needs a documents folder: --docs DIR or SLEUTH_DOCS"
        )
    if settings.docs is not None:
        check_folder(settings.docs)


#: The settings the services read (the fetcher, the store session, the model's client):
#: runs that share services share these; a batch takes them from the batch's own options,
#: never from one question's.
SERVICE_FIELDS = frozenset(
    {
        # the fetcher (and the extraction workers it starts)
        "allow_private_urls",
        "fetch_engine",
        "timeout",
        "max_page_bytes",
        "max_redirects",
        "concurrency",
        "per_host_concurrency",
        "user_agent",
        "host_delay",
        "max_pages_per_host",
        "respect_robots",
        "allow_domains",
        "deny_domains",
        "max_chars",
        "extract_timeout",
        "extract_memory_mb",
        "extract_workers",
        # the store session and its caches, the documents index
        "home",
        "no_store",
        "refresh",
        "cache_ttl",
        "docs",
        # the model's client
        "model",
        "plan_model",
        "summary_model",
        "report_model",
        "base_url",
        "context_window",
        "llm_concurrency",
        "llm_timeout",
        "no_llm",
    }
)

#: Finished pages a fetcher shared by many runs keeps in memory for the next run that
#: asks (the page cache, when there is one, answers for older ones).
SHARED_PAGES_KEPT = 64


class Services:
    """What runs may share; made by :func:`open_services`, each part opened on first use."""

    def __init__(
        self,
        settings: Settings,
        emit: ProgressCallback,
        store: StoreSession,
        stack: AsyncExitStack,
        *,
        shared: bool = False,
    ) -> None:
        self.settings = settings
        self.emit = emit
        #: The store, its caches and the documents index (all None under --no-store).
        self.store = store
        #: Whether many runs share these (a batch): the fetcher then keeps only the
        #: latest finished pages in memory, so memory does not grow with the runs done.
        self.shared = shared
        self._stack = stack
        self._search_client: httpx.AsyncClient | None = None
        self._fetcher: Fetcher | None = None
        self._indexed = False
        self._index_lock = asyncio.Lock()
        self._llm_opened = False
        self._llm: LLMClient | None = None
        # Runs sharing these wait for the one opening the client (its SDK loads in a
        # thread): none may take "no model" for an answer while it loads.
        self._llm_lock = asyncio.Lock()

    def search_client(self) -> httpx.AsyncClient:
        """The HTTP client the search providers share (closed with the services)."""
        if self._search_client is None:
            client = make_search_client(self.settings)
            self._stack.push_async_callback(client.aclose)
            self._search_client = client
        return self._search_client

    async def fetcher(self) -> Fetcher:
        """The fetcher, behind the page cache and the documents index (opened on first use)."""
        if self._fetcher is None:
            from sleuth.fetch import FetchConfig, Fetcher

            fetcher = Fetcher(
                FetchConfig.of(self.settings),
                cache=self.store.page_cache,
                documents=self.store.documents,
                keep=SHARED_PAGES_KEPT if self.shared else None,
            )
            self._fetcher = await self._stack.enter_async_context(fetcher)
        return self._fetcher

    async def index_documents(self) -> list[Failure]:
        """Bring the ``--docs`` index up to date, once; the files it could not read.

        Runs sharing these services (a batch) wait for the first to finish indexing:
        until then there is no documents reader, and a fetcher made in the meantime
        would refuse every file URL."""
        async with self._index_lock:
            if self._indexed:
                return []
            if self.settings.docs is None:  # nothing to index: no trip through a thread
                self._indexed = True
                return []
            failures = await asyncio.to_thread(self.store.index_documents)
            self._indexed = True
            return failures

    async def llm_client(
        self, failures: list[Failure], chosen: Callable[[], Awaitable[None] | None] | None = None
    ) -> LLMClient | None:
        """The model's client, opened once (None: the no-LLM pipeline runs).

        How it was chosen is said on the progress stream; why there is none, when that
        is news (a configured server that cannot be reached), goes to ``failures``.
        ``chosen`` is called as soon as a model is known to be configured, before its
        client's SDK loads (or at once when the client is already open); the SDK loads
        once what it returns, if anything, is awaited.
        """
        async with self._llm_lock:
            if not self._llm_opened:
                self._llm_opened = True
                self._llm = await self._stack.enter_async_context(
                    open_llm_client(
                        self.settings,
                        emit=self.emit,
                        failures=failures,
                        cache=self.store.reply_cache,
                        on_chosen=chosen,
                    )
                )
                return self._llm
        if self._llm is not None and chosen is not None:
            started = chosen()  # the client is open: what it started goes out first all the same
            if started is not None:
                await started
        return self._llm

    @property
    def llm_usage(self) -> LLMUsage | None:
        """The model usage of every run these services served so far (None: no model)."""
        return self._llm.usage if self._llm is not None else None


@asynccontextmanager
async def open_services(
    settings: Settings, emit: ProgressCallback, *, resumed: bool = False, shared: bool = False
) -> AsyncIterator[Services]:
    """Open the store (unless ``--no-store``) and the services around it; close all at exit.

    ``shared``: the services serve many runs (see :attr:`Services.shared`).
    Raises :class:`~sleuth.errors.ConfigError` for settings no run could use (unknown
    providers, a missing documents folder, a home that cannot be written).
    """
    check_settings(settings)
    session = await asyncio.to_thread(StoreSession.open, settings, resumed=resumed)
    try:
        async with AsyncExitStack() as stack:
            yield Services(settings, emit, session, stack, shared=shared)
    finally:
        session.close()
