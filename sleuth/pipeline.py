"""The research pipeline: plan → search → rank → fetch → read → write.

One async function, :func:`research`; the CLI and :func:`research_sync` call into it.
Every stage takes the typed records of the one before it; failures of single
searches and pages are recorded in the report, never raised.
"""

from __future__ import annotations

import asyncio
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from sleuth.errors import ConfigError
from sleuth.fetch import Fetcher
from sleuth.models import Candidate, Failure, FetchFailure, Page, Report, Source, Stats
from sleuth.plan import make_plan
from sleuth.progress import Event, ProgressCallback, no_progress
from sleuth.rank import load_rules, rank
from sleuth.read import best_passages
from sleuth.search import build_providers, make_search_client, run_searches
from sleuth.settings import Settings, load_settings
from sleuth.write import confidence, render_markdown

MAX_QUESTION_CHARS = 2000


def clean_question(question: str) -> str:
    """The question with control characters removed; ConfigError if nothing usable is left."""
    if not isinstance(question, str):
        raise ConfigError("the question must be text")
    text = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in question)
    text = " ".join(text.split())
    if not text:
        raise ConfigError("the question is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise ConfigError(
            f"the question is {len(text)} characters long; the limit is {MAX_QUESTION_CHARS}")
    if not any(ch.isalnum() for ch in text):
        raise ConfigError("the question has no words in it")
    return text


@dataclass
class _Gathered:
    """Pages in candidate order, and what went wrong along the way."""

    pages: list[tuple[Candidate, Page]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    attempted: int = 0


async def gather_pages(candidates: list[Candidate], fetcher: Fetcher, want: int,
                       on_event: ProgressCallback = no_progress) -> _Gathered:
    """Fetch the best candidates until ``want`` pages are read.

    A few candidates beyond ``want`` are fetched at once so failures cost no extra
    round trip; a failed candidate is replaced by the next in line; once ``want``
    pages are in, stragglers are not waited for.
    """
    out = _Gathered()
    queue = list(candidates)
    window = want + max(2, want // 2)
    running: dict[asyncio.Task[Page | FetchFailure], Candidate] = {}
    done: dict[str, Page] = {}

    def launch() -> None:
        while queue and len(running) + len(done) < window:
            candidate = queue.pop(0)
            out.attempted += 1
            on_event(Event("fetch_start", f"fetching {candidate.url}", {"url": candidate.url}))
            running[asyncio.ensure_future(fetcher.fetch(candidate.url))] = candidate

    launch()
    try:
        while running and len(done) < want:
            finished, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                candidate = running.pop(task)
                result = task.result()
                if isinstance(result, Page):
                    done[candidate.canonical_url] = result
                    on_event(Event("fetched", f"read {result.title or candidate.url}",
                                   {"url": candidate.url, "chars": len(result.text)}))
                else:
                    out.failures.append(Failure(url=candidate.url, reason=result.reason))
                    on_event(Event("fetch_failed", f"{candidate.url}: {result.reason}",
                                   {"url": candidate.url, "reason": result.reason}))
            launch()
    finally:
        for task, candidate in running.items():
            task.cancel()
            out.failures.append(Failure(
                url=candidate.url, reason="not waited for: enough sources were read first"))
        if running:
            await asyncio.gather(*running, return_exceptions=True)
    out.pages = [(c, done[c.canonical_url]) for c in candidates if c.canonical_url in done]
    return out


def read_sources(pages: list[tuple[Candidate, Page]], queries: list[str],
                 settings: Settings) -> list[Source]:
    """Number the read pages in rank order and pick their best passages."""
    return [
        Source(id=n, url=page.final_url or candidate.url, title=page.title or candidate.title,
               quality=candidate.quality, quality_score=candidate.quality_score,
               score=candidate.score, passages=best_passages(page.text, queries, settings.passages))
        for n, (candidate, page) in enumerate(pages, start=1)
    ]


async def research(question: str, *, settings: Settings | None = None,
                   on_event: ProgressCallback | None = None, **options: Any) -> Report:
    """Research ``question`` and return a cited :class:`~sleuth.models.Report`.

    ``options`` are settings fields (``depth=3``, ``max_sources=8``, ``search="searxng"``,
    ...) applied over ``settings`` (or over the environment when ``settings`` is None).
    Raises :class:`~sleuth.errors.ConfigError` for bad input; a run in which nothing
    could be read still returns a report, with an empty ``sources`` list and its gaps.
    """
    started = time.monotonic()
    emit = on_event or no_progress
    topic = clean_question(question)
    if settings is None:
        settings = load_settings(options)
    elif options:
        settings = load_settings({**settings.model_dump(), **options}, env={})
    rules = load_rules(settings.quality_rules)
    plan = make_plan(topic, settings.depth)

    async with make_search_client(settings) as client:
        # Every provider name and key is checked before anything is said or sent.
        providers = build_providers(settings, client)
        emit(Event("plan", f"{len(plan.queries)} queries", {"queries": plan.queries}))
        hits, search_failures = await run_searches(
            plan.queries, providers, limit=settings.results_per_query,
            timeout=settings.search_timeout, on_event=emit)
    failures = [Failure(url="", reason=f"{f.provider} search for “{f.query}” failed: {f.reason}",
                        stage="search") for f in search_failures]
    candidates = rank(hits, rules)
    emit(Event("rank", f"{len(candidates)} candidate sources", {"candidates": len(candidates)}))

    async with Fetcher(settings) as fetcher:
        gathered = await gather_pages(candidates, fetcher, settings.max_sources, emit)
    failures += gathered.failures
    sources = read_sources(gathered.pages, [topic, *plan.queries], settings)
    emit(Event("read", f"{len(sources)} sources read", {"sources": len(sources)}))

    level, reason = confidence(sources)
    report = Report(
        topic=topic, depth=settings.depth, queries=plan.queries, sources=sources,
        failures=failures, confidence=level, confidence_reason=reason,
        markdown=render_markdown(topic, sources, failures, level, reason),
        stats=Stats(searches=_search_calls(hits, search_failures),
                    fetches=gathered.attempted, elapsed_s=round(time.monotonic() - started, 3)),
    )
    emit(Event("report", f"report with {len(sources)} sources", {"confidence": level}))
    return report


def _search_calls(hits: list[Any], failures: list[Any]) -> int:
    answered = {(h.provider, h.query) for h in hits}
    return len(answered) + len(failures)


def research_sync(question: str, **kwargs: Any) -> Report:
    """Blocking wrapper around :func:`research` for scripts and notebooks."""
    return asyncio.run(research(question, **kwargs))
