"""The research pipeline: plan → search → rank → fetch → read → write.

One async function, :func:`research`; the CLI and :func:`research_sync` call into it.
Every stage takes the typed records of the one before it; failures of single
searches and pages are recorded in the report, never raised.
"""

from __future__ import annotations

import asyncio
import time
import unicodedata
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sleuth.budget import Budget
from sleuth.errors import ConfigError
from sleuth.fetch import Fetcher
from sleuth.lang import language_name
from sleuth.llm.run import RunLLM, open_llm
from sleuth.models import (
    Candidate,
    Failure,
    Page,
    Plan,
    Report,
    SearchHit,
    Source,
    Stats,
)
from sleuth.progress import Event, ProgressCallback, no_progress
from sleuth.research.gather import Gathered, PageCheck, gather_pages
from sleuth.research.recorder import StoreSession, documents_search
from sleuth.search import build_providers, make_search_client, run_searches
from sleuth.search.local import provider_groups
from sleuth.settings import Settings, load_settings
from sleuth.stages.plan import llm_plan, make_plan, whole_question
from sleuth.stages.rank import QualityRule, load_rules, rank
from sleuth.stages.read import PageReader, best_passages
from sleuth.stages.select import select_candidates
from sleuth.stages.write import confidence, llm_report, render_markdown
from sleuth.store.db import StoreCorruptError

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

    ``store`` (the run store) and ``llm`` (the run's model, a
    :class:`~sleuth.llm.run.RunLLM` around the ``LLMClient``) are None when they are
    off; each stage then takes its no-store / no-LLM path. ``searched`` holds the
    hits of every query searched so far (none is searched twice). ``session`` holds the
    store's part (caches, run record); ``reply_cache`` is what to hand to
    ``LLMClient(cache=...)``.
    """

    topic: str
    settings: Settings
    emit: ProgressCallback
    budget: Budget
    rules: tuple[QualityRule, ...]
    started: float = field(default_factory=time.monotonic)
    store: Any | None = None
    llm: RunLLM | None = None
    run_id: str | None = None
    failures: list[Failure] = field(default_factory=list)
    searches: int = 0
    searched: dict[str, list[SearchHit]] = field(default_factory=dict)
    reader: PageReader | None = None
    session: StoreSession | None = None
    cached_fetches: int = 0
    report: Report | None = None
    #: Each query the model was asked about → its round's picks (canonical URLs, best
    #: first), so none is asked about twice.
    picks: dict[str, list[str]] = field(default_factory=dict)
    #: The search results shown to the model so far (canonical URLs): each is shown once.
    shown: set[str] = field(default_factory=set)

    @property
    def reply_cache(self) -> Any | None:
        """The store's LLM reply cache (for ``LLMClient(cache=...)``); None without a store."""
        return self.session.reply_cache if self.session is not None else None

    def page_reader(self) -> PageReader | None:
        """The run's page reader (made on first use); None without a model."""
        if self.llm is not None and self.reader is None:
            self.reader = PageReader(self.llm, self.topic, self.settings.read_tokens)
        return self.reader

    def record(self, stage: str, payload: Any) -> None:
        """Append one stage output to the run record, as it happens (no-op without a store)."""
        if self.session is not None and self.session.recorder is not None:
            self.session.recorder.record(stage, payload)

    def done(self, report: Report) -> Report:
        """``report`` with the run id and cache counts: the run's result, kept in the store."""
        cached = self.session.cached_searches if self.session is not None else 0
        stats = report.stats.model_copy(update={"cached_searches": cached,
                                                "cached_fetches": self.cached_fetches})
        self.report = report.model_copy(update={"run_id": self.run_id, "stats": stats})
        return self.report


@asynccontextmanager
async def open_run(topic: str, settings: Settings, emit: ProgressCallback, *,
                   resume_id: str | None = None) -> AsyncIterator[RunContext]:
    """Set up what a run needs: quality rules, budget, the store, the documents index, the model.

    The run is recorded ``done`` once the body has passed its report to
    :meth:`RunContext.done`, ``interrupted`` on Ctrl-C or cancellation, ``failed``
    on any other error. ``resume_id`` continues an interrupted run under its own id.
    """
    settings = documents_search(settings)
    rules = load_rules(settings.quality_rules)
    # Bad input (a provider without its key, a bad --lang) is one line before anything
    # is said, recorded or sent.
    language_name(settings.lang, topic)
    async with make_search_client(settings) as probe:
        build_providers(settings, probe)
    session = await asyncio.to_thread(StoreSession.open, topic, settings, resume_id)
    ctx = RunContext(topic=topic, settings=settings, emit=emit, budget=Budget(settings),
                     rules=rules, store=session.store, run_id=session.run_id, session=session)
    try:
        if session.run_id is not None:
            verb = "resumed" if session.resumed else "started"
            emit(Event("info", f"run {session.run_id} {verb}", {"run_id": session.run_id}))
        ctx.failures += await asyncio.to_thread(session.index_documents)
        if session.index is not None:
            emit(session.index_event())
        # The model, when one is configured or a local Ollama answers (else None).
        async with open_llm(topic, settings, budget=ctx.budget, emit=emit,
                            failures=ctx.failures, cache=ctx.reply_cache) as ctx.llm:
            yield ctx
    except (KeyboardInterrupt, asyncio.CancelledError):
        session.finish("interrupted")
        raise
    except BaseException as exc:
        session.finish("failed", error=f"{type(exc).__name__}: {exc}")
        raise
    else:
        if ctx.report is None:
            session.finish("failed", error="the run ended without a report")
            return
        try:
            session.check_store()
        except StoreCorruptError as exc:
            session.finish("failed", error=str(exc))
            raise
        session.finish("done", ctx.report)


