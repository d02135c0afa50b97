"""What the run store gives research: a run's record, and the caches runs may share.

:class:`StoreSession` (one per :class:`~sleuth.pipeline.context.Services`) opens the store
under ``--home`` (unless ``--no-store``), builds the cache adapters of
:mod:`sleuth.pipeline.cached` and keeps the ``--docs`` index. :class:`RunRecord` is one
run's record in it: :meth:`RunRecord.start` creates it (or takes back an interrupted one
for ``sleuth resume``), :class:`RunRecorder` appends each stage output to it as it
happens: the plan, every search answer, the ranking, every page or failure as it
arrives (URL, content hash, passages; the text itself is in the pages cache), the
sources read, and at the end the report.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import sqlite3
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sleuth.fetch.cache import CachedResult
from sleuth.models import Candidate, Failure, FetchFailure, Page, Plan, Report, SearchHit, Source
from sleuth.pipeline.cached import CachedProvider, DocumentReader, StorePageCache, StoreReplyCache
from sleuth.progress import Event
from sleuth.search.base import SearchProvider
from sleuth.search.library import LibrarySearch
from sleuth.search.local import LocalSearch
from sleuth.settings import Settings
from sleuth.store import IndexReport, Store, default_home, file_url, index_folder
from sleuth.store.cache import text_hash
from sleuth.store.db import StoreCorruptError, StoreError, log_store_failure
from sleuth.urls import canonicalize

__all__ = ["RunRecord", "RunRecorder", "StoreSession", "library_mode", "run_options"]

log = logging.getLogger(__name__)

#: Settings that are not part of what a run researched (a resumed run takes them anew).
_NOT_OPTIONS = frozenset({"output", "home", "format"})
FinalStatus = Literal["done", "failed", "interrupted"]
#: The LLM reader's verdict on a fetched page: None to use it, else why not.
PageCheck = Callable[[Candidate, Page], Awaitable[str | None]]
#: Whether a cached result may answer for a URL under the run's URL rules.
CacheCheck = Callable[[str, CachedResult], Awaitable[bool]]


def run_options(settings: Settings) -> dict[str, Any]:
    """The options to keep with a run: what was set, not defaults, so resume redoes it."""
    data = settings.model_dump(mode="json", exclude_unset=True)
    return {key: value for key, value in data.items() if key not in _NOT_OPTIONS}


class RunRecorder:
    """Appends one run's stage outputs to the store, in order, off the event loop.

    Every record is one short transaction on a single writer thread, so the stages
    never wait for the disk and the records keep the order they happened in.
    A record that cannot be written is logged, never raised.
    """

    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sleuth-run")

    def record(self, stage: str, payload: Any) -> None:
        """Queue one stage record (any JSON-able value or pydantic model)."""
        try:
            job = self._writer.submit(self.store.record_stage, self.run_id, stage, payload)
        except RuntimeError:  # closed: the run is over
            return
        job.add_done_callback(_log_failure)

    def plan(self, plan: Plan) -> None:
        """The queries to search."""
        self.record("plan", plan)

    def hits(self, provider: str, query: str, hits: list[SearchHit], cached: bool) -> None:
        """One provider's answer to one query."""
        self.record("hits", {"provider": provider, "query": query, "cached": cached, "hits": hits})

    def ranking(self, candidates: Sequence[Candidate]) -> None:
        """The candidates in the order they will be fetched."""
        self.record(
            "ranking",
            [
                {"url": c.url, "title": c.title, "quality": c.quality, "score": c.score}
                for c in candidates
            ],
        )

    def fetched(
        self, candidate: Candidate, result: Page | FetchFailure, passages: Sequence[str] = ()
    ) -> None:
        """A page read (URL, hash, its ``passages``; the text is in the pages cache) or a
        failure."""
        if isinstance(result, Page):
            self.record(
                "fetched",
                {
                    "url": candidate.url,
                    "final_url": result.final_url,
                    "title": result.title,
                    "hash": text_hash(result.text),
                    "chars": len(result.text),
                    "engine": result.engine,
                    "passages": list(passages),
                },
            )
        else:
            self.record(
                "fetch_failed",
                {"url": candidate.url, "reason": result.reason, "status": result.status},
            )

    def summaries(self, judge: PageCheck, summaries: Mapping[str, str]) -> PageCheck:
        """``judge`` (the LLM reader's) recording each page's summary as it is made."""

        async def recorded(candidate: Candidate, page: Page) -> str | None:
            reason = await judge(candidate, page)
            self.record(
                "summary",
                {
                    "url": candidate.url,
                    "kept": reason is None,
                    "reason": reason,
                    "summary": summaries.get(candidate.canonical_url),
                },
            )
            return reason

        return recorded

    def sources(self, sources: Sequence[Source]) -> None:
        """The sources read, numbered, with their passages and summaries."""
        self.record("sources", list(sources))

    def close(self) -> None:
        """Write every queued record, then stop the writer thread."""
        self._writer.shutdown(wait=True)


def _log_failure(job: Future[None]) -> None:
    error = None if job.cancelled() else job.exception()
    if error is not None:
        log_store_failure(log, "could not record a run stage", error)


