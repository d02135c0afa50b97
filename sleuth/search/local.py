"""The ``local`` search provider: research a folder of documents instead of the web.

The folder (``--docs DIR``) is indexed into the store's FTS5 table the first time
the provider searches (incrementally: unchanged files are not read again), then
every query is answered from that index with bm25 ranking. Hits carry ``file://``
URLs of absolute paths, so they are told apart from web pages; their text is in
the store (:func:`sleuth.store.docs.get_doc`). Nothing here touches the network.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from sleuth.errors import ConfigError, ProviderError
from sleuth.models import SearchHit
from sleuth.search.base import ProviderFailure, SearchProvider, register
from sleuth.store import IndexReport, Store, default_home, file_url, index_folder, search_docs

__all__ = ["LocalSearch", "provider_groups"]


@register
class LocalSearch(SearchProvider):
    """Full-text search over the documents folder named by ``--docs``."""

    name = "local"

    def __init__(
        self,
        settings: object,
        client: httpx.AsyncClient,
        env: Mapping[str, str] | None = None,
        *,
        store: Store | None = None,
    ) -> None:
        super().__init__(settings, client, env)
        docs = self.settings.docs
        if docs is None:
            raise ProviderError(
                "search provider 'local' needs a documents folder: --docs DIR or SLEUTH_DOCS"
            )
        self.folder = Path(docs).expanduser()
        if not self.folder.is_dir():
            raise ProviderError(f"search provider 'local': {self.folder} is not a folder")
        self._store = store
        self._index_lock = asyncio.Lock()
        #: What indexing found (failed files included); None until the first search.
        self.index_report: IndexReport | None = None

    def attach(self, store: Store, index_report: IndexReport) -> None:
        """Search ``store``'s index, already brought up to date (``index_report``) by the run."""
        self._store = store
        self.index_report = index_report

    def store(self) -> Store:
        """The store holding the index (opened on first use under ``--home``)."""
        if self._store is None:
            home = self.settings.home
            self._store = Store(Path(home) if home else default_home())
        return self._store

    async def ensure_index(self) -> IndexReport:
        """Index the folder once per provider; later calls return the same report."""
        async with self._index_lock:
            if self.index_report is None:
                # Here, not at the top: the web providers' runs never need them.
                from sleuth.extraction.documents import DocumentExtractor
                from sleuth.extraction.workers import extract_limits

                try:
                    store = await asyncio.to_thread(self.store)
                    limits = extract_limits(self.settings)
                    self.index_report = await asyncio.to_thread(
                        index_folder, store, self.folder, DocumentExtractor(limits)
                    )
                except ConfigError as exc:
                    raise ProviderFailure(str(exc)) from exc
            return self.index_report

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """The best ``limit`` documents for ``query``, as hits with ``file://`` URLs."""
        report = await self.ensure_index()
        found = await asyncio.to_thread(search_docs, self.store(), query, limit, report.folder)
        return [
            SearchHit(
                title=hit.title or Path(hit.path).name,
                url=file_url(hit.path),
                snippet=hit.snippet,
                rank=rank,
                provider=self.name,
                query=query,
            )
            for rank, hit in enumerate(found, start=1)
        ]


def provider_groups(providers: Sequence[SearchProvider]) -> list[list[SearchProvider]]:
    """Providers grouped for searching: ``local`` on its own, the web ones in fallback order.

    ``--search local,duckduckgo`` mixes the folder with the web: every query goes to
    both groups, and within a group the providers fall back in order as usual.
    """
    local = [p for p in providers if p.name == LocalSearch.name]
    web = [p for p in providers if p.name != LocalSearch.name]
    return [group for group in (local, web) if group]
