"""Everything sleuth learns, kept in one SQLite database under its home folder.

>>> store = Store(default_home())            # doctest: +SKIP
>>> hits = store.get_search("duckduckgo", "q", {"limit": 8}, max_age_s=86400)  # doctest: +SKIP

:class:`Store` joins the caches (:mod:`sleuth.store.cache`), the library of pages read
(:mod:`sleuth.store.library`) and the run history (:mod:`sleuth.store.runs`) on one
:class:`~sleuth.store.db.Database`; the local documents index lives in
:mod:`sleuth.store.docs`. Every method is synchronous, short and thread-safe: from async
code call it through ``asyncio.to_thread``.
"""

from __future__ import annotations

from sleuth.store.cache import SEARCH_TTL_S, CachedLLM, CachedPage, CacheStore, llm_key
from sleuth.store.db import (
    DB_NAME,
    Database,
    StoreBusyError,
    StoreCorruptError,
    StoreError,
    default_home,
    parse_duration,
)
from sleuth.store.docs import DocHit, IndexReport, file_url, index_folder, search_docs
from sleuth.store.library import ForgetReport, LibraryPage, LibraryStore
from sleuth.store.migrations import MIGRATIONS, Migration
from sleuth.store.runs import RunInfo, RunNotFoundError, RunStore, RunSummary, StageRecord

__all__ = [
    "DB_NAME",
    "MIGRATIONS",
    "SEARCH_TTL_S",
    "CachedLLM",
    "CachedPage",
    "Database",
    "DocHit",
    "ForgetReport",
    "IndexReport",
    "LibraryPage",
    "Migration",
    "RunInfo",
    "RunNotFoundError",
    "RunSummary",
    "StageRecord",
    "Store",
    "StoreBusyError",
    "StoreCorruptError",
    "StoreError",
    "default_home",
    "file_url",
    "index_folder",
    "llm_key",
    "parse_duration",
    "search_docs",
]


class Store(CacheStore, LibraryStore, RunStore):
    """sleuth's database at ``<home>/sleuth.db``: caches, the library, runs, documents index.

    ``Store(home)`` creates the folder and the database, switches it to WAL and
    applies pending migrations; :class:`~sleuth.errors.ConfigError` (one line) when
    the home cannot be written. Use it as a context manager or call :meth:`close`.
    """

    def __enter__(self) -> Store:
        return self
