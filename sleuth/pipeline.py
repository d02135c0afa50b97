"""The research pipeline: plan → search → rank → fetch → read → write.

One async function, :func:`research`; the CLI and :func:`research_sync` call into it.
Every stage takes the typed records of the one before it; failures of single
searches and pages are recorded in the report, never raised.
"""

from __future__ import annotations

import asyncio
import time
import unicodedata
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sleuth.budget import Budget
from sleuth.errors import ConfigError
from sleuth.fetch import Fetcher
from sleuth.models import (
    Candidate,
    Failure,
    FetchFailure,
    Page,
    Plan,
    Report,
    SearchHit,
    Source,
    Stats,
)
from sleuth.plan import make_plan
from sleuth.progress import Event, ProgressCallback, no_progress
from sleuth.rank import QualityRule, load_rules, rank
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
class Gathered:
    """Pages in candidate order, what went wrong along the way, and why gathering stopped."""

    pages: list[tuple[Candidate, Page]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    attempted: int = 0
    stopped_by: str | None = None


async def gather_pages(candidates: list[Candidate], fetcher: Fetcher, want: int,
                       on_event: ProgressCallback = no_progress,
                       budget: Budget | None = None) -> Gathered:
    """Fetch the best candidates until ``want`` pages are read or a budget is reached.

    A few candidates beyond ``want`` are fetched at once so failures cost no extra
    round trip; a failed candidate is replaced by the next in line; once ``want``
    pages are in, stragglers are not waited for.
    """
    out = Gathered()
    queue = list(candidates)
    window = want + max(2, want // 2)
    running: dict[asyncio.Task[Page | FetchFailure], Candidate] = {}
    done: dict[str, Page] = {}

    def launch() -> None:
        while queue and len(running) + len(done) < window:
            if budget is not None and (reason := budget.exhausted()):
                out.stopped_by = reason
                return
            candidate = queue.pop(0)
            out.attempted += 1
            if budget is not None:
                budget.charge_fetch()
            on_event(Event("fetch_start", f"fetching {candidate.url}", {"url": candidate.url}))
            running[asyncio.ensure_future(fetcher.fetch(candidate.url))] = candidate

    def settle(task: asyncio.Task[Page | FetchFailure]) -> None:
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
    try:
        while running and len(done) < want:
            timeout = budget.seconds_left() if budget is not None else None
            finished, _ = await asyncio.wait(running, timeout=timeout,
                                             return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                settle(task)
            # Only the time budget cuts pages already in flight; the others stop launches.
            if budget is not None and budget.seconds_left() == 0:
                out.stopped_by = budget.exhausted()
                break
            launch()
    finally:
        why = out.stopped_by or "enough sources were read first"
        for task, candidate in running.items():
            task.cancel()
            out.failures.append(Failure(url=candidate.url, reason=f"not waited for: {why}"))
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


@dataclass
class RunContext:
    """What the stages of one run share.

    ``store`` (the run store) and ``llm`` (a model client) are None when they are
    off; each stage then takes its no-store / no-LLM path.
    """

    topic: str
    settings: Settings
    emit: ProgressCallback
    budget: Budget
    rules: tuple[QualityRule, ...]
    started: float = field(default_factory=time.monotonic)
    store: Any | None = None
    llm: Any | None = None
    run_id: str | None = None
    failures: list[Failure] = field(default_factory=list)
    searches: int = 0


@asynccontextmanager
async def open_run(topic: str, settings: Settings,
                   emit: ProgressCallback) -> AsyncIterator[RunContext]:
    """Set up what a run needs (quality rules, budget; later the store and the model)."""
    yield RunContext(topic=topic, settings=settings, emit=emit, budget=Budget(settings),
                     rules=load_rules(settings.quality_rules))


async def plan_stage(ctx: RunContext) -> Plan:
    """Stage 1: the queries to search."""
    return make_plan(ctx.topic, ctx.settings.depth)


async def search_stage(ctx: RunContext, plan: Plan) -> list[SearchHit]:
    """Stage 2: every query through the providers; failures go to ``ctx.failures``."""
    settings = ctx.settings
    async with make_search_client(settings) as client:
        # Every provider name and key is checked before anything is said or sent.
        providers = build_providers(settings, client)
        ctx.emit(Event("plan", f"{len(plan.queries)} queries", {"queries": plan.queries}))
        hits, failures = await run_searches(
            plan.queries, providers, limit=settings.results_per_query,
            timeout=settings.search_timeout, on_event=ctx.emit)
    ctx.failures += [
        Failure(url="", reason=f"{f.provider} search for “{f.query}” failed: {f.reason}",
                stage="search") for f in failures]
    ctx.searches = len({(h.provider, h.query) for h in hits}) + len(failures)
    return hits


async def rank_stage(ctx: RunContext, plan: Plan, hits: list[SearchHit]) -> list[Candidate]:
    """Stage 3: candidates in the order they should be fetched."""
    candidates = rank(hits, ctx.rules)
    ctx.emit(Event("rank", f"{len(candidates)} candidate sources",
                   {"candidates": len(candidates)}))
    return candidates


async def fetch_stage(ctx: RunContext, candidates: list[Candidate]) -> Gathered:
    """Stage 4: fetch and extract the best candidates."""
    async with Fetcher(ctx.settings) as fetcher:
        gathered = await gather_pages(candidates, fetcher, ctx.settings.max_sources, ctx.emit,
                                      ctx.budget)
    ctx.failures += gathered.failures
    if gathered.stopped_by:
        ctx.failures.append(Failure(url="", reason=gathered.stopped_by, stage="budget"))
    return gathered


async def read_stage(ctx: RunContext, plan: Plan, gathered: Gathered) -> list[Source]:
    """Stage 5: what each page says about the question."""
    sources = read_sources(gathered.pages, [ctx.topic, *plan.queries], ctx.settings)
    ctx.emit(Event("read", f"{len(sources)} sources read", {"sources": len(sources)}))
    return sources


async def write_stage(ctx: RunContext, plan: Plan, sources: list[Source],
                      gathered: Gathered) -> Report:
    """Stage 6: the report."""
    level, reason = confidence(sources)
    report = Report(
        topic=ctx.topic, depth=ctx.settings.depth, queries=plan.queries, sources=sources,
        failures=ctx.failures, confidence=level, confidence_reason=reason,
        markdown=render_markdown(ctx.topic, sources, ctx.failures, level, reason),
        stats=Stats(searches=ctx.searches, fetches=gathered.attempted,
                    elapsed_s=round(time.monotonic() - ctx.started, 3)),
        run_id=ctx.run_id, planner=plan.planner, stopped_by=gathered.stopped_by,
    )
    ctx.emit(Event("report", f"report with {len(sources)} sources", {"confidence": level}))
    return report


async def research(question: str, *, settings: Settings | None = None,
                   on_event: ProgressCallback | None = None, **options: Any) -> Report:
    """Research ``question`` and return a cited :class:`~sleuth.models.Report`.

    ``options`` are settings fields (``depth=3``, ``max_sources=8``, ``search="searxng"``,
    ...) applied over ``settings`` (or over the environment when ``settings`` is None).
    Raises :class:`~sleuth.errors.ConfigError` for bad input; a run in which nothing
    could be read still returns a report, with an empty ``sources`` list and its gaps.
    """
    topic = clean_question(question)
    if settings is None:
        settings = load_settings(options)
    elif options:
        settings = load_settings({**settings.model_dump(), **options}, env={})
    async with open_run(topic, settings, on_event or no_progress) as ctx:
        plan = await plan_stage(ctx)
        hits = await search_stage(ctx, plan)
        candidates = await rank_stage(ctx, plan, hits)
        gathered = await fetch_stage(ctx, candidates)
        sources = await read_stage(ctx, plan, gathered)
        return await write_stage(ctx, plan, sources, gathered)


def research_sync(question: str, **kwargs: Any) -> Report:
    """Blocking wrapper around :func:`research` for scripts and notebooks."""
    return asyncio.run(research(question, **kwargs))
