"""The stages as a driver calls them: each takes the run's context and typed records.

Each step runs one stage of :mod:`sleuth.stages` (or a service: search, fetch) for one
run: with or without a model, recording what it did in the run record and what went
wrong in ``ctx.failures``, and telling the progress stream. The quick driver
(:mod:`sleuth.pipeline.quick`) calls them in order; agent mode's ``--report`` calls the
read, write and check steps on the pages the agent read. Writing and checking are two
steps: :func:`write_stage` gives a :class:`Draft`, :func:`check_stage` keeps the citations
that hold, and :func:`report_stage` puts the report together.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from sleuth.lang import labels_for
from sleuth.llm.run import RunLLM
from sleuth.models import (
    Candidate,
    CitationCheck,
    Failure,
    FetchFailure,
    Page,
    Plan,
    Report,
    SearchHit,
    Source,
    Stats,
)
from sleuth.pipeline.cached import CachedProvider
from sleuth.pipeline.context import RunContext
from sleuth.pipeline.gather import Gathered, PageCheck, Waits, gather_pages
from sleuth.progress import Event
from sleuth.search import build_providers, run_searches
from sleuth.search.local import provider_groups
from sleuth.settings import Settings
from sleuth.stages.check import check_citations, evidence_of, footer
from sleuth.stages.plan import llm_plan, make_plan, whole_question
from sleuth.stages.rank import rank
from sleuth.stages.read import best_passages
from sleuth.stages.relevance import Relevance
from sleuth.stages.select import select_candidates
from sleuth.stages.write import (
    Confidence,
    confidence,
    render_llm_markdown,
    render_markdown,
    write_body,
)

__all__ = ["Draft", "check_stage", "fetch_stage", "llm_stats", "plan_stage", "rank_stage",
           "read_sources", "read_stage", "report_stage", "search_stage", "write_stage"]


def read_sources(pages: list[tuple[Candidate, Page]], queries: list[str],
                 settings: Settings) -> list[Source]:
    """Number the read pages in rank order and pick their best passages."""
    return [
        Source(id=n, url=page.final_url or candidate.url, title=page.title or candidate.title,
               quality=candidate.quality, quality_score=candidate.quality_score,
               score=candidate.score, passages=best_passages(page.text, queries, settings.passages))
        for n, (candidate, page) in enumerate(pages, start=1)
    ]



async def plan_stage(ctx: RunContext) -> Plan:
    """Stage 1: the queries to search (with a model, its first queries are searched here)."""
    if ctx.llm is None:
        return make_plan(ctx.topic, ctx.settings.depth)

    async def search(queries: list[str]) -> list[SearchHit]:
        return await search_stage(ctx, Plan(question=ctx.topic, queries=queries, planner="llm"))

    return await llm_plan(ctx.topic, ctx.settings.depth, ctx.llm, search)


def results_wanted(settings: Settings) -> int:
    """Hits asked per query: ``--results-per-query``, or enough to fill ``--max-sources``
    with a spare half for the pages that fail or are off-topic, when that is more
    (issue 23: ``--max-sources 10`` cited 8 when every query asked for 8 hits)."""
    return min(50, max(settings.results_per_query, math.ceil(settings.max_sources * 1.5)))


async def search_stage(ctx: RunContext, plan: Plan,
                       lead: asyncio.Future[list[SearchHit]] | None = None) -> list[SearchHit]:
    """Stage 2: every query through the providers; failures go to ``ctx.failures``.

    Queries already searched in this run (the LLM planner's first round) are not
    searched again; the hits of every query of ``plan`` are returned. ``lead``, when
    given, is resolved as soon as one query holding the whole question has hits (see
    :func:`_search_with_lead`), while the others are still being searched (so
    fetching can start).
    """
    settings = ctx.settings
    queries = [q for q in dict.fromkeys(plan.queries) if q not in ctx.searched]
    # --max-time bounds the searches too: none starts after it, none runs past it.
    left = ctx.budget.seconds_left()
    timeout = settings.search_timeout if left is None else min(settings.search_timeout, left)
    if timeout <= 0:
        queries = []
    # Every provider name and key is checked before anything is said or sent.
    providers = build_providers(settings, ctx.services.search_client())
    recorder = ctx.record.recorder
    providers = ctx.session.wrap_providers(providers, recorder.hits if recorder else None)
    ctx.cached_providers += [p for p in providers if isinstance(p, CachedProvider)]
    if recorder is not None:
        recorder.plan(plan)
        ctx.passage_queries = [ctx.topic, *plan.queries]
    ctx.emit(Event("plan", f"{len(queries)} queries", {"queries": queries}))
    groups = provider_groups(providers)

    async def search(batch: list[str]) -> list[tuple[list[SearchHit], list[Any]]]:
        # The documents folder is searched alongside the web, not as its fallback.
        return await asyncio.gather(*(
            run_searches(batch, group, limit=results_wanted(settings),
                         timeout=timeout, on_event=ctx.emit)
            for group in groups))

    answers: _Answers = []
    if lead is not None and len(queries) > 1:
        answers = await _search_with_lead(search, queries, lead)
    elif queries:
        answers = await search(queries)
    hits = [hit for found, _ in answers for hit in found]
    failures = [failure for _, failed in answers for failure in failed]
    ctx.failures += [
        Failure(url="", reason=f"{f.provider} search for “{f.query}” failed: {f.reason}",
                stage="search") for f in failures]
    ctx.searches += len({(h.provider, h.query) for h in hits}) + len(failures)
    for query in queries:
        ctx.searched[query] = [h for h in hits if h.query == query]
    return [hit for query in dict.fromkeys(plan.queries) for hit in ctx.searched.get(query, [])]


_Answers = list[tuple[list[SearchHit], list[Any]]]


async def _search_with_lead(search: Callable[[list[str]], Awaitable[_Answers]],
                            queries: list[str], lead: asyncio.Future[list[SearchHit]]
                            ) -> _Answers:
    """Search every query; resolve ``lead`` with the hits of the first query to answer
    among those that hold the whole question (it, and its templated variants).

    Those rank the same pages as the question itself (the fragments of a split
    question do not: ranking their hits first cited more off-topic pages), so
    fetching waits only for the quickest of them.
    """
    whole = whole_question(queries)
    tasks = [asyncio.ensure_future(search([query])) for query in whole]
    rest = [query for query in queries if query not in whole]
    others = asyncio.ensure_future(search(rest)) if rest else None
    try:
        for next_answer in asyncio.as_completed(tasks):
            hits = [hit for found, _ in await next_answer for hit in found]
            if hits and not lead.done():
                lead.set_result(hits)
        if not lead.done():
            lead.set_result([])
        answers = [answer for task in tasks for answer in task.result()]
        return answers + (await others if others is not None else [])
    finally:
        for task in [*tasks, others]:
            if task is not None:
                task.cancel()


async def rank_stage(ctx: RunContext, plan: Plan, hits: list[SearchHit]) -> list[Candidate]:
    """Stage 3: candidates in the order they should be fetched.

    With a model, its picks come first, then the quality ranking's order (one select
    call per round of queries; no query or result is asked about twice in a run).
    """
    if ctx.llm is None:
        candidates, picked = rank(hits, ctx.rules), 0
    else:
        candidates, picked = await select_candidates(ctx.llm, ctx.topic, plan.queries, hits,
                                                     ctx.rules, picked=ctx.picks,
                                                     shown=ctx.shown)
    chosen = f" ({picked} chosen by the model)" if picked else ""
    ctx.emit(Event("rank", f"{len(candidates)} candidate sources{chosen}",
                   {"candidates": len(candidates), "picked": picked}))
    return candidates


async def fetch_stage(ctx: RunContext, candidates: list[Candidate],
                      more: asyncio.Future[list[Candidate]] | None = None) -> Gathered:
    """Stage 4: fetch and extract the best candidates, pages already in the store first.

    With a model, each page is summarised as soon as it arrives (``ctx.reader``).
    ``more``: a fuller ranking still on its way (see :func:`gather_pages`).
    """
    reader = ctx.page_reader()
    session, recorder = ctx.session, ctx.record.recorder
    if recorder is not None:
        recorder.ranking(candidates)
    accept: PageCheck | None = reader.judge if reader else None
    if accept is not None and reader is not None and recorder is not None:
        accept = recorder.summaries(accept, reader.summaries)
    fetcher = await ctx.services.fetcher()
    hits_before = fetcher.cache_hits
    # Cached pages meet this run's URL rules like fetched ones (the fetcher's check).
    known = await session.fresh_results(candidates, fetcher.usable, topic=ctx.topic,
                                        run_id=ctx.run_id)
    session.check_store()  # a damaged store ends the run before any page is fetched
    gathered = await gather_pages(candidates, fetcher, ctx.settings.max_sources, ctx.emit,
                                  ctx.budget, known=known,
                                  on_result=_recording(ctx),
                                  accept=accept, more=more,
                                  waits=Waits(top_s=ctx.settings.top_wait),
                                  gate=Relevance(ctx.topic))
    if recorder is not None and more is not None and more.done() and not more.cancelled():
        recorder.ranking(more.result())
    ctx.cached_fetches += gathered.cached + fetcher.cache_hits - hits_before
    ctx.failures += gathered.failures
    # --respect-robots: a site whose robots.txt could not be read was read anyway; say so
    # (once a run: the fetcher, and its notes, may serve several).
    notes = {origin: note for origin, note in fetcher.robots_notes.items()
             if origin not in ctx.robots_told}
    ctx.robots_told.update(notes)
    ctx.failures += [Failure(url=f"{origin}/robots.txt", reason=f"{note}; every page allowed")
                     for origin, note in notes.items()]
    if gathered.stopped_by:
        ctx.failures.append(Failure(url="", reason=gathered.stopped_by, stage="budget"))
    return gathered


def _recording(ctx: RunContext) -> Callable[[Candidate, Page | FetchFailure], None] | None:
    """What tells the run record of each page as it arrives (with its best passages)."""
    recorder = ctx.record.recorder
    if recorder is None:
        return None

    def fetched(candidate: Candidate, result: Page | FetchFailure) -> None:
        passages = (best_passages(result.text, ctx.passage_queries, ctx.settings.passages)
                    if isinstance(result, Page) else [])
        recorder.fetched(candidate, result, passages)

    return fetched


async def read_stage(ctx: RunContext, plan: Plan, gathered: Gathered) -> list[Source]:
    """Stage 5: what each page says about the question.

    Both pipelines number the pages and pick their passages; with a model each
    source also gets its summary (made while fetching, or here for pages that
    arrived another way), and pages with nothing relevant are left out.
    """
    pages = gathered.pages
    reader = ctx.page_reader()
    if reader is not None:
        pages, dropped = await reader.read_all(pages)
        ctx.failures += [Failure(url=c.url, reason=why, stage="read") for c, why in dropped]
    sources = read_sources(pages, [ctx.topic, *plan.queries], ctx.settings)
    if reader is not None:
        sources = reader.apply(sources, pages)
    ctx.emit(Event("read", f"{len(sources)} sources read", {"sources": len(sources)}))
    return sources


def llm_stats(llm: RunLLM | None) -> dict[str, Any]:
    """The model's share of a run's Stats: calls, tokens, estimated cost."""
    if llm is None:
        return {}
    usage = llm.usage
    return {"llm_calls": usage.calls, "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens, "cached_llm_calls": usage.cached_calls,
            "cost_usd": round(usage.cost_usd, 6) if usage.cost_usd is not None else None}


@dataclass(frozen=True)
class Draft:
    """The report before it is put together: its confidence, and the model's body
    (None: the template report), with what the citation check did to it once checked."""

    level: Confidence
    reason: str
    body: str | None = None
    citations: CitationCheck | None = None


async def write_stage(ctx: RunContext, sources: list[Source]) -> Draft:
    """Stage 6: with a model, the report body it writes (citations unchecked yet)."""
    level, reason = confidence(sources)
    body = None
    if ctx.llm is not None and sources:
        body = await write_body(ctx.llm, ctx.topic, sources, ctx.settings.words)
    return Draft(level, reason, body)


async def check_stage(ctx: RunContext, draft: Draft, sources: list[Source],
                      gathered: Gathered) -> Draft:
    """Stage 7: the model's body with only the citations that hold (``--verify``)."""
    if draft.body is None or ctx.llm is None:
        return draft
    urls, evidence = evidence_of(sources, gathered.pages)
    body, citations = await check_citations(
        draft.body, ids={s.id for s in sources}, urls=urls, evidence=evidence,
        method=ctx.settings.verify, llm=ctx.llm, language=ctx.llm.language)
    return replace(draft, body=body, citations=citations)


