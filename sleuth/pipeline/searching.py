"""Stage 2 as a driver calls it: the plan's queries through the search providers.

:func:`search_stage` searches what the run has not searched yet and returns what it did
(:class:`~sleuth.pipeline.tally.Searched`) for the driver to fold into the run's tally;
with a ``lead`` it hands the hits of the quickest query holding the whole question to the
fetch stage at once. :func:`explain_empty_search` says in one line why no query found
anything.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sleuth._format import plural
from sleuth.models import Failure, Plan, SearchFailure, SearchHit
from sleuth.pipeline.cached import CachedProvider
from sleuth.pipeline.context import RunContext
from sleuth.pipeline.recorder import library_mode
from sleuth.pipeline.tally import NothingFound, Searched
from sleuth.progress import Event
from sleuth.search import build_providers, run_searches
from sleuth.search.base import SearchProvider
from sleuth.search.library import LibrarySearch
from sleuth.search.local import provider_groups
from sleuth.settings import Settings
from sleuth.stages.plan import whole_question
from sleuth.urls import canonicalize

__all__ = ["explain_empty_search", "results_wanted", "search_stage"]

_Answers = list[tuple[list[SearchHit], list[Any]]]
_Search = Callable[[list[str]], Awaitable[_Answers]]
#: The provider whose hits only add what the other searches did not find.
LIBRARY = LibrarySearch.name


def results_wanted(settings: Settings) -> int:
    """Hits asked per query: ``--results-per-query``, or enough to fill ``--max-sources``
    with a spare half for the pages that fail or are off-topic, when that is more
    (so that ``--max-sources 10`` can cite ten when several pages fail)."""
    return min(50, max(settings.results_per_query, math.ceil(settings.max_sources * 1.5)))


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


def _timeout(ctx: RunContext) -> float:
    """Seconds each search may take: --max-time bounds the searches too (none starts
    after it, none runs past it)."""
    left = ctx.budget.seconds_left()
    timeout = ctx.settings.search_timeout
    return timeout if left is None else min(timeout, left)


def _searcher(ctx: RunContext, providers: Sequence[SearchProvider], timeout: float) -> _Search:
    """What searches a batch of queries with every group of providers at once."""
    groups = provider_groups(list(providers))
    limit = results_wanted(ctx.settings)

    async def one(
        group: list[SearchProvider], batch: list[str]
    ) -> tuple[list[SearchHit], list[SearchFailure]]:
        # The library is searched when it holds pages: asked here, beside the other
        # groups' searches, so that the first request is never held up by the store.
        ask = group[0].name == LIBRARY and library_mode(ctx.settings) is None
        if ask and not await asyncio.to_thread(ctx.session.holds_pages):
            return [], []
        return await run_searches(batch, group, limit=limit, timeout=timeout, on_event=ctx.emit)

    async def search(batch: list[str]) -> _Answers:
        # The documents folder and the library are searched alongside the web, not as
        # its fallback.
        answers = await asyncio.gather(*(one(group, batch) for group in groups))
        return _library_adds(groups, list(answers))

    return search


def _library_adds(groups: list[list[SearchProvider]], answers: _Answers) -> _Answers:
    """``answers`` with the library's hits kept only for pages no other provider named.

    A page the web search found stays the web's candidate (its rank, its snippet, its
    "via"), so that a rerun of a question ranks and asks the model as the first run did;
    the library adds the pages the other searches did not find.
    """
    named = {
        canonicalize(hit.url)
        for group, (hits, _) in zip(groups, answers, strict=True)
        if group[0].name != LIBRARY
        for hit in hits
    }
    return [
        (
            hits
            if group[0].name != LIBRARY
            else [hit for hit in hits if canonicalize(hit.url) not in named],
            failed,
        )
        for group, (hits, failed) in zip(groups, answers, strict=True)
    ]


async def search_stage(
    ctx: RunContext, plan: Plan, lead: asyncio.Future[list[SearchHit]] | None = None
) -> Searched:
    """Stage 2: every query of ``plan`` not searched yet in this run, through the providers.

    Queries already searched (the LLM planner's first round) or being searched elsewhere
    (the question's own search: ``Searched.waiting``) are not searched again. ``lead``,
    when given, is resolved as soon as one query holding the whole question has hits
    (see :func:`_search_with_lead`), while the others are still being searched (so
    fetching can start).
    """
    planned = list(dict.fromkeys(plan.queries))
    waiting = _in_flight(ctx, planned)
    queries = [q for q in planned if q not in ctx.tally.searched and q not in waiting]
    timeout = _timeout(ctx)
    if timeout <= 0:
        queries = []
    # Every provider name and key is checked before anything is said or sent.
    providers = build_providers(ctx.settings, ctx.services.search_client(), question=ctx.topic)
    recorder = ctx.record.recorder
    providers = ctx.session.wrap_providers(
        providers,
        recorder.hits if recorder else None,
        library=library_mode(ctx.settings) is not False,
    )
    ctx.record_plan(plan)
    ctx.emit(Event("plan", plural(len(queries), "query", "queries"), {"queries": queries}))
    search = _searcher(ctx, providers, timeout)
    answers: _Answers = []
    if lead is not None and len(queries) + len(waiting) > 1:
        answers = await _search_with_lead(search, planned, queries, lead, ctx, waiting)
    elif queries:
        answers = await search(queries)
    hits = [hit for found, _ in answers for hit in found]
    failures = [failure for _, failed in answers for failure in failed]
    return Searched(
        planned=planned,
        found={query: [h for h in hits if h.query == query] for query in queries},
        failures=failures,
        providers=[p for p in providers if isinstance(p, CachedProvider)],
        # A library hit's provider names the page's age too: one search all the same.
        searches=len({(h.provider.partition(",")[0], h.query) for h in hits}) + len(failures),
        waiting=list(waiting.values()),
    )


async def _as_answers(task: asyncio.Future[list[SearchHit]]) -> _Answers:
    """A search in flight elsewhere, as an answer to race (recorded by its own stage)."""
    return [(await asyncio.shield(task), [])]


async def _search_with_lead(
    search: _Search,
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
    known = ctx.tally.hits(whole)
    if known:
        lead.set_result(known)
    tasks = [asyncio.ensure_future(search([query])) for query in whole if query in queries]
    rest = [query for query in queries if query not in whole]
    others = asyncio.ensure_future(search(rest)) if rest else None
    try:
        racing = [*tasks, *(_as_answers(waiting[q]) for q in whole if q in waiting)]
        await _first_to_lead(racing, lead)
        answers = [answer for task in tasks for answer in task.result()]
        return answers + (await others if others is not None else [])
    finally:
        for task in [*tasks, others]:
            if task is not None:
                task.cancel()


async def _first_to_lead(racing: list[Awaitable[_Answers]], lead: asyncio.Future[Any]) -> None:
    """Resolve ``lead`` with the hits of the first of ``racing`` to find some (or none)."""
    for next_answer in asyncio.as_completed(racing):
        hits = [hit for found, _ in await next_answer for hit in found]
        if hits and not lead.done():
            lead.set_result(hits)
    if not lead.done():
        lead.set_result([])


def explain_empty_search(ctx: RunContext) -> NothingFound | None:
    """When no query found anything, why, in one plain line of the report's Gaps.

    Every search failed for a network reason: one line says the engine could not be
    reached and what works offline, in place of a resolver's error per query (those
    stay in the failure's ``detail``, the JSON report, and ``--verbose``). No search
    failed and only the documents folder was searched: the line says that nothing in
    the folder matched (the report said "see Gaps" and Gaps had nothing to say).
    """
    searched = ctx.tally.searched
    if not searched or any(searched.values()):
        return None
    failed, settings = ctx.tally.search_failures, ctx.settings
    if failed and all(f.unreachable for f in failed):
        reason = _unreachable_line(settings, [f.provider for f in failed])
        raw = "\n".join(f"{f.provider} search for “{f.query}” failed: {f.reason}" for f in failed)
        ctx.emit(Event("search_failed", reason, {"unreachable": True}))
        return NothingFound(Failure(url="", stage="search", reason=reason, detail=raw))
    if not failed:
        reason = _nothing_found_line(ctx)
        ctx.emit(Event("info", reason, {"queries": len(searched)}))
        return NothingFound(Failure(url="", stage="search", reason=reason))
    return None


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
        f"{plural(len(ctx.tally.searched), 'query', 'queries')}): try other words"
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