@dataclass
class RunRecord:
    """One run's record in the store: its id and its recorder; every field None under
    ``--no-store``. Made by :meth:`start`, ended by :meth:`finish`."""

    run_id: str | None = None
    resumed: bool = False
    recorder: RunRecorder | None = None
    store: Store | None = None

    @classmethod
    def start(
        cls, store: Store | None, topic: str, settings: Settings, resume_id: str | None = None
    ) -> RunRecord:
        """Create the run record (or take back ``resume_id``'s); blocking.

        Raises :class:`~sleuth.errors.ConfigError` (one line) when the store cannot be
        written, and :class:`~sleuth.errors.RunNotFoundError` for an unknown ``resume_id``.
        """
        if store is None:
            return cls()
        record = cls(store=store)
        try:
            if resume_id is None:
                record.run_id = store.create_run(topic, run_options(settings))
            else:
                record.run_id = store.get_run(resume_id).id
                store.resume_run(record.run_id)
                record.resumed = True
        except sqlite3.DatabaseError as exc:  # e.g. the disk is full: one line, exit 2
            error = store._config_error(exc)
            if error is None:
                raise
            raise error from None
        record.recorder = RunRecorder(store, record.run_id)
        if record.resumed:
            record.recorder.record("resumed", {})
        return record

    def record(self, stage: str, payload: Any) -> None:
        """Append one stage output to the run record (no-op without a store)."""
        if self.recorder is not None:
            self.recorder.record(stage, payload)

    def finish(
        self, status: FinalStatus, report: Report | None = None, error: str | None = None
    ) -> None:
        """Write what is queued and mark the run finished (blocking); never raises."""
        try:
            if self.recorder is not None:
                if error:
                    self.recorder.record("error", {"error": error})
                self.recorder.close()
            if self.store is not None and self.run_id is not None:
                stats = None
                if report is not None:
                    stats = {
                        **report.stats.model_dump(mode="json"),
                        "sources": len(report.sources),
                        "tokens": report.stats.prompt_tokens + report.stats.completion_tokens,
                    }
                self.store.finish_run(
                    self.run_id, status, report.model_dump(mode="json") if report else None, stats
                )
        except Exception as exc:  # the report is the user's; a failing record must not cost it
            log_store_failure(log, f"could not finish run {self.run_id} in the store", exc)


def library_mode(settings: Settings) -> bool | None:
    """Whether a run searches the library: True with ``--library`` or ``--search library``;
    False with ``--no-library``, ``--no-store``, or in documents mode (a folder researched
    instead of the web); None: when it holds pages (see :meth:`StoreSession.holds_pages`)."""
    if settings.library or "library" in settings.search:
        return True
    if settings.no_library or settings.no_store:
        return False
    if settings.docs is not None and "search" not in settings.model_fields_set:
        return False
    return None


