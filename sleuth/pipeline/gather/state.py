"""The fetch stage's scheduler: the best candidates, a few at a time, until enough are read.

Kept apart from :mod:`sleuth.pipeline.quick` because it is the one intricate piece of the
pipeline: a window of concurrent downloads, failed pages replaced by the next in
line, pages judged (summarised) while others still download, a fuller ranking that
may arrive mid-way, budgets, and once enough are in, a short wait for the top-ranked
pages still on their way and none for the other stragglers.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sleuth.models import Candidate, Failure, FetchFailure, Page
from sleuth.pipeline.gather_rules import (
    MIN_ASIDE,
    WAITS,
    Gate,
    Gathered,
    KeepAll,
    PageCheck,
    Waits,
    is_local,
)
from sleuth.progress import Event, ProgressCallback, no_progress

if TYPE_CHECKING:
    from sleuth.budget import Budget
    from sleuth.fetch import Fetcher, RunFetcher

__all__ = ["MIN_ASIDE", "WAITS", "Gate", "Gathered", "PageCheck", "Waits", "gather_pages"]


async def gather_pages(
    candidates: list[Candidate],
    fetcher: Fetcher | RunFetcher,
    want: int,
    on_event: ProgressCallback = no_progress,
    budget: Budget | None = None,
    *,
    known: Mapping[str, Page | FetchFailure] | None = None,
    on_result: Callable[[Candidate, Page | FetchFailure], None] | None = None,
    accept: PageCheck | None = None,
    more: asyncio.Future[list[Candidate]] | None = None,
    waits: Waits = WAITS,
    gate: Gate | None = None,
    by_rank: bool = False,
    park: bool = False,
) -> Gathered:
    """Fetch the best candidates until ``want`` pages are read or a budget is reached.

    A few candidates beyond ``want`` are fetched at once so failures cost no extra
    round trip; a failed candidate is replaced by the next in line; once ``want``
    pages are in, only the top-ranked pages still on their way are waited for, briefly
    (``_Gatherer._wait_for_better``), and the best-ranked ``want`` pages are kept.
    ``known`` holds results already at hand by canonical URL (fresh in the page
    cache): they are taken first, in the order given, and cost no request and no
    fetch budget. ``on_result`` hears of every page and failure as it arrives.
    ``accept`` (the LLM reader's summariser) is started on each page as it arrives,
    while other pages still download; a page counts as read once it returns None,
    and is replaced by the next candidate when it returns a reason (the page is not
    relevant).

    ``more`` (a future the caller owns) resolves to a fuller ranking while pages
    are already being fetched (the model's follow-up queries, or the variant
    queries' hits): the candidates not tried yet are then taken in its order, and
    the pages kept are ordered by it. Gathering does not wait for it once ``want``
    pages are in. ``waits``: how long the best-ranked pages still out are then waited for.

    ``gate`` (the relevance gate, ``sleuth.stages.relevance.Relevance``) judges each page
    as it arrives, before ``accept``: a page it sets aside does not count as read and
    the next candidate is fetched instead, until as many pages were set aside as are
    wanted. Once gathering ends the gate chooses the sources among the pages read (in
    rank order); the pages it leaves out are failures of the ``read`` stage.

    ``by_rank`` (``--fetch-order rank``, a batch's default): rank alone decides which pages
    are read, never which downloads finish first or which pages a cache had (see
    ``_Gatherer._by_rank``).
    """
    gatherer = _Gatherer(
        candidates,
        fetcher,
        want,
        on_event,
        budget,
        on_result,
        accept,
        more,
        waits,
        gate or KeepAll(),
        by_rank,
        park and accept is not None,
    )
    return await gatherer.run(known or {})


class _Gatherer:
    """The state of one :func:`gather_pages` call."""

    def __init__(
        self,
        candidates: list[Candidate],
        fetcher: Fetcher | RunFetcher,
        want: int,
        on_event: ProgressCallback,
        budget: Budget | None,
        on_result: Callable[[Candidate, Page | FetchFailure], None] | None,
        accept: PageCheck | None,
        more: asyncio.Future[list[Candidate]] | None,
        waits: Waits = WAITS,
        gate: Gate | None = None,
        by_rank: bool = False,
        park: bool = False,
    ) -> None:
        self.candidates, self.fetcher, self.want = candidates, fetcher, want
        self.on_event, self.budget = on_event, budget
        self.on_result, self.accept, self.more = on_result, accept, more
        self.waits, self.by_rank, self.park = waits, by_rank, park
        self.gate: Gate = gate or KeepAll()
        #: Pages the gate set aside as they arrived (they do not count as read).
        self.aside = 0
        self.aside_cap = max(want, MIN_ASIDE)
        self.set_aside: set[str] = set()
        self.out = Gathered()
        self.queue = list(candidates)
        self.order = list(candidates)
        self.tried: set[str] = set()
        self.window = want + max(2, want // 2)
        self.running: dict[asyncio.Future[Page | FetchFailure], Candidate] = {}
        self.judging: dict[asyncio.Future[str | None], tuple[Candidate, Page]] = {}
        #: Pages read and not judged yet (``park``): judged only if a better one is rejected.
        self.parked: dict[str, tuple[Candidate, Page]] = {}
        self.done: dict[str, Page] = {}
        self.at_hand: Mapping[str, Page | FetchFailure] = {}
        self.more_taken = False
        self.started = 0.0
        #: When each candidate's download started; how long each page read took.
        self.launched: dict[str, float] = {}
        self.timings: list[float] = []
        #: Why the downloads still out were cut, when it was their bound (``_give_up_at``).
        self.cut_why: str | None = None

    async def run(self, known: Mapping[str, Page | FetchFailure]) -> Gathered:
        self.at_hand = known
        self.started = asyncio.get_running_loop().time()
        self._take_known()
        try:
            if self.by_rank and not all(is_local(c) for c in self.candidates):
                cut = await self._loop_by_rank()
                if cut is not None:
                    self._let_go(self.order[cut:])
            else:
                self._launch()
                await self._loop()
                await self._local_by_rank()
                await self._wait_for_better()
        finally:
            await self._drop_stragglers()
        # Pages finishing in the same wait can overshoot ``want``: the gate keeps the
        # best-ranked (each part of the question covered first, see the gate).
        done = self.done
        ranked = [(c, done[c.canonical_url]) for c in self.order if c.canonical_url in done]
        self.out.pages, left_out = self.gate.choose(ranked, self.want)
        self.out.failures += left_out
        return self.out

    def _promised(self) -> int:
        # Cached pages still being judged are counted as read, so a rerun whose pages
        # are all in the store sends no request while the (cached) verdicts come in.
        return sum(1 for c, _ in self.judging.values() if c.canonical_url in self.at_hand)

    def _coming(self) -> bool:
        # ``more`` is waited for (once) while it is pending or not yet taken in.
        return self.more is not None and not self.more_taken

    def _take_known(self) -> None:
        by_url = {c.canonical_url: c for c in self.candidates}
        for candidate in [by_url[key] for key in self.at_hand if key in by_url]:
            if len(self.done) + self._promised() >= self.want or self.aside >= self.aside_cap:
                break
            self.queue.remove(candidate)
            self.tried.add(candidate.canonical_url)
            self.out.attempted += 1
            self.out.cached += 1
            self._take(candidate, self.at_hand[candidate.canonical_url])

    def _launch(self) -> None:
        budget = self.budget
        while (
            self.queue
            and len(self.done) + self._promised() < self.want
            and self.aside < self.aside_cap
            and len(self.running) + len(self.judging) + len(self.done) + len(self.parked)
            < self.window
        ):
            if budget is not None and (reason := budget.exhausted()):
                self.out.stopped_by = reason
                return
            self._start(self.queue.pop(0))

    def _start(self, candidate: Candidate) -> None:
        self.tried.add(candidate.canonical_url)
        self.out.attempted += 1
        if self.budget is not None:
            self.budget.charge_fetch()
        self.on_event(Event("fetch_start", f"fetching {candidate.url}", {"url": candidate.url}))
        self.launched[candidate.canonical_url] = asyncio.get_running_loop().time()
        self.running[asyncio.ensure_future(self.fetcher.fetch(candidate.url))] = candidate

    async def _loop(self) -> None:
        budget = self.budget
        self._unpark()
        while (self.running or self.judging or self._coming()) and len(self.done) < self.want:
            timeout = budget.seconds_left() if budget is not None else None
            give_up = self._give_up_at()
            if give_up is not None:
                left = give_up - asyncio.get_running_loop().time()
                if left <= 0:
                    self.cut_why = (
                        f"it took longer than {self.waits.bound_factor:g}x this run's other pages"
                    )
                    return
                timeout = left if timeout is None else min(timeout, left)
            waiting: list[asyncio.Future[Any]] = [*self.running, *self.judging]
            if self._coming():
                assert self.more is not None
                waiting.append(self.more)
            finished, _ = await asyncio.wait(
                waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            for task in self._in_rank_order(finished):
                self._settle(task)
            self._unpark()
            # Only the time budget cuts pages already in flight; the others stop launches.
            if budget is not None and budget.seconds_left() == 0:
                self.out.stopped_by = budget.exhausted()
                return
            self._launch()

    def _by_rank(self) -> tuple[int | None, Candidate | None, int]:
        """Where rank order puts the end of the sources, walking the ranking from the top.

        Each candidate is read, set aside, failed, still out (downloading or being judged)
        or not tried. The sources are settled once ``want`` are read (or ``aside_cap`` set
        aside) with none better-ranked still out: then (one past the last that counts,
        None, 0). Otherwise (None, the first candidate not tried before that point if one
        is needed, how many pages up to it are read or still out). What a page gives does
        not depend on when it arrives or whether a cache had it (a download's own time
        cap, ``--timeout``, ends the wait for one that never finishes), so neither does
        the choice: a batch in one process and on Ray agree (issue 25).
        """
        out = {c.canonical_url for _, c in self._out_pairs()}
        read = aside = pending = end = 0
        for candidate in self.order:
            url = candidate.canonical_url
            if url in out:
                pending += 1
            elif url not in self.tried:
                return None, candidate, read + pending
            else:
                read += url in self.done
                aside += url in self.set_aside
            end += 1
            if read >= self.want or aside >= self.aside_cap:
                break
        return (None if pending else end), None, read + pending

    async def _loop_by_rank(self) -> int | None:
        """Fetch down the ranking until rank order settles the sources (``_by_rank``).

        As in a live run, up to ``window`` pages are read or out at once, and a failed or
        off-topic page is replaced by the next in line; a fuller ranking on its way
        (``more``) is waited for. Returns where the sources end; None when a budget
        stopped gathering first.
        """
        budget = self.budget
        while True:
            cut, untried, busy = self._by_rank()
            while untried is not None and busy < self.window:
                if budget is not None and (reason := budget.exhausted()):
                    self.out.stopped_by = reason
                    break
                if untried in self.queue:
                    self.queue.remove(untried)
                self._start(untried)
                cut, untried, busy = self._by_rank()
            if cut is not None and not self._coming():
                return cut
            waiting: list[asyncio.Future[Any]] = [*self.running, *self.judging]
            if self._coming():
                assert self.more is not None
                waiting.append(self.more)
            if not waiting:
                return None
            finished, _ = await asyncio.wait(
                waiting,
                timeout=budget.seconds_left() if budget is not None else None,
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in finished:
                self._settle(task)
            if budget is not None and budget.seconds_left() == 0:
                self.out.stopped_by = budget.exhausted()
                return None

    async def _wait_for_better(self) -> None:
        """Once enough pages are read, give the top-ranked ones still on their way a little longer.

        The first ``want`` pages to arrive are not the best ``want``: without this, a
        top-ranked page that is merely slow loses its place to the seventh-ranked one
        (on the HotpotQA bench, a gold page was cut this way in most questions that
        missed one). A page in the top half of the ``want`` best-ranked, ranked above
        the worst one kept and still downloading or being summarised, gets 40% as long
        again as gathering has taken (``Waits.grace_share``, at least ``grace_min_s``); the
        best-ranked page of all gets until ``top_s`` after gathering began, if that is later.
        Only a page that may displace one kept is waited for: with a relevance gate, one
        whose search result looks on-topic (issue 26; an off-topic one would be set
        aside on arrival). Whatever is still out then is cut as before. Waiting for any
        better-ranked page instead cost more than it found (bench: wall 1.42x the
        critical path without a model).
        Pages of ``Waits.own`` still out are waited for until they come or fail.
        """
        if len(self.done) < self.want or self.out.stopped_by:
            return
        loop = asyncio.get_running_loop()
        waits = self.waits
        grace_end = loop.time() + max(
            waits.grace_min_s, waits.grace_share * (loop.time() - self.started)
        )
        top_end = max(grace_end, self.started + waits.top_s)
        # Only downloads and summaries are awaited below, never ``more``: the order holds.
        position = {c.canonical_url: i for i, c in enumerate(self.order)}
        told = False
        while True:
            worst = sorted(position.get(url, len(position)) for url in self.done)[self.want - 1]
            top = min(worst, max(1, self.want // 2))
            now = loop.time()
            # (rank, task) of each better-ranked page still out; past the grace, only the first.
            # Only a page that may displace one kept: its search result looks on-topic.
            # (when its wait ends, task): never past the page's own bound (``_bound``).
            ends = [
                (min(top_end if rank == 0 else grace_end, self._bound(task)), task)
                for rank, task in self._out_there(position)
                if rank < top and self.gate.likely(self._candidate_of(task))
            ]
            # Pages of ``Waits.own``: until they come or fail (the fetch timeout bounds them).
            own = {
                task
                for _, task in self._out_there(position)
                if self._candidate_of(task).canonical_url in waits.own
            }
            ends = [(math.inf, task) for task in own] + [e for e in ends if e[1] not in own]
            better = [(end, task) for end, task in ends if end > now]
            budget_left = self.budget.seconds_left() if self.budget is not None else None
            left = math.inf if budget_left is None else budget_left
            if not better or left <= 0:
                return
            if not told:  # else the status line sits on the last page read, unexplained
                told = True
                longest = min(max(end for end, _ in better) - now, left)
                pages = f"{len(better)} better-ranked page{'s' if len(better) > 1 else ''}"
                until = "until they come" if math.isinf(longest) else f"up to {longest:.1f} s"
                self.on_event(
                    Event(
                        "info",
                        f"waiting {until} for {pages} still on the way",
                        {
                            "pages": len(better),
                            "seconds": None if math.isinf(longest) else round(longest, 3),
                        },
                    )
                )
            # Awake at the first page's end: from then on it is no longer waited for.
            timeout = min(min(end for end, _ in better) - now, left)
            finished, _ = await asyncio.wait(
                [task for _, task in better],
                timeout=None if math.isinf(timeout) else timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in finished:
                self._settle(task)
            self._unpark()

    def _give_up_at(self) -> float | None:
        """When to stop waiting for the last downloads (issue 26), else None.

        Only once nothing more can start (no candidate left to try, no fuller ranking
        coming), at least one page is read and none is being judged: the downloads still
        out are then all the run waits for, each until its own bound (``_bound``) and at
        least ``Waits.last_min_s`` from its start. Without this a page that never finishes
        held the run to its download cap (15 s) for a fifth source; with the bound alone
        (floor 1 s) HotpotQA all-gold recall fell 18 -> 12 of 30, slow gold pages cut; with
        5 s it stays 18 (seed 8; 16 on seed 9, as before) and the suite takes 19 s, not 28.
        Local documents are never cut.
        """
        if (
            self._coming()
            or (self.queue and self.aside < self.aside_cap)
            or not self.done
            or self.judging
            or not self.running
            or any(is_local(c) for c in self.running.values())
        ):
            return None
        end = max(
            max(self._bound(task), self.launched[c.canonical_url] + self.waits.last_min_s)
            for task, c in self.running.items()
        )
        return None if math.isinf(end) else end

    def _bound(self, task: asyncio.Future[Any]) -> float:
        """When waiting for a download still out must end, whatever its rank: its start
        plus ``bound_factor`` times the 90th percentile of this run's own page times
        (``Page.elapsed_s`` of the pages read), and at least ``bound_min_s`` (issue 26).
        A page being judged (downloaded already) has no such bound."""
        url = self.running[task].canonical_url if task in self.running else None
        start = self.launched.get(url) if url is not None else None
        if start is None or not self.timings:
            return math.inf
        times = sorted(self.timings)
        p90 = times[int(0.9 * (len(times) - 1))]
        return start + max(self.waits.bound_min_s, self.waits.bound_factor * p90)

    async def _local_by_rank(self) -> None:
        """Local documents (``file://``) cost no request: rank decides which are kept,
        not the order their reads finish in (issue 23: two identical documents-mode runs
        kept different pages for 38 of 100 questions).

        With only local candidates, the fuller ranking is awaited, then candidates are
        settled in rank order until ``want`` pages are read or ``want`` set aside by the
        gate (what each one gives is the same every run); pages read further down the
        ranking meanwhile are let go, as if never read. Bounded by the time budget.
        """
        if not self.candidates or not all(is_local(c) for c in self.candidates):
            return
        if self.more is not None and not self.more_taken:
            await self._settle_one([self.more])
        while not self.out.stopped_by:
            read = aside = 0
            for rank, candidate in enumerate(self.order):
                url = candidate.canonical_url
                if url not in self.tried:
                    if candidate in self.queue:
                        self.queue.remove(candidate)
                    self._start(candidate)
                pending = [task for task, c in self._out_pairs() if c.canonical_url == url]
                if pending:
                    if not await self._settle_one(pending):
                        return
                    break  # settled: count again from the top
                read += url in self.done
                aside += url in self.set_aside
                if read >= self.want or aside >= self.want:
                    self._let_go(self.order[rank + 1 :])
                    return
            else:
                return

    def _out_pairs(self) -> list[tuple[asyncio.Future[Any], Candidate]]:
        return [*self.running.items(), *((task, c) for task, (c, _) in self.judging.items())]

    def _let_go(self, below: list[Candidate]) -> None:
        """Forget what ``below`` (ranked under the last page needed) gave: read or not."""
        urls = {c.canonical_url for c in below}
        for url in urls & set(self.done):
            del self.done[url]
        self.gate.forget(urls)  # (those still out are cut with the other stragglers)

    async def _settle_one(self, tasks: list[asyncio.Future[Any]]) -> bool:
        """Wait for the first of ``tasks`` (within the time budget) and settle what ended."""
        left = self.budget.seconds_left() if self.budget is not None else None
        finished, _ = await asyncio.wait(tasks, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        for task in finished:
            self._settle(task)
        return bool(finished)

    def _candidate_of(self, task: asyncio.Future[Any]) -> Candidate:
        running = self.running.get(task)
        return running if running is not None else self.judging[task][0]

    def _out_there(self, position: Mapping[str, int]) -> list[tuple[int, asyncio.Future[Any]]]:
        """(rank, task) of every page still downloading or being summarised."""
        return [
            (position.get(c.canonical_url, len(position)), task) for task, c in self._out_pairs()
        ]

    def _take(self, candidate: Candidate, result: Page | FetchFailure) -> None:
        if self.on_result is not None:
            self.on_result(candidate, result)
        if isinstance(result, Page):
            if result.elapsed_s:
                self.timings.append(result.elapsed_s)
            if self.gate.check(candidate, result) is not None:
                # Off-topic as read: the next candidate is fetched in its place; the gate
                # keeps it (a page on-topic ones name may still be chosen) and reports it.
                self.aside += 1
                self.set_aside.add(candidate.canonical_url)
                self.on_event(
                    Event(
                        "fetched",
                        f"read {result.title or candidate.url} (off-topic, set aside)",
                        {"url": candidate.url, "chars": len(result.text), "off_topic": True},
                    )
                )
                return
            if self.accept is None:
                self.done[candidate.canonical_url] = result
            elif self.park and self._ahead(candidate) >= self.want:
                self.parked[candidate.canonical_url] = (candidate, result)
            else:
                self._judge(candidate, result)
            self.on_event(
                Event(
                    "fetched",
                    f"read {result.title or candidate.url}",
                    {"url": candidate.url, "chars": len(result.text)},
                )
            )
        else:
            self.out.failures.append(Failure(url=candidate.url, reason=result.reason))
            self.on_event(
                Event(
                    "fetch_failed",
                    f"{candidate.url}: {result.reason}",
                    {"url": candidate.url, "reason": result.reason},
                )
            )

    def _in_rank_order(self, finished: set[asyncio.Future[Any]]) -> list[asyncio.Future[Any]]:
        """``finished`` best-ranked first when parking (what is parked depends on it)."""
        if not self.park:
            return list(finished)
        rank = {c.canonical_url: i for i, c in enumerate(self.order)}
        pairs = dict(self._out_pairs())
        return sorted(
            finished,
            key=lambda t: rank.get(pairs[t].canonical_url, len(rank)) if t in pairs else -1,
        )

    def _judge(self, candidate: Candidate, page: Page) -> None:
        assert self.accept is not None
        judged = asyncio.ensure_future(self.accept(candidate, page))
        self.judging[judged] = (candidate, page)

    def _ahead(self, candidate: Candidate) -> int:
        """Pages read or being judged that rank above ``candidate``."""
        rank = {c.canonical_url: i for i, c in enumerate(self.order)}
        mine = rank.get(candidate.canonical_url, len(rank))
        judging = [c.canonical_url for c, _ in self.judging.values()]
        return sum(1 for url in (*self.done, *judging) if rank.get(url, len(rank)) < mine)

    def _unpark(self) -> None:
        """Judge the best parked pages while fewer than ``want`` are read or being judged
        (one judged was rejected, or nothing else is on its way)."""
        while self.parked and len(self.done) + len(self.judging) < self.want:
            rank = {c.canonical_url: i for i, c in enumerate(self.order)}
            best = min(self.parked, key=lambda url: rank.get(url, len(rank)))
            self._judge(*self.parked.pop(best))

    def _settle(self, task: asyncio.Future[Any]) -> None:
        if task is self.more:
            self.more_taken = True
            fuller: list[Candidate] = task.result()
            self.queue[:] = [c for c in fuller if c.canonical_url not in self.tried]
            urls = {c.canonical_url for c in fuller}
            self.order = fuller + [c for c in self.order if c.canonical_url not in urls]
        elif task in self.running:
            self._take(self.running.pop(task), task.result())
        else:
            candidate, page = self.judging.pop(task)
            reason = task.result()
            if reason is None:
                self.done[candidate.canonical_url] = page
            else:
                self.out.failures.append(Failure(url=candidate.url, reason=reason, stage="read"))

    async def _drop_stragglers(self) -> None:
        out = self.out
        why = out.stopped_by or self.cut_why or "enough sources were read first"
        for task, candidate in self.running.items():
            task.cancel()
            out.failures.append(Failure(url=candidate.url, reason=f"not waited for: {why}"))
        for judged, (candidate, page) in self.judging.items():
            judged.cancel()
            # Cut by the time budget, a page read but not yet summarised is still a source.
            if out.stopped_by and len(self.done) < self.want:
                self.done[candidate.canonical_url] = page
            else:
                out.failures.append(
                    Failure(url=candidate.url, reason=f"not waited for: {why}", stage="read")
                )
        for candidate, page in self.parked.values():  # likewise a page read, not judged
            if out.stopped_by and len(self.done) < self.want:
                self.done[candidate.canonical_url] = page
        if self.running or self.judging:
            await asyncio.gather(*self.running, *self.judging, return_exceptions=True)
