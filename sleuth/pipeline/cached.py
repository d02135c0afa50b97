"""The run store as the pipeline's cache: searches, pages, local documents and LLM replies.

Adapters from :class:`~sleuth.store.Store` to the seams the stages already have:

* :class:`CachedProvider` wraps a search provider: a fresh cached answer (``--cache-ttl``)
  is reused, a new one is stored; ``--refresh`` skips the reads, never the writes.
* :class:`StorePageCache` is the fetcher's :class:`~sleuth.fetch.fetcher.PageCache`:
  pages stay fresh for ``--cache-ttl`` and are then revalidated (ETag/Last-Modified);
  failures stand for a shorter time (see :func:`failure_ttl`). Each entry keeps whether
  it surely came from a public address, for the fetcher's check of the run's URL rules.
* :class:`DocumentReader` is the fetcher's :class:`~sleuth.fetch.fetcher.LocalDocuments`:
  ``file://`` sources come from the documents index, only from inside ``--docs``.
* :class:`StoreReplyCache` is the LLM client's ``ReplyCache``: a rerun costs no tokens.

A resumed run (``sleuth resume``) takes every cached answer as fresh: what the run
already did is reused, whatever its age. Fresh or not, a cached page answers only where
the run's own URL rules let it be fetched (:meth:`sleuth.fetch.Fetcher.usable`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleuth import timeline
from sleuth.extraction.text import truncate_text
from sleuth.fetch.cache import CachedResult, Validators
from sleuth.models import FetchFailure, Page, SearchHit
from sleuth.search.base import SearchProvider
from sleuth.store import CachedPage, Store
from sleuth.store.db import log_store_failure
from sleuth.store.docs import get_doc, path_from_file_url
from sleuth.urls import canonicalize

if TYPE_CHECKING:
    from sleuth.llm.client import LLMReply
    from sleuth.settings import Settings

__all__ = [
    "TRANSIENT_FAILURE_TTL_S",
    "CachedProvider",
    "DocumentReader",
    "StorePageCache",
    "StoreReplyCache",
    "failure_ttl",
]

log = logging.getLogger(__name__)

#: How long a failure that may well pass (timeout, network error, 5xx, 429) stands (seconds).
TRANSIENT_FAILURE_TTL_S = 600.0
# Failures that say what the page *is*: asking again soon gives the same answer.
_LASTING = re.compile(
    r"^(HTTP 4\d\d|unsupported content type|binary content|no main text|"
    r"empty response|no text in PDF|redirect loop)"
)
_TRUNCATED = re.compile(r"\[… truncated at (\d+) characters\]$")
_KINDS = {"html": "text/html", "pdf": "application/pdf", "text": "text/plain"}


def failure_ttl(failure: FetchFailure, ttl: float) -> float:
    """Seconds a cached fetch failure stands before the URL is tried again.

    Failures that describe the page (a 404, a binary file, no text) stand as long as a
    page would (``ttl``); ones that may pass (timeouts, network errors, 408, 429, 5xx,
    "too large" under another ``--max-page-bytes``) stand
    :data:`TRANSIENT_FAILURE_TTL_S` at most: long enough that a resumed or repeated
    run does not hammer a broken site, short enough that tomorrow's run tries again.
    """
    lasting = bool(_LASTING.match(failure.reason)) and failure.status not in (408, 429)
    return ttl if lasting else min(ttl, TRANSIENT_FAILURE_TTL_S)


# ---------------------------------------------------------------- searches


class CachedProvider(SearchProvider):
    """A search provider in front of the store: cached answers first, every answer kept.

    ``on_answer(provider, query, hits, cached)`` is told of every answer (the run
    record). ``cache=False`` keeps the provider's answers out of the cache (the
    ``local`` provider, whose index changes with the folder), ``read=False`` is
    ``--refresh``; ``max_age_s`` None takes any age as fresh (a resumed run).
    """

    name = "cached"  # replaced per instance by the wrapped provider's name

    def __init__(
        self,
        inner: SearchProvider,
        store: Store,
        *,
        max_age_s: float | None,
        read: bool = True,
        cache: bool = True,
        on_answer: Callable[[str, str, list[SearchHit], bool], None] | None = None,
    ) -> None:
        super().__init__(inner.settings, inner.client, env={})
        # The wrapper must answer to the provider's name in hits, failures and events.
        self.__dict__["name"] = inner.name
        self.inner = inner
        self.keys = inner.keys  # so redact() hides the wrapped provider's keys
        self.store = store
        self.max_age_s = max_age_s
        self.read = read
        self.cache = cache
        self.on_answer = on_answer
        #: Answers served from the cache.
        self.hits_served = 0

    @classmethod
    def for_run(
        cls,
        provider: SearchProvider,
        store: Store,
        settings: Settings,
        *,
        resumed: bool = False,
        on_answer: Callable[[str, str, list[SearchHit], bool], None] | None = None,
    ) -> CachedProvider:
        """``provider`` behind the store with a run's rules: ``--cache-ttl``, ``--refresh``
        (a resumed run takes any age), and no caching of the ``local`` and ``library``
        providers, whose indexes change with the folder and every run, and cost nothing
        to search."""
        from sleuth.search.library import LibrarySearch
        from sleuth.search.local import LocalSearch

        return cls(
            provider,
            store,
            max_age_s=None if resumed else settings.cache_ttl,
            read=resumed or not settings.refresh,
            cache=not isinstance(provider, LocalSearch | LibrarySearch),
            on_answer=on_answer,
        )

    def params(self, limit: int) -> dict[str, Any]:
        """What, besides provider and query, changes the answer (part of the cache key)."""
        return {"limit": limit, "endpoint": getattr(self.inner, "base_url", None)}

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """The cached answer when fresh, else the provider's (then cached)."""
        params = self.params(limit)
        if self.cache and self.read:
            try:
                found = await asyncio.to_thread(
                    self.store.get_search, self.name, query, params, self.max_age_s
                )
            except Exception as exc:  # a broken cache costs a search, never the run
                log_store_failure(log, "search cache lookup failed", exc)
                found = None
            if found is not None:
                self.hits_served += 1
                timeline.note(outcome="cached")
                self._tell(query, found, cached=True)
                return found
        hits = await self.inner.search(query, limit=limit)
        if self.cache:
            try:
                await asyncio.to_thread(self.store.put_search, self.name, query, params, hits)
            except Exception as exc:
                log_store_failure(log, "search cache write failed", exc)
        self._tell(query, hits, cached=False)
        return hits

    def _tell(self, query: str, hits: list[SearchHit], *, cached: bool) -> None:
        if self.on_answer is not None:
            self.on_answer(self.name, query, hits, cached)

    def redact(self, text: str) -> str:
        """The wrapped provider's redaction (its API keys replaced by ``***``)."""
        return self.inner.redact(text)


