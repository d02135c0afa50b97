"""What sleuth already learned: searches, pages and LLM replies, so nothing is done twice.

* **searches**: (provider, query, parameters) → hits, fresh for a TTL (1 day by default);
  the caller skips :meth:`CacheStore.get_search` under ``--refresh`` but still writes.
* **pages**: canonical URL → the last fetch (text, title, status, ETag/Last-Modified,
  content hash, or the failure reason, and whether it surely came from a public
  address); a stale entry is revalidated by the fetcher with a conditional request and
  refreshed with :meth:`CacheStore.mark_revalidated`.
* **LLM calls**: :func:`llm_key` (model, messages, parameters) → reply and usage, kept
  until the cache is cleared, so a rerun costs no tokens.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from sleuth.models import FetchFailure, Page, SearchHit
from sleuth.store.db import Database, canonical_json, to_json

__all__ = ["CacheStore", "CachedLLM", "CachedPage", "llm_key", "search_key"]

#: Default freshness of a cached search, in seconds (1 day).
SEARCH_TTL_S = 86_400.0


def search_key(provider: str, query: str, params: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a search's provider, query and parameters."""
    return hashlib.sha256(canonical_json([provider, query, dict(params)]).encode()).hexdigest()


def llm_key(
    model: str,
    messages: Sequence[Mapping[str, Any]] | Sequence[Any],
    params: Mapping[str, Any] | None = None,
) -> str:
    """sha256 of the canonical JSON of an LLM call: same call, same key.

    Keys of every object are sorted, so the order in which a dict was built does
    not matter; the order of the messages does.
    """
    blob = canonical_json(
        {"model": model, "messages": list(messages), "params": dict(params or {})}
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def text_hash(text: str) -> str:
    """The content hash sleuth stores for a page whose body bytes were not kept."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class CachedPage(BaseModel):
    """The last fetch of one canonical URL: its text, or why it failed."""

    model_config = ConfigDict(frozen=True)

    canonical_url: str
    url: str
    final_url: str | None = None
    status: int | None = None
    etag: str | None = None
    last_modified: str | None = None
    content_type: str | None = None
    content_hash: str | None = None
    title: str | None = None
    text: str | None = None
    date: str | None = None
    failure: str | None = None
    fetched_at: float
    #: Whether the fetch surely came from a public address; None when not known.
    public: bool | None = None

    @property
    def ok(self) -> bool:
        """True when the fetch produced text (no failure recorded)."""
        return self.failure is None

    def is_stale(self, max_age_s: float, now: float | None = None) -> bool:
        """True when the fetch is older than ``max_age_s`` seconds (at ``now``)."""
        current = time.time() if now is None else now
        return current - self.fetched_at > max_age_s

    def to_page(self) -> Page:
        """The pipeline's :class:`Page` record; ``ValueError`` for a cached failure."""
        if not self.ok:
            raise ValueError(f"{self.url} is a cached failure: {self.failure}")
        return Page(
            url=self.url,
            final_url=self.final_url or self.url,
            canonical_url=self.canonical_url,
            title=self.title or self.url,
            text=self.text or "",
            content_type=self.content_type or "",
            status=self.status or 200,
            date=self.date,
            engine="cache",
        )

    @classmethod
    def from_page(
        cls,
        page: Page,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
        content_hash: str | None = None,
        fetched_at: float | None = None,
        public: bool | None = None,
    ) -> CachedPage:
        """A cache entry for a fetched page (hash of the text unless one is given)."""
        return cls(
            canonical_url=page.canonical_url,
            url=page.url,
            final_url=page.final_url,
            public=public,
            status=page.status,
            etag=etag,
            last_modified=last_modified,
            content_type=page.content_type,
            content_hash=content_hash or text_hash(page.text),
            title=page.title,
            text=page.text,
            date=page.date,
            fetched_at=time.time() if fetched_at is None else fetched_at,
        )

    @classmethod
    def from_failure(
        cls,
        failure: FetchFailure,
        canonical_url: str,
        fetched_at: float | None = None,
        public: bool | None = None,
    ) -> CachedPage:
        """A cache entry recording that ``failure.url`` could not be fetched."""
        return cls(
            canonical_url=canonical_url,
            url=failure.url,
            status=failure.status,
            failure=failure.reason,
            public=public,
            fetched_at=time.time() if fetched_at is None else fetched_at,
        )


class CachedLLM(BaseModel):
    """One cached LLM reply and the usage it cost the first time."""

    model_config = ConfigDict(frozen=True)

    key: str
    model: str | None
    reply: str
    usage: dict[str, Any]
    created_at: float


_PAGE_COLUMNS = (
    "canonical_url",
    "url",
    "final_url",
    "status",
    "etag",
    "last_modified",
    "content_type",
    "content_hash",
    "title",
    "text",
    "date",
    "failure",
    "fetched_at",
    "public",
)


class CacheStore(Database):
    """Search, page and LLM caches (mixed into :class:`sleuth.store.Store`)."""

    # ------------------------------------------------------------ searches

    def get_search(
        self,
        provider: str,
        query: str,
        params: Mapping[str, Any],
        max_age_s: float | None = SEARCH_TTL_S,
    ) -> list[SearchHit] | None:
        """The cached hits of this search if younger than ``max_age_s`` (None: any age).

        ``None`` means "not cached, search again"; ``[]`` is a cached empty answer.
        """
        key = search_key(provider, query, params)
        row = self.read(
            lambda c: c.execute(
                "SELECT hits, created_at FROM searches WHERE key = ?", (key,)
            ).fetchone()
        )
        if row is None:
            return None
        with self.decoding():
            if max_age_s is not None and self.clock() - float(row[1]) > max_age_s:
                return None
            return [SearchHit.model_validate(item) for item in json.loads(row[0])]

    def put_search(
        self, provider: str, query: str, params: Mapping[str, Any], hits: Sequence[SearchHit]
    ) -> None:
        """Remember the hits of one search (replacing an older answer)."""
        key = search_key(provider, query, params)
        values = (
            key,
            provider,
            query,
            canonical_json(dict(params)),
            to_json(list(hits)),
            self.clock(),
        )
        self.write(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO searches (key, provider, query, params, hits, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                values,
            )
        )

    # ------------------------------------------------------------ pages

    def get_page(self, canonical_url: str) -> CachedPage | None:
        """The last fetch of ``canonical_url``, fresh or stale; None if never fetched."""
        sql = f"SELECT {', '.join(_PAGE_COLUMNS)} FROM pages WHERE canonical_url = ?"
        row = self.read(lambda c: c.execute(sql, (canonical_url,)).fetchone())
        if row is None:
            return None
        with self.decoding():
            return CachedPage(**dict(zip(_PAGE_COLUMNS, row, strict=True)))

    def put_page(self, page: CachedPage) -> None:
        """Store one fetch result (see :meth:`CachedPage.from_page` / ``from_failure``)."""
        values = tuple(getattr(page, name) for name in _PAGE_COLUMNS)
        marks = ", ".join("?" for _ in _PAGE_COLUMNS)
        # An upsert, not INSERT OR REPLACE: a replace deletes the row without firing the
        # delete trigger that keeps the library's index (pages_fts) in step.
        updates = ", ".join(f"{name} = excluded.{name}" for name in _PAGE_COLUMNS[1:])
        sql = (
            f"INSERT INTO pages ({', '.join(_PAGE_COLUMNS)}) VALUES ({marks}) "
            f"ON CONFLICT (canonical_url) DO UPDATE SET {updates}"
        )
        self.write(lambda c: c.execute(sql, values))

    def mark_revalidated(
        self, canonical_url: str, *, etag: str | None = None, last_modified: str | None = None
    ) -> bool:
        """A conditional request answered 304: the entry is fresh again. False if absent."""
        now = self.clock()

        def update(c: sqlite3.Connection) -> int:
            return c.execute(
                "UPDATE pages SET fetched_at = ?, etag = COALESCE(?, etag), "
                "last_modified = COALESCE(?, last_modified) WHERE canonical_url = ?",
                (now, etag, last_modified, canonical_url),
            ).rowcount

        return self.write(update) > 0

    # ------------------------------------------------------------ LLM calls

    def get_llm(self, key: str) -> CachedLLM | None:
        """The cached reply for :func:`llm_key` ``key``, or None."""
        row = self.read(
            lambda c: c.execute(
                "SELECT key, model, reply, usage, created_at FROM llm_calls WHERE key = ?", (key,)
            ).fetchone()
        )
        if row is None:
            return None
        with self.decoding():
            return CachedLLM(
                key=row[0], model=row[1], reply=row[2], usage=json.loads(row[3]), created_at=row[4]
            )

    def put_llm(
        self,
        key: str,
        reply_text: str,
        usage: Mapping[str, Any] | None = None,
        *,
        model: str | None = None,
    ) -> None:
        """Remember one LLM reply and its token usage."""
        values = (key, model, reply_text, to_json(dict(usage or {})), self.clock())
        self.write(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO llm_calls (key, model, reply, usage, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                values,
            )
        )

    # ------------------------------------------------------------ clearing

    def clear_cache(
        self, older_than_s: float | None = None, *, runs: bool = False, vacuum: bool = True
    ) -> dict[str, int]:
        """Delete cached searches, pages and LLM replies (older than ``older_than_s``).

        Runs are kept unless ``runs`` is true, and a run still marked ``running`` is
        never deleted. Returns the number of rows deleted per table. With ``vacuum``
        the space is given back to the disk when nothing else is using the database.
        """
        cutoff = float("inf") if older_than_s is None else self.clock() - older_than_s
        tables = {"searches": "created_at", "pages": "fetched_at", "llm_calls": "created_at"}

        def delete(c: sqlite3.Connection) -> dict[str, int]:
            counts = {
                table: c.execute(f"DELETE FROM {table} WHERE {column} <= ?", (cutoff,)).rowcount
                for table, column in tables.items()
            }
            if runs:
                counts["runs"] = c.execute(
                    "DELETE FROM runs WHERE status != 'running' AND created_at <= ?", (cutoff,)
                ).rowcount
            return counts

        counts = self.write(delete)
        if vacuum and any(counts.values()):
            self.vacuum()
        return counts

    def cache_counts(self) -> dict[str, int]:
        """How many searches, pages, LLM replies and runs the store holds."""

        def count(c: sqlite3.Connection) -> dict[str, int]:
            return {
                table: int(c.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
                for table in ("searches", "pages", "llm_calls", "runs")
            }

        return self.read(count)