def report_stage(ctx: RunContext, plan: Plan, sources: list[Source], gathered: Gathered,
                 draft: Draft) -> Report:
    """The report: the checked body in sleuth's frame, or the template; and the run's stats."""
    level, reason, llm = draft.level, draft.reason, ctx.llm
    if draft.body is not None and draft.citations is not None and llm is not None:
        markdown = render_llm_markdown(ctx.topic, draft.body, sources, ctx.failures, level,
                                       reason, labels_for(llm.language),
                                       footer(draft.citations, llm.language))
    else:
        markdown = render_markdown(ctx.topic, sources, ctx.failures, level, reason)
    written = draft.citations is not None
    report = Report(
        topic=ctx.topic, depth=ctx.settings.depth, queries=plan.queries, sources=sources,
        failures=ctx.failures, confidence=level, confidence_reason=reason, markdown=markdown,
        stats=Stats(searches=ctx.searches, fetches=gathered.attempted,
                    elapsed_s=round(time.monotonic() - ctx.started, 3), **llm_stats(llm)),
        run_id=ctx.run_id, planner=plan.planner,
        # A model call cut by --max-time after gathering (the report, the check) says so too.
        stopped_by=gathered.stopped_by or (llm.cut_by if llm is not None else None),
        writer="llm" if written else "template", citations=draft.citations,
    )
    ctx.emit(Event("report", f"report with {len(sources)} sources", {"confidence": level}))
    return report