# ---------------------------------------------------------------- pages


def _cut_at(text: str) -> int | None:
    """The ``--max-chars`` a cached text was truncated at, or None if it is whole."""
    match = _TRUNCATED.search(text[-80:])
    return int(match.group(1)) if match else None


class StorePageCache:
    """The fetcher's page cache, kept in the store under each URL's canonical form.

    ``max_age_s`` None: every entry is fresh (a resumed run). ``read=False``
    (``--refresh``) makes every lookup miss; results are still stored.
    """

    def __init__(
        self, store: Store, *, max_age_s: float | None, max_chars: int, read: bool = True
    ) -> None:
        self.store = store
        self.max_age_s = max_age_s
        self.max_chars = max_chars
        self.read = read

    @classmethod
    def for_run(cls, store: Store, settings: Settings, *, resumed: bool = False) -> StorePageCache:
        """The page cache with a run's rules (``--cache-ttl``, ``--refresh``, ``--max-chars``;
        a resumed run takes any age)."""
        return cls(
            store,
            max_age_s=None if resumed else settings.cache_ttl,
            max_chars=settings.max_chars,
            read=resumed or not settings.refresh,
        )

    def lookup(self, url: str) -> CachedResult | None:
        """The cached result for ``url`` (blocking; :meth:`get` runs it in a thread)."""
        if not self.read:
            return None
        entry = self.store.get_page(canonicalize(url))
        if entry is None:
            return None
        age = self.store.clock() - entry.fetched_at
        if not entry.ok:
            failure = FetchFailure(url=url, reason=entry.failure or "failed", status=entry.status)
            ttl = None if self.max_age_s is None else failure_ttl(failure, self.max_age_s)
            return CachedResult(failure, fresh=ttl is None or age <= ttl, public=entry.public)
        text = entry.text or ""
        cut = _cut_at(text)
        if cut is not None and cut < self.max_chars:
            return None  # cut shorter than this run wants: fetch the whole page again
        text, truncated = truncate_text(text, self.max_chars)
        page = entry.to_page().model_copy(
            update={"url": url, "text": text, "truncated": truncated or cut is not None}
        )
        fresh = self.max_age_s is None or age <= self.max_age_s
        return CachedResult(
            page,
            fresh=fresh,
            public=entry.public,
            validators=Validators(entry.etag, entry.last_modified),
        )

    async def get(self, url: str) -> CachedResult | None:
        """The cached result for ``url``, fresh or stale; None when never fetched."""
        return await asyncio.to_thread(self.lookup, url)

    async def put(
        self,
        url: str,
        result: Page | FetchFailure,
        validators: Validators,
        *,
        public: bool | None = None,
    ) -> None:
        """Keep a fetch result under ``url``'s canonical form, and where it came from."""
        key = canonicalize(url)
        if isinstance(result, Page):
            entry = CachedPage.from_page(
                result,
                etag=validators.etag,
                last_modified=validators.last_modified,
                fetched_at=self.store.clock(),
                public=public,
            )
            entry = entry.model_copy(update={"canonical_url": key, "url": url})
        else:
            entry = CachedPage.from_failure(
                result, key, fetched_at=self.store.clock(), public=public
            )
        await asyncio.to_thread(self.store.put_page, entry)

    async def revalidated(self, url: str, validators: Validators) -> None:
        """A 304 answer: the cached page of ``url`` is fresh again."""
        await asyncio.to_thread(
            self.store.mark_revalidated,
            canonicalize(url),
            etag=validators.etag,
            last_modified=validators.last_modified,
        )