async def plan_stage(ctx: RunContext) -> Plan:
    """Stage 1: the queries to search (with a model, its first queries are searched here)."""
    if ctx.llm is None:
        return make_plan(ctx.topic, ctx.settings.depth)

    async def search(queries: list[str]) -> list[SearchHit]:
        return await search_stage(ctx, Plan(question=ctx.topic, queries=queries, planner="llm"))

    return await llm_plan(ctx.topic, ctx.settings.depth, ctx.llm, search)


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
    async with make_search_client(settings) as client:
        # Every provider name and key is checked before anything is said or sent.
        providers = build_providers(settings, client)
        if ctx.session is not None:
            providers = ctx.session.wrap_providers(providers)
            if ctx.session.recorder is not None:
                ctx.session.recorder.plan(plan)
        ctx.emit(Event("plan", f"{len(queries)} queries", {"queries": queries}))
        groups = provider_groups(providers)

        async def search(batch: list[str]) -> list[tuple[list[SearchHit], list[Any]]]:
            # The documents folder is searched alongside the web, not as its fallback.
            return await asyncio.gather(*(
                run_searches(batch, group, limit=settings.results_per_query,
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
    session = ctx.session or StoreSession(ctx.settings)
    recorder = session.recorder
    if recorder is not None:
        recorder.ranking(candidates)
    accept: PageCheck | None = reader.judge if reader else None
    if accept is not None and reader is not None and recorder is not None:
        accept = recorder.summaries(accept, reader.summaries)
    async with Fetcher(ctx.settings, cache=session.page_cache,
                       documents=session.documents) as fetcher:
        # Cached pages meet this run's URL rules like fetched ones (the fetcher's check).
        known = await session.fresh_results(candidates, fetcher.usable)
        session.check_store()  # a damaged store ends the run before any page is fetched
        gathered = await gather_pages(candidates, fetcher, ctx.settings.max_sources, ctx.emit,
                                      ctx.budget, known=known,
                                      on_result=recorder.fetched if recorder else None,
                                      accept=accept, more=more)
    if recorder is not None and more is not None and more.done() and not more.cancelled():
        recorder.ranking(more.result())
    ctx.cached_fetches += gathered.cached + fetcher.cache_hits
    ctx.failures += gathered.failures
    # --respect-robots: a site whose robots.txt could not be read was read anyway; say so.
    ctx.failures += [Failure(url=f"{origin}/robots.txt", reason=f"{note}; every page allowed")
                     for origin, note in fetcher.robots_notes.items()]
    if gathered.stopped_by:
        ctx.failures.append(Failure(url="", reason=gathered.stopped_by, stage="budget"))
    return gathered


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


async def plan_and_fetch(ctx: RunContext) -> tuple[Plan, Gathered]:
    """Stages 1–4 with a model, overlapped: fetch the first round while follow-ups are planned.

    The planner's first queries are searched and ranked (one select call), and
    those candidates are fetched and summarised while the model writes its follow-up
    queries and they are searched and ranked; the fuller ranking then orders what is
    not fetched yet (and the pages kept). The plan is complete before this returns, so
    the report lists every query; no query is selected twice, no page fetched twice.
    """
    assert ctx.llm is not None
    first: asyncio.Future[tuple[list[str], list[SearchHit]]] = (
        asyncio.get_running_loop().create_future())

    async def search(queries: list[str]) -> list[SearchHit]:
        hits = await search_stage(ctx, Plan(question=ctx.topic, queries=queries, planner="llm"))
        if not first.done():
            first.set_result((queries, hits))
        return hits

    async def full_ranking() -> list[Candidate]:
        plan = await planning
        return await rank_stage(ctx, plan, await search_stage(ctx, plan))

    planning = asyncio.ensure_future(llm_plan(ctx.topic, ctx.settings.depth, ctx.llm, search))
    fuller: asyncio.Future[list[Candidate]] | None = None
    try:
        racing: list[asyncio.Future[Any]] = [planning, first]
        await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        if not first.done() or planning.done():  # a rule-based plan, or nothing to overlap
            plan = await planning
            candidates = await rank_stage(ctx, plan, await search_stage(ctx, plan))
            return plan, await fetch_stage(ctx, candidates)
        queries, hits = first.result()
        early = await rank_stage(ctx, Plan(question=ctx.topic, queries=queries, planner="llm"),
                                 hits)
        fuller = asyncio.ensure_future(full_ranking())
        gathered = await fetch_stage(ctx, early, more=fuller)
        await fuller
        return await planning, gathered
    finally:
        await _stop(planning, fuller, first)


async def search_and_fetch(ctx: RunContext, plan: Plan) -> Gathered:
    """Stages 2–4 without a model, overlapped: fetch the question's own results at once.

    The hits of the first query holding the whole question to answer (the question
    as asked, or a templated variant such as "… explained") are ranked and their best
    pages fetched at once; the ranking of every query's hits, when they are all in,
    then orders what is not fetched yet and the pages kept. The wait for the slower
    queries is thus spent downloading instead of idling.
    """
    lead: asyncio.Future[list[SearchHit]] = asyncio.get_running_loop().create_future()
    searching = asyncio.ensure_future(search_stage(ctx, plan, lead))

    async def full_ranking() -> list[Candidate]:
        return await rank_stage(ctx, plan, await searching)

    fuller: asyncio.Future[list[Candidate]] | None = None
    try:
        await asyncio.wait([lead, searching], return_when=asyncio.FIRST_COMPLETED)
        if searching.done():  # one query, or an error before any search
            return await fetch_stage(ctx, await full_ranking())
        # Ranked directly: the rank event and record come with the full ranking.
        early = rank(lead.result(), ctx.rules)
        fuller = asyncio.ensure_future(full_ranking())
        gathered = await fetch_stage(ctx, early, more=fuller)
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


def llm_stats(llm: RunLLM | None) -> dict[str, Any]:
    """The model's share of a run's Stats: calls, tokens, estimated cost."""
    if llm is None:
        return {}
    usage = llm.usage
    return {"llm_calls": usage.calls, "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens, "cached_llm_calls": usage.cached_calls,
            "cost_usd": round(usage.cost_usd, 6) if usage.cost_usd is not None else None}


async def write_stage(ctx: RunContext, plan: Plan, sources: list[Source],
                      gathered: Gathered) -> Report:
    """Stage 6: the report; with a model, written by it and then citation-checked."""
    level, reason = confidence(sources)
    written = None
    if ctx.llm is not None and sources:
        written = await llm_report(ctx.llm, ctx.topic, sources, gathered.pages, ctx.failures,
                                   level, reason, words=ctx.settings.words,
                                   verify=ctx.settings.verify)
    markdown, citations = written or (
        render_markdown(ctx.topic, sources, ctx.failures, level, reason), None)
    report = Report(
        topic=ctx.topic, depth=ctx.settings.depth, queries=plan.queries, sources=sources,
        failures=ctx.failures, confidence=level, confidence_reason=reason, markdown=markdown,
        stats=Stats(searches=ctx.searches, fetches=gathered.attempted,
                    elapsed_s=round(time.monotonic() - ctx.started, 3), **llm_stats(ctx.llm)),
        run_id=ctx.run_id, planner=plan.planner,
        # A model call cut by --max-time after gathering (the report, the check) says so too.
        stopped_by=gathered.stopped_by or (ctx.llm.cut_by if ctx.llm is not None else None),
        writer="llm" if written else "template", citations=citations,
    )
    ctx.emit(Event("report", f"report with {len(sources)} sources", {"confidence": level}))
    return report


async def research(question: str, *, settings: Settings | None = None,
                   on_event: ProgressCallback | None = None, resume_id: str | None = None,
                   **options: Any) -> Report:
    """Research ``question`` and return a cited :class:`~sleuth.models.Report`.

    ``options`` are settings fields (``depth=3``, ``max_sources=8``, ``search="searxng"``,
    ...) applied over ``settings`` (or over the environment when ``settings`` is None).
    Raises :class:`~sleuth.errors.ConfigError` for bad input; a run in which nothing
    could be read still returns a report, with an empty ``sources`` list and its gaps.
    ``resume_id`` continues that interrupted run (see ``sleuth resume``): what it
    already searched, fetched and asked a model is taken from the store.
    """
    topic = clean_question(question)
    if settings is None:
        settings = load_settings(options)
    elif options:
        settings = load_settings({**settings.model_dump(exclude_unset=True), **options}, env={})
    async with open_run(topic, settings, on_event or no_progress, resume_id=resume_id) as ctx:
        if ctx.llm is None:
            plan = await plan_stage(ctx)
            gathered = await search_and_fetch(ctx, plan)
        else:
            plan, gathered = await plan_and_fetch(ctx)
        sources = await read_stage(ctx, plan, gathered)
        if ctx.session is not None:
            ctx.session.check_store()  # found damaged while fetching: no report on top
        ctx.record("sources", sources)
        return ctx.done(await write_stage(ctx, plan, sources, gathered))


def research_sync(question: str, **kwargs: Any) -> Report:
    """Blocking wrapper around :func:`research` for scripts and notebooks."""
    return asyncio.run(research(question, **kwargs))
