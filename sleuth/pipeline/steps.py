"""The stages as a driver calls them: each takes the run's context and typed records.

Each step runs one stage of :mod:`sleuth.stages` (or a service: fetch) for one run: with
or without a model, recording its outputs in the store's run record and telling the
progress stream. It returns what it did as a small record (:mod:`sleuth.pipeline.tally`:
the candidates ranked, the pages fetched, the sources read, with what went wrong); the
driver folds it into the run's tally. The quick driver (:mod:`sleuth.pipeline.quick`)
calls them in order, searching through :mod:`sleuth.pipeline.searching`; agent mode's
``--report`` calls the read, write and check steps on the pages the agent read. Writing
and checking are two steps: :func:`write_stage` gives a :class:`Draft`,
:func:`check_stage` keeps the citations that hold, and :func:`report_stage` puts the
report together.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sleuth import timeline
from sleuth._format import plural
from sleuth.lang import labels_for
from sleuth.llm.run import RunLLM
from sleuth.models import (
    Answer,
    Candidate,
    CitationCheck,
    Claim,
    Failure,
    FetchFailure,
    Page,
    Plan,
    Report,
    SearchHit,
    Source,
    Stats,
)
from sleuth.pipeline.context import RunContext
from sleuth.pipeline.gather import (
    ByRank,
    Gate,
    Gathered,
    GatherOptions,
    PageCheck,
    Policy,
    Waits,
    Window,
    gather_pages,
)
from sleuth.pipeline.tally import Fetched, Ranked, Read
from sleuth.progress import Event
from sleuth.settings import Settings
from sleuth.stages.judge import Judge
from sleuth.stages.plan import llm_plan, make_plan
from sleuth.stages.rank import rank
from sleuth.stages.read import best_passages

if TYPE_CHECKING:
    from sleuth.stages.write import Confidence

# The stages after the searches (select, relevance, write, check) are imported by the
# steps that use them: a run's first search does not wait for their import.

__all__ = [
    "Draft",
    "Fetching",
    "answer_stage",
    "check_stage",
    "fetch_policy",
    "fetch_stage",
    "llm_stats",
    "plan_stage",
    "rank_stage",
    "read_sources",
    "read_stage",
    "report_stage",
    "run_stats",
    "write_stage",
]


def read_sources(
    pages: list[tuple[Candidate, Page]],
    queries: list[str],
    settings: Settings,
    pick: Callable[[str, list[str], int], list[str]] = best_passages,
) -> list[Source]:
    """Number the read pages in rank order and pick their best passages (with ``pick``:
    the run's, which may have picked them already, :class:`~sleuth.pipeline.passages.Passages`)."""
    return [
        Source(
            id=n,
            url=page.final_url or candidate.url,
            title=page.title or candidate.title,
            quality=candidate.quality,
            quality_score=candidate.quality_score,
            score=candidate.score,
            passages=pick(page.text, queries, settings.passages),
            providers=candidate.providers,
        )
        for n, (candidate, page) in enumerate(pages, start=1)
    ]


async def plan_stage(
    ctx: RunContext, search: Callable[[list[str]], Awaitable[list[SearchHit]]]
) -> Plan:
    """Stage 1: the queries to search; with a model, its first queries go to ``search``
    (the driver's: it folds what each search did into the run's tally) as they come."""
    if ctx.llm is None:
        return make_plan(ctx.topic, ctx.settings.depth)
    return await llm_plan(ctx.topic, ctx.settings.depth, ctx.llm, search, relates_to(ctx.topic))


def relates_to(question: str) -> Callable[[str], bool]:
    """Whether a query the model wrote bears on ``question``: judged as a page would be
    (:mod:`sleuth.stages.judge`), on first use."""
    judge: list[Judge] = []

    def relates(query: str) -> bool:
        if not judge:
            judge.append(Judge(question))
        return judge[0].page("", query).on_topic

    return relates


async def rank_stage(
    ctx: RunContext, plan: Plan, hits: list[SearchHit], show: int | None = None
) -> Ranked:
    """Stage 3: candidates in the order they should be fetched.

    With a model, its picks come first, then the quality ranking's order (one select
    call per round of queries; no query or result is asked about twice in a run: the
    tally's picks and results shown, which the returned record carries on; at most
    ``show`` results shown to it, all by default).
    """
    picks, shown = dict(ctx.tally.picks), set(ctx.tally.shown)
    if ctx.llm is None:
        candidates, picked = rank(hits, ctx.rules), 0
    else:
        from sleuth.stages.select import select_candidates

        with timeline.about("\n".join(plan.queries)):  # the round whose results it ranks
            candidates, picked = await select_candidates(
                ctx.llm,
                ctx.topic,
                plan.queries,
                hits,
                ctx.rules,
                picked=picks,
                shown=shown,
                show=show,
                decide=ctx.settings.select,
                want=show or ctx.settings.max_sources,
            )
    chosen = f" ({picked} chosen first)" if picked else ""
    found = plural(len(candidates), "candidate source", "candidate sources")
    ctx.emit(Event("rank", found + chosen, {"candidates": len(candidates), "picked": picked}))
    return Ranked(candidates, picks, frozenset(shown))


@dataclass(frozen=True)
class Fetching:
    """How :func:`fetch_stage` fetches; every field has the quick research's default.

    ``want``: pages to read (default ``--max-sources``; a deep research's branch reads its
    share). ``more``: a fuller ranking still on its way (see :class:`GatherOptions`).
    ``memo``: results already fetched in this run, by canonical URL, used as the cache is
    and given every new result (a deep research's branches share one, so a page one
    branch fetched and did not keep is never downloaded again for another). ``policy``:
    the mode's fetch policy (default: quick mode's :class:`Window`, waiting
    ``--top-wait`` for the best-ranked page); under ``--fetch-order rank`` it runs
    within :class:`ByRank`. ``gate``: what sets off-topic pages aside and chooses the
    sources (default: the relevance gate on ``ctx.topic``; a deep research's
    branches pass the gate on the run's question, with the name a second hop searched
    as its bridge). ``late``: downloads still out when gathering ends finish while the
    report is written (see ``GatherOptions.late``). ``read_queries``: the queries the
    read stage will pick passages for, when known before fetching: each page's are then
    picked as it arrives (``RunContext.passages``).
    """

    want: int | None = None
    more: asyncio.Future[list[Candidate]] | None = None
    memo: dict[str, Page | FetchFailure] | None = None
    policy: Policy | None = None
    gate: Gate | None = None
    late: bool = False
    read_queries: list[str] | None = None


def fetch_policy(ctx: RunContext, mode: Policy | None = None) -> Policy:
    """The policy a run fetches with: ``mode`` (default: quick mode's window), within
    rank order under ``--fetch-order rank``."""
    chosen = mode or Window(Waits(top_s=ctx.settings.top_wait))
    return ByRank(chosen) if ctx.settings.fetch_order == "rank" else chosen


async def fetch_stage(
    ctx: RunContext, candidates: list[Candidate], how: Fetching = Fetching()
) -> Fetched:
    """Stage 4: fetch and extract the best candidates, pages already in the store first.

    With a model, each page is summarised as soon as it arrives (``ctx.reader``).
    ``how``: see :class:`Fetching`.
    """
    from sleuth.stages.relevance import Relevance

    reader = ctx.page_reader()
    session, recorder = ctx.session, ctx.record.recorder
    if recorder is not None:
        recorder.ranking(candidates)
    accept: PageCheck | None = reader.judge if reader and ctx.summarises_as_read() else None
    if accept is not None and reader is not None and recorder is not None:
        accept = recorder.summaries(accept, reader.summaries)
    fetcher = await ctx.fetcher()
    hits_before = fetcher.cache_hits
    # Cached pages meet this run's URL rules like fetched ones (the fetcher's check).
    known = await session.fresh_results(
        candidates, fetcher.usable, topic=ctx.topic, run_id=ctx.run_id
    )
    session.check_store()  # a damaged store ends the run before any page is fetched
    on_result = _recording(ctx)
    memo, more = how.memo, how.more
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
    options = GatherOptions(
        want=ctx.settings.max_sources if how.want is None else how.want,
        policy=fetch_policy(ctx, how.policy),
        on_event=ctx.emit,
        budget=ctx.budget,
        known=known,
        on_result=on_result,
        accept=accept,
        more=more,
        gate=Relevance(ctx.topic) if how.gate is None else how.gate,
        late=how.late,
        on_page=_picking(ctx, how.read_queries),
    )
    gathered = await gather_pages(candidates, fetcher, options)
    if recorder is not None and more is not None and more.done() and not more.cancelled():
        recorder.ranking(more.result())
    cached = gathered.cached + fetcher.cache_hits - hits_before
    return Fetched(gathered, cached, dict(fetcher.robots_notes))


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


def _picking(
    ctx: RunContext, queries: list[str] | None
) -> Callable[[Candidate, Page], None] | None:
    """What starts picking each page's passages for ``queries`` as it arrives, and then
    scoring its sentences for the answer (:func:`answer_ahead`)."""
    if queries is None:
        return None
    k = ctx.settings.passages

    def pick(candidate: Candidate, page: Page) -> None:
        ctx.passages.start(
            page.text, queries, k, lambda: answer_ahead(ctx.topic, candidate, page, ctx.settings)
        )

    return pick


def answer_ahead(topic: str, candidate: Candidate, page: Page, settings: Settings) -> None:
    """Score one page's sentences for the answer to ``topic``, as :func:`answer_stage`
    will once the sources are read: what that costs per sentence (its terms, names,
    vector; the page's sentences) is then in the caches of the functions that make it,
    and the answer stage, between the last page and the report, only adds it up."""
    from sleuth.stages.answer import best_answer

    (source,) = read_sources([(candidate, page)], [], settings, lambda *_: [])
    best_answer(topic, [source], {source.id: page.text})


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


async def read_stage(ctx: RunContext, plan: Plan, gathered: Gathered) -> Read:
    """Stage 5: what each page says about the question.

    Both pipelines number the pages and pick their passages; with a model each
    source also gets its summary (made while fetching, or here for pages that
    arrived another way), and pages with nothing relevant are left out.
    """
    pages = gathered.pages
    reader = ctx.page_reader()
    dropped: list[Failure] = []
    queries = [ctx.topic, *plan.queries]
    await ctx.passages.ready()
    sources = read_sources(pages, queries, ctx.settings, ctx.passages.get)
    if reader is not None and ctx.llm is not None and _summaries_needed(ctx, sources):
        pages, left_out = await reader.read_all(pages)
        dropped = [Failure(url=c.url, reason=why, stage="read") for c, why in left_out]
        sources = reader.apply(read_sources(pages, queries, ctx.settings), pages)
    ctx.emit(
        Event(
            "read", plural(len(sources), "source", "sources") + " read", {"sources": len(sources)}
        )
    )
    return Read(sources, dropped)


def _summaries_needed(ctx: RunContext, sources: list[Source]) -> bool:
    """Whether the sources need the model's summaries: made as pages arrived
    (:meth:`RunContext.summarises_as_read`), or their passages do not fit the report
    call whole (said on the progress stream either way)."""
    from sleuth.stages.write import evidence_fits

    assert ctx.llm is not None
    if ctx.summarises_as_read():
        return True
    fits = evidence_fits(ctx.llm, ctx.topic, sources, ctx.settings.words)
    ctx.emit(
        Event(
            "info",
            "the sources' passages fit the report call: no page summaries"
            if fits
            else "the sources' passages do not fit the report call: each page is summarised",
            {"summaries": not fits},
        )
    )
    return not fits


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


def run_stats(ctx: RunContext, fetches: int, llm: RunLLM | None) -> Stats:
    """A finished run's Stats: its searches, ``fetches`` pages, time so far, model use."""
    return Stats(
        searches=ctx.tally.searches,
        fetches=fetches,
        elapsed_s=round(time.monotonic() - ctx.started, 3),
        **llm_stats(llm),
    )


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
        "model_calls": dict(sorted(llm.calls_by_stage.items())),
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
    #: Every cited sentence the check judged, with the source spans that back it.
    claims: list[Claim] | None = None


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
    claims: list[Claim] = []
    body, citations = await check_citations(
        draft.body,
        ids={s.id for s in sources},
        urls=urls,
        evidence=evidence,
        method=ctx.settings.verify,
        llm=ctx.llm,
        language=ctx.llm.language,
        claims=claims,
    )
    return replace(draft, body=body, citations=citations, claims=claims)


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
    from sleuth.stages.check import footer, removed_section
    from sleuth.stages.write import render_llm_markdown, render_markdown

    level, reason, llm = draft.level, draft.reason, ctx.llm
    if draft.body is not None and draft.citations is not None and llm is not None:
        markdown = render_llm_markdown(
            ctx.topic,
            draft.body,
            sources,
            ctx.tally.failures,
            level,
            reason,
            labels_for(llm.language),
            footer(draft.citations, llm.language),
        )
        markdown = "\n".join([markdown, *removed_section(draft.claims or [], llm.language)])
    else:
        answer = draft.answer.sentences if draft.answer is not None else None
        markdown = render_markdown(ctx.topic, sources, ctx.tally.failures, level, reason, answer)
    written = draft.citations is not None
    report = Report(
        topic=ctx.topic,
        depth=ctx.settings.depth,
        queries=plan.queries,
        sources=sources,
        failures=ctx.tally.failures,
        confidence=level,
        confidence_reason=reason,
        markdown=markdown,
        stats=run_stats(ctx, gathered.attempted, llm),
        run_id=ctx.run_id,
        planner=plan.planner,
        # A model call cut by --max-time after gathering (the report, the check) says so too.
        stopped_by=gathered.stopped_by or (llm.cut_by if llm is not None else None),
        writer="llm" if written else "template",
        citations=draft.citations,
        answer=sized(draft.answer, markdown),
        claims=draft.claims,
    )
    ctx.emit(
        Event(
            "report",
            "report with " + plural(len(sources), "source", "sources"),
            {"confidence": level},
        )
    )
    return report