# ---------------------------------------------------------------- local documents


class DocumentReader:
    """Reads ``file://`` sources from the documents index, never from the disk or network.

    Only files inside ``folder`` (the ``--docs`` folder, resolved) that are in the
    index are served; anything else is refused as a failure.
    """

    def __init__(self, store: Store, folder: Path, *, max_chars: int) -> None:
        self.store = store
        self.folder = Path(folder).expanduser().resolve()
        self.max_chars = max_chars

    def load(self, url: str) -> Page | FetchFailure:
        """The indexed document at ``url`` (blocking; :meth:`read` runs it in a thread)."""
        path = path_from_file_url(url)
        if path is None:
            return FetchFailure(url=url, reason="blocked: not a local file URL")
        try:
            inside = path.resolve().is_relative_to(self.folder)
        except (OSError, RuntimeError):
            inside = False
        if not inside:
            return FetchFailure(url=url, reason="blocked: outside the documents folder")
        doc = get_doc(self.store, path)
        if doc is None:
            return FetchFailure(url=url, reason="not in the documents index")
        text, truncated = truncate_text(doc.text, self.max_chars)
        return Page(
            url=url,
            final_url=url,
            canonical_url=canonicalize(url),
            title=doc.title or path.name,
            text=text,
            content_type=_KINDS.get(doc.kind, "text/plain"),
            status=200,
            truncated=truncated,
            engine="local",
        )

    async def read(self, url: str) -> Page | FetchFailure:
        """The indexed document at ``url``, or why it cannot be read."""
        return await asyncio.to_thread(self.load, url)


# ---------------------------------------------------------------- LLM replies


class StoreReplyCache:
    """The LLM client's reply cache (``sleuth.llm.client.ReplyCache``) in the store.

    The client calls it synchronously; each call is one short SQLite statement.
    Only what rebuilds the reply is kept: text, model, token counts, finish reason.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> LLMReply | None:
        """The reply stored under ``key`` (a ``cache_key``), or None."""
        from sleuth.llm.client import LLMReply

        try:
            hit = self.store.get_llm(key)
        except Exception as exc:  # a broken cache costs a model call, never the run
            log_store_failure(log, "LLM cache lookup failed", exc)
            return None
        if hit is None:
            return None
        usage = hit.usage
        return LLMReply(
            text=hit.reply,
            model=hit.model or str(usage.get("model", "")),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=usage.get("finish_reason"),
            estimated=bool(usage.get("estimated", False)),
        )

    def put(self, key: str, reply: LLMReply) -> None:
        """Keep ``reply`` under ``key``."""
        usage = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "finish_reason": reply.finish_reason,
            "estimated": reply.estimated,
        }
        try:
            self.store.put_llm(key, reply.text, usage, model=reply.model)
        except Exception as exc:
            log_store_failure(log, "LLM cache write failed", exc)