@dataclass
class StoreSession:
    """The store's part in research: the store, its caches and the documents index.

    Every field is None under ``--no-store`` (the documents index then lives in a
    temporary folder). ``resumed``: the caches take every entry as fresh (a resumed run
    reuses what it already did, whatever its age).
    """

    settings: Settings
    resumed: bool = False
    store: Store | None = None
    page_cache: StorePageCache | None = None
    reply_cache: StoreReplyCache | None = None
    #: Where the documents index lives: the store, or a temporary one under --no-store.
    docs_store: Store | None = None
    documents: DocumentReader | None = None
    index: IndexReport | None = None
    _scratch: Path | None = None

    @classmethod
    def open(cls, settings: Settings, *, resumed: bool = False) -> StoreSession:
        """Open the store under ``--home`` (unless ``--no-store``) and its caches; blocking.

        Raises :class:`~sleuth.errors.ConfigError` (one line) when the home cannot be used.
        """
        session = cls(settings, resumed)
        if settings.no_store:
            return session
        store = Store(settings.home or default_home())
        session.store = session.docs_store = store
        session.page_cache = StorePageCache.for_run(store, settings, resumed=resumed)
        session.reply_cache = StoreReplyCache(store)
        return session

    # ------------------------------------------------------------ documents

    def index_documents(self) -> list[Failure]:
        """Bring the ``--docs`` index up to date (blocking); the files it could not read.

        Only changed files are read again. Under ``--no-store`` the index lives in a
        temporary folder until the session closes. :attr:`index` says what was done.
        """
        folder = self.settings.docs
        if folder is None:
            return []
        if self.docs_store is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="sleuth-docs-"))
            self.docs_store = Store(self._scratch)
        # Here, not at the top: a run without --docs never loads them on its way to a search.
        from sleuth.extraction.documents import DocumentExtractor
        from sleuth.extraction.workers import extract_limits

        read = DocumentExtractor(extract_limits(self.settings))
        self.index = report = index_folder(self.docs_store, Path(folder), read)
        self.documents = DocumentReader(
            self.docs_store, report.folder, max_chars=self.settings.max_chars
        )
        return [
            Failure(url=file_url(path), reason=f"could not index: {reason}", stage="read")
            for path, reason in report.failed
        ]

    def index_record(self) -> dict[str, Any]:
        """What indexing did, as the run record keeps it."""
        report = self.index
        assert report is not None
        return {
            "folder": str(report.folder),
            "added": report.added,
            "updated": report.updated,
            "unchanged": report.unchanged,
            "removed": report.removed,
            "failed": report.failed,
        }

    def index_event(self) -> Event:
        """The progress event that says what indexing did."""
        report = self.index
        assert report is not None
        return Event(
            "info",
            f"documents: {report.indexed} indexed ({report.added} new, "
            f"{report.updated} changed, {len(report.failed)} unreadable)",
            {
                "folder": str(report.folder),
                "added": report.added,
                "updated": report.updated,
                "unchanged": report.unchanged,
                "removed": report.removed,
                "failed": len(report.failed),
            },
        )

    # ------------------------------------------------------------ searching

    def holds_pages(self) -> bool:
        """Whether the library holds any page now (blocking; asked at each search, so a
        batch's later questions search what its first ones read)."""
        if self.store is None:
            return False
        try:
            return self.store.library_size(at_most=1) > 0
        except StoreError as exc:  # a store that cannot be read costs the library, not the run
            log_store_failure(log, "could not read the library", exc)
            return False

    def wrap_providers(
        self,
        providers: list[SearchProvider],
        on_answer: Callable[[str, str, list[SearchHit], bool], None] | None,
        *,
        library: bool = False,
    ) -> list[SearchProvider]:
        """The providers with the store in front: cached answers, answers told to
        ``on_answer`` (the run record; None: no cache either, as without a record), and
        with ``library`` the library's provider (see :func:`library_mode`)."""
        wrapped: list[SearchProvider] = []
        library = library and self.store is not None
        if library and providers and not any(isinstance(p, LibrarySearch) for p in providers):
            providers = [*providers, LibrarySearch(self.settings, providers[0].client, env={})]
        for provider in providers:
            if isinstance(provider, LibrarySearch) and self.store is not None:
                provider.attach(self.store)
            if isinstance(provider, LocalSearch) and self.docs_store and self.index:
                provider.attach(self.docs_store, self.index)
            if self.store is None or on_answer is None:
                wrapped.append(provider)
                continue
            wrapped.append(
                CachedProvider.for_run(
                    provider, self.store, self.settings, resumed=self.resumed, on_answer=on_answer
                )
            )
        return wrapped

    async def fresh_results(
        self, candidates: Sequence[Candidate], usable: CacheCheck, *, topic: str, run_id: str | None
    ) -> dict[str, Page | FetchFailure]:
        """Fetch results the page cache holds fresh, by canonical URL (no page request).

        Only those ``usable`` (the run's fetcher's :meth:`~sleuth.fetch.Fetcher.usable`)
        lets answer under this run's URL rules; the others are left to the fetcher,
        which refuses them as it refuses any URL. Pages the last finished run of the
        same question (``topic``; not ``run_id``, this run) used as sources come first,
        then the rest in rank order: a rerun takes the very pages that run read (whose
        summaries are cached too), not others that merely rank above them.
        """
        cache, store = self.page_cache, self.store
        if cache is None or store is None:
            return {}

        def look() -> tuple[list[tuple[Candidate, CachedResult]], set[str]]:
            found = [
                (candidate, hit)
                for candidate in candidates
                if (hit := cache.lookup(candidate.url)) is not None and hit.fresh
            ]
            last = store.last_report(topic, exclude=run_id) or {}
            used = {canonicalize(str(s.get("url", ""))) for s in last.get("sources") or []}
            return found, used

        try:
            hits, used = await asyncio.to_thread(look)
        except Exception as exc:  # a broken cache costs downloads, never the run
            log_store_failure(log, "page cache lookup failed", exc)
            return {}
        found = {
            candidate.canonical_url: hit.result
            for candidate, hit in hits
            if await usable(candidate.url, hit)
        }
        first = {
            key: result
            for key, result in found.items()
            if isinstance(result, Page) and canonicalize(result.final_url) in used
        }
        return {**first, **found}

    @property
    def store_failure(self) -> StoreError | None:
        """The first failure of the store's file or disk so far (None: none)."""
        for store in (self.store, self.docs_store):
            if store is not None and store.failure is not None:
                return store.failure
        return None

    def check_store(self) -> None:
        """Raise :class:`~sleuth.errors.StoreCorruptError` once the store was found damaged.

        A full disk costs the run its record, not its report (see :meth:`close`); a
        damaged file is bad input, like a home that cannot be written: the run ends with
        the one-line message at the next stage that asks (before fetching, before
        writing the report, and at the end).
        """
        failure = self.store_failure
        if isinstance(failure, StoreCorruptError):
            raise failure

    # ------------------------------------------------------------ the end

    def close(self) -> None:
        """Close the stores this session opened, and say once if the disk failed them."""
        for store in {id(s): s for s in (self.store, self.docs_store) if s}.values():
            store.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        failure = self.store_failure
        if failure is not None and not isinstance(failure, StoreCorruptError):
            # Said once for the run, not once per page or record that could not be kept.
            log.warning("%s; this run's record and cache are incomplete", failure)
