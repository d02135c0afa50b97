"""The quick research: plan → search → rank → fetch → read → write → check, in one run.

One async function, :func:`research`; the CLI and :func:`research_sync` call into it.
It opens the run (:func:`~sleuth.pipeline.context.open_run`, with services of its
own) and calls the steps of :mod:`sleuth.pipeline.steps` in order, overlapping
searching and fetching: pages start downloading as soon as the first queries have
results. Failures of single searches and pages are recorded in the report, never raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from sleuth._sent import ON_SENT
from sleuth.models import Candidate, Plan, Report, SearchHit
from sleuth.pipeline.cached_gaps import cached_gaps
from sleuth.pipeline.context import (
    QuestionSearch,
    RunContext,
    Services,
    clean_question,
    open_run,
)
from sleuth.pipeline.gather import Gathered, settle_late
from sleuth.pipeline.searching import explain_empty_search, search_stage
from sleuth.pipeline.steps import (
    Fetching,
    answer_stage,
    check_stage,
    fetch_stage,
    plan_stage,
    rank_stage,
    read_stage,
    relates_to,
    report_stage,
    write_stage,
)
from sleuth.progress import ProgressCallback, no_progress
from sleuth.settings import Settings, with_options
from sleuth.stages.plan import llm_plan
from sleuth.stages.rank import rank

__all__ = ["research", "research_sync", "search_question"]


# -- the steps, each folded into the run's tally as it returns -----------------------------


async def _search(
    ctx: RunContext, plan: Plan, lead: asyncio.Future[list[SearchHit]] | None = None
) -> list[SearchHit]:
    """Search ``plan``; the hits of its queries, once the question's own search (if it
    is one of them and still out) is in too."""
    searched = await search_stage(ctx, plan, lead)
    ctx.tally.fold(searched)
    for task in searched.waiting:  # it folds its own hits and failures
        await task
    return ctx.tally.hits(searched.planned)


def _searcher(ctx: RunContext) -> Callable[[list[str]], Awaitable[list[SearchHit]]]:
    """The model planner's search: each round of queries it writes, searched as it comes."""

    async def search(queries: list[str]) -> list[SearchHit]:
        return await _search(ctx, Plan(question=ctx.topic, queries=queries, planner="llm"))

    return search


async def _rank(ctx: RunContext, plan: Plan, hits: list[SearchHit]) -> list[Candidate]:
    ranked = await rank_stage(ctx, plan, hits)
    ctx.tally.fold(ranked)
    return ranked.candidates


async def _fetch(
    ctx: RunContext,
    candidates: list[Candidate],
    more: asyncio.Future[list[Candidate]] | None = None,
    plan: Plan | None = None,
) -> Gathered:
    # With a model, pages still downloading when the sources are read finish while the
    # report is written: a rerun finds them in the store, the Gaps say they came late.
    # With the plan known (``plan``), each page's passages are picked as it arrives.
    read_queries = [ctx.topic, *plan.queries] if plan is not None else None
    how = Fetching(more=more, late=ctx.llm is not None, read_queries=read_queries)
    fetched = await fetch_stage(ctx, candidates, how)
    ctx.tally.fold(fetched)
    return fetched.gathered


def search_question(ctx: RunContext) -> Awaitable[None]:
    """Send the search for the question as asked now, as :attr:`RunContext.question_search`.

    The quick research with a model calls it before the model's SDK loads (else
    the first request would go out only after the SDK, about 0.3 s of CPU, and the planning
    call); the question is the query the no-LLM pipeline leads with, and GPT
    Researcher's first search too. Its hits join the first round the model ranks; no
    later step searches it again (the search stage waits for it instead). Returns what
    waits until its request is on the wire.
    """
    sent = asyncio.Event()
    token = ON_SENT.set(sent.set)
    try:  # the task copies the context: its request hook sees ON_SENT
        task = asyncio.ensure_future(
            _search(ctx, Plan(question=ctx.topic, queries=[ctx.topic], planner="llm"))
        )
    finally:
        ON_SENT.reset(token)
    task.add_done_callback(lambda _: sent.set())
    ctx.question_search = QuestionSearch(ctx.topic, task, sent)
    return ctx.question_search.on_the_wire()


async def plan_and_fetch(ctx: RunContext) -> tuple[Plan, Gathered]:
    """Stages 1–4 with a model, overlapped: fetch the first round while follow-ups are planned.

    The planner's first queries are searched and ranked (one select call), and
    those candidates are fetched and summarised while the model writes its follow-up
    queries and they are searched and ranked; the fuller ranking then orders what is
    not fetched yet (and the pages kept). The plan is complete before this returns, so
    the report lists every query; no query is selected twice, no page fetched twice.

    The question's own search (:func:`search_question`, sent
    before the model loaded) is the plan's first query and joins the first round; the
    planning call goes out once its request has (the model's client, opened only then,
    waited for it: :meth:`~sleuth.pipeline.context.Services.llm_client`).
    """
    assert ctx.llm is not None
    first: asyncio.Future[tuple[list[str], list[SearchHit]]] = (
        asyncio.get_running_loop().create_future()
    )
    asked = [ctx.question_search.query] if ctx.question_search is not None else []

    async def search(queries: list[str]) -> list[SearchHit]:
        round_ = list(dict.fromkeys([*asked, *queries] if not first.done() else queries))
        hits = await _search(ctx, Plan(question=ctx.topic, queries=round_, planner="llm"))
        if not first.done():
            first.set_result((round_, hits))
        return [hit for hit in hits if hit.query in queries]

    async def full_ranking() -> list[Candidate]:
        plan = _with_asked(await planning, asked)
        return await _rank(ctx, plan, await _search(ctx, plan))

    planning = asyncio.ensure_future(
        llm_plan(ctx.topic, ctx.settings.depth, ctx.llm, search, relates_to(ctx.topic))
    )
    fuller: asyncio.Future[list[Candidate]] | None = None
    try:
        racing: list[asyncio.Future[Any]] = [planning, first]
        await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        if not first.done() or planning.done():  # a rule-based plan, or nothing to overlap
            plan = _with_asked(await planning, asked)
            candidates = await _rank(ctx, plan, await _search(ctx, plan))
            return plan, await _fetch(ctx, candidates, plan=plan)
        queries, hits = first.result()
        early = await _rank(ctx, Plan(question=ctx.topic, queries=queries, planner="llm"), hits)
        fuller = asyncio.ensure_future(full_ranking())
        gathered = await _fetch(ctx, early, fuller)
        await fuller
        return _with_asked(await planning, asked), gathered
    finally:
        await _stop(planning, fuller, first)


