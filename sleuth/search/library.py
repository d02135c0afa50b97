"""The ``library`` search provider: the pages past runs read, searched alongside the web.

Every page sleuth reads stays in its store; this provider answers a query from the
store's full-text index of them (:meth:`sleuth.store.Store.search_library`, bm25). A hit
carries the page's own URL, so the fetch stage reads it like any candidate: from the
page cache while it is fresh, revalidated with a conditional request when it is stale,
and judged on-topic or not like any page. Its provider is named
``library, read YYYY-MM-DD``, so a report's Sources say where the page came from and
how old the copy is. Nothing here touches the network.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

from sleuth.models import SearchHit
from sleuth.search.base import ProviderFailure, SearchProvider, register
from sleuth.store import LibraryPage, Store, StoreError, default_home

__all__ = ["MIN_COVER", "LibrarySearch", "library_label"]

#: The idf-weighted share of a query's words a page must hold to be a hit (chosen on
#: the relevance corpus's tune topics, bench/NOTEBOOK.md): the library holds every page
#: past runs read, on every subject, and a page sharing only common words with a query
#: would be read, and set aside, before the web's pages.
MIN_COVER = 0.4


def library_label(fetched_at: float) -> str:
    """How a Sources line names a page found in the library: ``library, read 2026-11-20``."""
    day = time.strftime("%Y-%m-%d", time.gmtime(fetched_at))
    return f"{LibrarySearch.name}, read {day}"


@register
class LibrarySearch(SearchProvider):
    """Full-text search over the pages kept in sleuth's store by earlier runs."""

    name = "library"
    alongside = True

    def __init__(
        self,
        settings: object,
        client: httpx.AsyncClient,
        env: Mapping[str, str] | None = None,
        *,
        store: Store | None = None,
    ) -> None:
        super().__init__(settings, client, env)
        self._store = store

    def attach(self, store: Store) -> None:
        """Search ``store`` (the run's, already open)."""
        self._store = store

    def store(self) -> Store:
        """The store holding the library (opened on first use under ``--home``)."""
        if self._store is None:
            home = self.settings.home
            self._store = Store(Path(home) if home else default_home())
        return self._store

    def _search(self, query: str, limit: int) -> list[LibraryPage]:
        try:
            return self.store().search_library(query, limit, min_cover=MIN_COVER)
        except StoreError as exc:
            raise ProviderFailure(str(exc)) from exc

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """The ``limit`` pages of the library that best match ``query``, best first."""
        found = await asyncio.to_thread(self._search, query, limit)
        return [
            SearchHit(
                title=page.title,
                url=page.url,
                snippet=page.snippet,
                rank=rank,
                provider=library_label(page.fetched_at),
                query=query,
            )
            for rank, page in enumerate(found, start=1)
        ]
