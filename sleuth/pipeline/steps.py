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
from typing import TYPE_CHECKING, Any

from sleuth._format import plural
from sleuth._sent import ON_SENT
from sleuth.lang import labels_for
from sleuth.llm.run import RunLLM
from sleuth.models import (
    Answer,
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
from sleuth.pipeline.context import QuestionSearch, RunContext
from sleuth.pipeline.gather import Gathered, PageCheck, Waits, gather_pages
from sleuth.progress import Event
from sleuth.search import build_providers, run_searches
from sleuth.search.local import provider_groups
from sleuth.settings import Settings
from sleuth.stages.plan import llm_plan, make_plan, whole_question
from sleuth.stages.rank import rank
from sleuth.stages.read import best_passages

if TYPE_CHECKING:
    from sleuth.stages.write import Confidence

# The stages after the searches (select, relevance, write, check) are imported by the
# steps that use them: a run's first search does not wait for their import (issue 26).

__all__ = [
    "Draft",
    "answer_stage",
    "check_stage",
    "explain_empty_search",
    "fetch_stage",
    "llm_stats",
    "plan_stage",
    "rank_stage",
    "read_sources",
    "read_stage",
    "report_stage",
    "search_question",
    "search_stage",
    "write_stage",
]


def read_sources(
    pages: list[tuple[Candidate, Page]], queries: list[str], settings: Settings
) -> list[Source]:
    """Number the read pages in rank order and pick their best passages."""
    return [
        Source(
            id=n,
            url=page.final_url or candidate.url,
            title=page.title or candidate.title,
            quality=candidate.quality,
            quality_score=candidate.quality_score,
            score=candidate.score,
            passages=best_passages(page.text, queries, settings.passages),
            providers=candidate.providers,
        )
        for n, (candidate, page) in enumerate(pages, start=1)
    ]


async def plan_stage(ctx: RunContext) -> Plan:
    """Stage 1: the queries to search (with a model, its first queries are searched here)."""
    if ctx.llm is None:
        return make_plan(ctx.topic, ctx.settings.depth)

    async def search(queries: list[str]) -> list[SearchHit]:
        return await search_stage(ctx, Plan(question=ctx.topic, queries=queries, planner="llm"))

    return await llm_plan(ctx.topic, ctx.settings.depth, ctx.llm, search)


def search_question(ctx: RunContext) -> Awaitable[None]:
    """Send the search for the question as asked now, as :attr:`RunContext.question_search`.

    The quick research with a model calls it before the model's SDK loads (issue 26:
    the first request went out only after the SDK, about 0.3 s of CPU, and the planning
    call); the question is the query the no-LLM pipeline leads with, and GPT
    Researcher's first search too. Its hits join the first round the model ranks; no
    later step searches it again (:func:`search_stage` waits for it instead). Returns
    what waits until its request is on the wire.
    """
    sent = asyncio.Event()
    token = ON_SENT.set(sent.set)
    try:  # the task copies the context: its request hook sees ON_SENT
        task = asyncio.ensure_future(
            search_stage(ctx, Plan(question=ctx.topic, queries=[ctx.topic], planner="llm"))
        )
    finally:
        ON_SENT.reset(token)
    task.add_done_callback(lambda _: sent.set())
    ctx.question_search = QuestionSearch(ctx.topic, task, sent)
    return ctx.question_search.on_the_wire()


def _in_flight(ctx: RunContext, queries: list[str]) -> dict[str, asyncio.Future[list[SearchHit]]]:
    """Those of ``queries`` still being searched by the question's search (elsewhere)."""
    early = ctx.question_search
    if (
        early is None
        or early.task.done()
        or early.query not in queries
        or early.task is asyncio.current_task()
    ):
        return {}
    return {early.query: early.task}


def results_wanted(settings: Settings) -> int:
    """Hits asked per query: ``--results-per-query``, or enough to fill ``--max-sources``
    with a spare half for the pages that fail or are off-topic, when that is more
    (issue 23: ``--max-sources 10`` cited 8 when every query asked for 8 hits)."""
    return min(50, max(settings.results_per_query, math.ceil(settings.max_sources * 1.5)))


async def search_stage(
    ctx: RunContext, plan: Plan, lead: asyncio.Future[list[SearchHit]] | None = None
) -> list[SearchHit]:
    """Stage 2: every query through the providers; failures go to ``ctx.failures``.

    Queries already searched in this run (the LLM planner's first round) are not
    searched again; the hits of every query of ``plan`` are returned. ``lead``, when
    given, is resolved as soon as one query holding the whole question has hits (see
    :func:`_search_with_lead`), while the others are still being searched (so
    fetching can start).
    """
    settings = ctx.settings
    planned = list(dict.fromkeys(plan.queries))
    waiting = _in_flight(ctx, planned)
    queries = [q for q in planned if q not in ctx.searched and q not in waiting]
    # --max-time bounds the searches too: none starts after it, none runs past it.
    left = ctx.budget.seconds_left()
    timeout = settings.search_timeout if left is None else min(settings.search_timeout, left)
    if timeout <= 0:
        queries = []
    # Every provider name and key is checked before anything is said or sent.
    providers = build_providers(settings, ctx.services.search_client(), question=ctx.topic)
    recorder = ctx.record.recorder
    providers = ctx.session.wrap_providers(providers, recorder.hits if recorder else None)
    ctx.cached_providers += [p for p in providers if isinstance(p, CachedProvider)]
    if recorder is not None:
        recorder.plan(plan)
        ctx.passage_queries = [ctx.topic, *plan.queries]
    ctx.emit(Event("plan", plural(len(queries), "query", "queries"), {"queries": queries}))
    groups = provider_groups(providers)

    async def search(batch: list[str]) -> list[tuple[list[SearchHit], list[Any]]]:
        # The documents folder is searched alongside the web, not as its fallback.
        return await asyncio.gather(
            *(
                run_searches(
                    batch, group, limit=results_wanted(settings), timeout=timeout, on_event=ctx.emit
                )
                for group in groups
            )
        )

    answers: _Answers = []
    if lead is not None and len(queries) + len(waiting) > 1:
        answers = await _search_with_lead(search, planned, queries, lead, ctx, waiting)
    elif queries:
        answers = await search(queries)
    hits = [hit for found, _ in answers for hit in found]
    failures = [failure for _, failed in answers for failure in failed]
    ctx.search_failures += failures
    ctx.failures += [
        Failure(
            url="", reason=f"{f.provider} search for “{f.query}” failed: {f.reason}", stage="search"
        )
        for f in failures
    ]
    ctx.searches += len({(h.provider, h.query) for h in hits}) + len(failures)
    for query in queries:
        ctx.searched[query] = [h for h in hits if h.query == query]
    for task in waiting.values():  # its own stage records its hits and failures
        await task
    return [hit for query in planned for hit in ctx.searched.get(query, [])]


_Answers = list[tuple[list[SearchHit], list[Any]]]


async def _as_answers(task: asyncio.Future[list[SearchHit]]) -> _Answers:
    """A search in flight elsewhere, as an answer to race (recorded by its own stage)."""
    return [(await asyncio.shield(task), [])]


def explain_empty_search(ctx: RunContext) -> None:
    """When no query found anything, say why in one plain line of the report's Gaps.

    Every search failed for a network reason: one line says the engine could not be
    reached and what works offline, in place of a resolver's error per query (those
    stay in the failure's ``detail``, the JSON report, and ``--verbose``). No search
    failed and only the documents folder was searched: the line says that nothing in
    the folder matched (the report said "see Gaps" and Gaps had nothing to say).
    """
    if not ctx.searched or any(ctx.searched.values()):
        return
    failed, settings = ctx.search_failures, ctx.settings
    if failed and all(f.unreachable for f in failed):
        reason = _unreachable_line(settings, [f.provider for f in failed])
        raw = "\n".join(f"{f.provider} search for “{f.query}” failed: {f.reason}" for f in failed)
        first = next(n for n, f in enumerate(ctx.failures) if f.stage == "search")
        ctx.failures[:] = [
            *ctx.failures[:first],
            Failure(url="", stage="search", reason=reason, detail=raw),
            *(f for f in ctx.failures[first:] if f.stage != "search"),
        ]
        ctx.emit(Event("search_failed", reason, {"unreachable": True}))
    elif not failed:
        reason = _nothing_found_line(ctx)
        ctx.failures.append(Failure(url="", stage="search", reason=reason))
        ctx.emit(Event("info", reason, {"queries": len(ctx.searched)}))


def _nothing_found_line(ctx: RunContext) -> str:
    """What to say when every search answered, with nothing."""
    settings = ctx.settings
    if settings.docs is not None and set(settings.search) == {"local"}:
        indexed = ctx.session.index.indexed if ctx.session.index is not None else None
        if indexed == 0:
            return f"the documents folder {settings.docs} holds no file sleuth can read"
        return f"nothing in the documents folder {settings.docs} matched the question"
    names = ", ".join(settings.search)
    return (
        f"no search found anything ({names}, "
        f"{plural(len(ctx.searched), 'query', 'queries')}): try other words"
    )


def _unreachable_line(settings: Settings, providers: list[str]) -> str:
    """ "could not reach the search engine …" with what the user can do about it."""
    names = ", ".join(dict.fromkeys(providers))
    if "searxng" in providers:
        advice = f"is SearXNG running at {settings.searxng_url}?"
    else:
        advice = (
            "no network? Search your own SearXNG with --search searxng "
            "--searxng-url URL, or a folder of documents with --docs DIR"
        )
    return f"could not reach the search engine ({names}): {advice}"


async def _search_with_lead(
    search: Callable[[list[str]], Awaitable[_Answers]],
    planned: list[str],
    queries: list[str],
    lead: asyncio.Future[list[SearchHit]],
    ctx: RunContext,
    waiting: dict[str, asyncio.Future[list[SearchHit]]],
) -> _Answers:
    """Search ``queries`` (of ``planned``); resolve ``lead`` with the hits of the first
    query to answer among those that hold the whole question (it, and its templated
    variants), whether searched here, already searched, or still ``waiting``.

    Those rank the same pages as the question itself (the fragments of a split
    question do not: ranking their hits first cited more off-topic pages), so
    fetching waits only for the quickest of them.
    """
    whole = whole_question(planned)
    known = [hit for query in whole for hit in ctx.searched.get(query, [])]
    if known:
        lead.set_result(known)
    tasks = [asyncio.ensure_future(search([query])) for query in whole if query in queries]
    rest = [query for query in queries if query not in whole]
    others = asyncio.ensure_future(search(rest)) if rest else None
    try:
        racing = [*tasks, *(_as_answers(waiting[q]) for q in whole if q in waiting)]
        for next_answer in asyncio.as_completed(racing):
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


async def rank_stage(
    ctx: RunContext, plan: Plan, hits: list[SearchHit], show: int | None = None
) -> list[Candidate]:
    """Stage 3: candidates in the order they should be fetched.

    With a model, its picks come first, then the quality ranking's order (one select
    call per round of queries; no query or result is asked about twice in a run; at
    most ``show`` results shown to it, all by default).
    """
    if ctx.llm is None:
        candidates, picked = rank(hits, ctx.rules), 0
    else:
        from sleuth.stages.select import select_candidates

        candidates, picked = await select_candidates(
            ctx.llm,
            ctx.topic,
            plan.queries,
            hits,
            ctx.rules,
            picked=ctx.picks,
            shown=ctx.shown,
            show=show,
        )
    chosen = f" ({picked} chosen by the model)" if picked else ""
    found = plural(len(candidates), "candidate source", "candidate sources")
    ctx.emit(Event("rank", found + chosen, {"candidates": len(candidates), "picked": picked}))
    return candidates


async def fetch_stage(
    ctx: RunContext,
    candidates: list[Candidate],
    more: asyncio.Future[list[Candidate]] | None = None,
    *,
    want: int | None = None,
    memo: dict[str, Page | FetchFailure] | None = None,
    gate: bool = True,
    own: frozenset[str] = frozenset(),
    park: bool = False,
) -> Gathered:
    """Stage 4: fetch and extract the best candidates, pages already in the store first.

    With a model, each page is summarised as soon as it arrives (``ctx.reader``).
    ``more``: a fuller ranking still on its way (see :func:`gather_pages`). ``want``:
    pages to read (default ``--max-sources``; a deep research's branch reads its share).
    ``memo``: results already fetched in this run, by canonical URL, used as the cache is
    and given every new result (a deep research's branches share one, so a page one branch
    fetched and did not keep is never downloaded again for another).
    ``gate``: whether the relevance gate sets off-topic pages aside (a deep research's
    branches do without it: a bridge page names the hop, not the question's terms).
    ``own``: canonical URLs waited for until they come or fail (``Waits.own``); ``park``:
    summarise only pages that may be kept (see :func:`gather_pages`).
    """
    from sleuth.stages.relevance import Relevance

    reader = ctx.page_reader()
    session, recorder = ctx.session, ctx.record.recorder
    if recorder is not None:
        recorder.ranking(candidates)
    accept: PageCheck | None = reader.judge if reader else None
    if accept is not None and reader is not None and recorder is not None:
        accept = recorder.summaries(accept, reader.summaries)
    fetcher = await ctx.fetcher()
    hits_before = fetcher.cache_hits
    # Cached pages meet this run's URL rules like fetched ones (the fetcher's check).
    known = await session.fresh_results(
        candidates, fetcher.usable, topic=ctx.topic, run_id=ctx.run_id
    )
    session.check_store()  # a damaged store ends the run before any page is fetched
    want = ctx.settings.max_sources if want is None else want
    on_result = _recording(ctx)
    if memo is not None:
        known = {
            **{
                c.canonical_url: memo[c.canonical_url]
                for c in candidates
                if c.canonical_url in memo
            },
            **known,
        }
        on_result = _remembering(memo, on_result)
    gathered = await gather_pages(
        candidates,
        fetcher,
        want,
        ctx.emit,
        ctx.budget,
        known=known,
        on_result=on_result,
        accept=accept,
        more=more,
        waits=Waits(top_s=ctx.settings.top_wait, own=own),
        gate=Relevance(ctx.topic) if gate else None,
        park=park,
        by_rank=ctx.settings.fetch_order == "rank",
    )
    if recorder is not None and more is not None and more.done() and not more.cancelled():
        recorder.ranking(more.result())
    ctx.cached_fetches += gathered.cached + fetcher.cache_hits - hits_before
    ctx.failures += gathered.failures
    # --respect-robots: a site whose robots.txt could not be read was read anyway; say so
    # (once a run: the fetcher, and its notes, may serve several).
    notes = {
        origin: note
        for origin, note in fetcher.robots_notes.items()
        if origin not in ctx.robots_told
    }
    ctx.robots_told.update(notes)
    ctx.failures += [
        Failure(url=f"{origin}/robots.txt", reason=f"{note}; every page allowed")
        for origin, note in notes.items()
    ]
    if gathered.stopped_by:
        ctx.failures.append(Failure(url="", reason=gathered.stopped_by, stage="budget"))
    return gathered


def _recording(ctx: RunContext) -> Callable[[Candidate, Page | FetchFailure], None] | None:
    """What tells the run record of each page as it arrives (with its best passages)."""
    recorder = ctx.record.recorder
    if recorder is None:
        return None

    def fetched(candidate: Candidate, result: Page | FetchFailure) -> None:
        passages = (
            best_passages(result.text, ctx.passage_queries, ctx.settings.passages)
            if isinstance(result, Page)
            else []
        )
        recorder.fetched(candidate, result, passages)

    return fetched


def _remembering(
    memo: dict[str, Page | FetchFailure],
    then: Callable[[Candidate, Page | FetchFailure], None] | None,
) -> Callable[[Candidate, Page | FetchFailure], None]:
    """An ``on_result`` that keeps each result in ``memo`` before ``then`` records it."""

    def fetched(candidate: Candidate, result: Page | FetchFailure) -> None:
        memo.setdefault(candidate.canonical_url, result)
        if then is not None:
            then(candidate, result)

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
    ctx.emit(
        Event(
            "read", plural(len(sources), "source", "sources") + " read", {"sources": len(sources)}
        )
    )
    return sources


async def answer_stage(
    ctx: RunContext, sources: list[Source], gathered: Gathered
) -> tuple[list[Source], Answer]:
    """The sentences of the pages read that best answer the question, and the sources
    with the passage around each of them among their quotes (in a thread: the scoring
    must not hold up the other runs sharing the event loop)."""
    from sleuth.stages.answer import best_answer, scorer_names, with_answer_passages

    def work() -> tuple[list[Source], Answer]:
        texts = page_texts(sources, gathered.pages)
        sentences = best_answer(ctx.topic, sources, texts)
        answer = Answer(sentences=sentences, scored_by=scorer_names())
        return with_answer_passages(sources, texts, sentences), answer

    return await asyncio.to_thread(work)


def page_texts(sources: list[Source], pages: list[tuple[Candidate, Page]]) -> dict[int, str]:
    """Each source's stored text (its page's), by source id."""
    by_url = {page.final_url or candidate.url: page.text for candidate, page in pages}
    return {s.id: by_url[s.url] for s in sources if s.url in by_url}


def llm_stats(llm: RunLLM | None) -> dict[str, Any]:
    """The model's share of a run's Stats: calls, tokens, estimated cost."""
    if llm is None:
        return {}
    usage = llm.usage
    return {
        "llm_calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cached_llm_calls": usage.cached_calls,
        "cost_usd": round(usage.cost_usd, 6) if usage.cost_usd is not None else None,
    }


@dataclass(frozen=True)
class Draft:
    """The report before it is put together: its confidence, and the model's body
    (None: the template report), with what the citation check did to it once checked."""

    level: Confidence
    reason: str
    body: str | None = None
    citations: CitationCheck | None = None
    answer: Answer | None = None


async def write_stage(
    ctx: RunContext, sources: list[Source], answer: Answer | None = None
) -> Draft:
    """Stage 6: with a model, the report body it writes (citations unchecked yet)."""
    from sleuth.stages.write import confidence, write_body

    level, reason = confidence(sources)
    body = None
    if ctx.llm is not None and sources:
        body = await write_body(
            ctx.llm, ctx.topic, sources, ctx.settings.words, answer.sentences if answer else ()
        )
    return Draft(level, reason, body, answer=answer)


async def check_stage(
    ctx: RunContext, draft: Draft, sources: list[Source], gathered: Gathered
) -> Draft:
    """Stage 7: the model's body with only the citations that hold (``--verify``)."""
    from sleuth.stages.check import check_citations, evidence_of

    if draft.body is None or ctx.llm is None:
        return draft
    urls, evidence = evidence_of(sources, gathered.pages)
    body, citations = await check_citations(
        draft.body,
        ids={s.id for s in sources},
        urls=urls,
        evidence=evidence,
        method=ctx.settings.verify,
        llm=ctx.llm,
        language=ctx.llm.language,
    )
    return replace(draft, body=body, citations=citations)


def sized(answer: Answer | None, markdown: str) -> Answer | None:
    """``answer`` with its size in tokens, and the whole report's (``markdown``)."""
    from sleuth.llm.tokens import count_tokens
    from sleuth.stages.write import answer_lines

    if answer is None:
        return None
    return answer.model_copy(
        update={
            "tokens": count_tokens("\n".join(answer_lines(answer.sentences))),
            "report_tokens": count_tokens(markdown),
        }
    )


def report_stage(
    ctx: RunContext, plan: Plan, sources: list[Source], gathered: Gathered, draft: Draft
) -> Report:
    """The report: the checked body in sleuth's frame, or the template; and the run's stats."""
    from sleuth.stages.check import footer
    from sleuth.stages.write import render_llm_markdown, render_markdown

    level, reason, llm = draft.level, draft.reason, ctx.llm
    if draft.body is not None and draft.citations is not None and llm is not None:
        markdown = render_llm_markdown(
            ctx.topic,
            draft.body,
            sources,
            ctx.failures,
            level,
            reason,
            labels_for(llm.language),
            footer(draft.citations, llm.language),
        )
    else:
        answer = draft.answer.sentences if draft.answer is not None else None
        markdown = render_markdown(ctx.topic, sources, ctx.failures, level, reason, answer)
    written = draft.citations is not None
    report = Report(
        topic=ctx.topic,
        depth=ctx.settings.depth,
        queries=plan.queries,
        sources=sources,
        failures=ctx.failures,
        confidence=level,
        confidence_reason=reason,
        markdown=markdown,
        stats=Stats(
            searches=ctx.searches,
            fetches=gathered.attempted,
            elapsed_s=round(time.monotonic() - ctx.started, 3),
            **llm_stats(llm),
        ),
        run_id=ctx.run_id,
        planner=plan.planner,
        # A model call cut by --max-time after gathering (the report, the check) says so too.
        stopped_by=gathered.stopped_by or (llm.cut_by if llm is not None else None),
        writer="llm" if written else "template",
        citations=draft.citations,
        answer=sized(draft.answer, markdown),
    )
    ctx.emit(
        Event(
            "report",
            "report with " + plural(len(sources), "source", "sources"),
            {"confidence": level},
        )
    )
    return report