def _with_asked(plan: Plan, asked: list[str]) -> Plan:
    """``plan`` with the queries searched before it was made first (each once)."""
    queries = list(dict.fromkeys([*asked, *plan.queries]))
    return plan if queries == plan.queries else plan.model_copy(update={"queries": queries})


async def search_and_fetch(ctx: RunContext, plan: Plan) -> Gathered:
    """Stages 2–4 without a model, overlapped: fetch the question's own results at once.

    The hits of the first query holding the whole question to answer (the question
    as asked, or a templated variant such as "… explained") are ranked and their best
    pages fetched at once; the ranking of every query's hits, when they are all in,
    then orders what is not fetched yet and the pages kept. The wait for the slower
    queries is thus spent downloading instead of idling.
    """
    lead: asyncio.Future[list[SearchHit]] = asyncio.get_running_loop().create_future()
    searching = asyncio.ensure_future(_search(ctx, plan, lead))

    async def full_ranking() -> list[Candidate]:
        return await _rank(ctx, plan, await searching)

    fuller: asyncio.Future[list[Candidate]] | None = None
    try:
        await asyncio.wait([lead, searching], return_when=asyncio.FIRST_COMPLETED)
        if searching.done():  # one query, or an error before any search
            return await _fetch(ctx, await full_ranking(), plan=plan)
        # Ranked directly: the rank event and record come with the full ranking.
        early = rank(lead.result(), ctx.rules)
        fuller = asyncio.ensure_future(full_ranking())
        gathered = await _fetch(ctx, early, fuller, plan)
        await fuller
        return gathered
    finally:
        await _stop(searching, fuller, lead)


async def _stop(*futures: asyncio.Future[Any] | None) -> None:
    """Cancel what is still pending and wait for it to end (a run's early exit)."""
    started = [f for f in futures if f is not None]
    for future in started:
        future.cancel()  # a no-op on a future that is done
    await asyncio.gather(*started, return_exceptions=True)


async def research(
    question: str,
    *,
    settings: Settings | None = None,
    on_event: ProgressCallback | None = None,
    resume_id: str | None = None,
    services: Services | None = None,
    **options: Any,
) -> Report:
    """Research ``question`` and return a cited :class:`~sleuth.models.Report`.

    ``options`` are settings fields (``depth=3``, ``max_sources=8``, ``search="searxng"``,
    ...) applied over ``settings`` (or over the environment when ``settings`` is None).
    Raises :class:`~sleuth.errors.ConfigError` for bad input; a run in which nothing
    could be read still returns a report, with an empty ``sources`` list and its gaps.
    ``resume_id`` continues that interrupted run (see ``sleuth resume``): what it
    already searched, fetched and asked a model is taken from the store.
    ``services``: what this run shares with others (see
    :func:`~sleuth.pipeline.batch.research_many`); by default it opens its own.
    ``mode="deep"`` (with ``breadth``, ``levels``) researches a tree of sub-questions and
    writes a long report (:mod:`sleuth.pipeline.deep`).
    """
    topic = clean_question(question)
    settings = with_options(settings, options)
    if settings.mode == "deep":
        from sleuth.pipeline.deep import deep_research

        return await deep_research(
            topic, settings=settings, on_event=on_event, resume_id=resume_id, services=services
        )
    async with open_run(
        topic,
        settings,
        on_event or no_progress,
        resume_id=resume_id,
        services=services,
        with_model=search_question,
    ) as ctx:
        if ctx.llm is None:
            plan = await plan_stage(ctx, _searcher(ctx))
            gathered = await search_and_fetch(ctx, plan)
        else:
            plan, gathered = await plan_and_fetch(ctx)
        try:
            return await _report(ctx, plan, gathered)
        finally:
            await settle_late(gathered)  # an early exit: cut what is still out


async def _report(ctx: RunContext, plan: Plan, gathered: Gathered) -> Report:
    """Stages 5–7 on the pages gathered: read, write, check; the report."""
    nothing = explain_empty_search(ctx)
    if nothing is not None:
        ctx.tally.fold(nothing)
    read = await read_stage(ctx, plan, gathered)
    ctx.tally.fold(read)
    sources = read.sources
    ctx.session.check_store()  # found damaged while fetching: no report on top
    sources, answer = await answer_stage(ctx, sources, gathered)
    ctx.record_stage("sources", sources)
    draft = await write_stage(ctx, sources, answer)
    draft = await check_stage(ctx, draft, sources, gathered)
    ctx.tally.failures += await settle_late(gathered)
    ctx.tally.failures += await cached_gaps(ctx, [s.url for s in sources])
    return ctx.done(report_stage(ctx, plan, sources, gathered, draft))


def research_sync(question: str, **kwargs: Any) -> Report:
    """Blocking wrapper around :func:`research` for scripts and notebooks."""
    return asyncio.run(research(question, **kwargs))
