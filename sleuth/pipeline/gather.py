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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sleuth.models import Candidate, Failure, FetchFailure, Page
from sleuth.progress import Event, ProgressCallback, no_progress

if TYPE_CHECKING:
    from sleuth.budget import Budget
    from sleuth.fetch import Fetcher, RunFetcher

#: The fetch stage's ``accept`` hook: None to use a page, else why it is not used.
PageCheck = Callable[[Candidate, Page], Awaitable[str | None]]
Pages = list[tuple[Candidate, Page]]


class Gate(Protocol):
    """What decides which pages read are sources (``sleuth.stages.relevance.Relevance``)."""

    def check(self, candidate: Candidate, page: Page) -> str | None:
        """As a page arrives: None to read it on, else why it is set aside."""

    def choose(self, pages: Sequence[tuple[Candidate, Page]], want: int
               ) -> tuple[Pages, list[Failure]]:
        """The sources among ``pages`` (in rank order), and the pages left out, as failures."""

    def forget(self, urls: set[str]) -> None:
        """Drop what was judged of ``urls`` (canonical): as if they had never been read."""

    def likely(self, candidate: Candidate) -> bool:
        """Whether a page not read yet may become a source (judged on its search result)."""


class _Keep:
    """Without a gate: every page read is on-topic; the best-ranked are kept."""

    def check(self, candidate: Candidate, page: Page) -> str | None:
        return None

    def choose(self, pages: Sequence[tuple[Candidate, Page]], want: int
               ) -> tuple[Pages, list[Failure]]:
        return list(pages[:want]), []

    def forget(self, urls: set[str]) -> None:
        return None

    def likely(self, candidate: Candidate) -> bool:
        return True


def _local(candidate: Candidate) -> bool:
    """A local document (``file://``): read from disk, no request, no waiting on a server."""
    return candidate.url[:5].lower() == "file:"


@dataclass(frozen=True)
class Waits:
    """How long gathering waits, once enough pages are read, for better-ranked ones.

    A page in the top half of those wanted that is still on its way gets
    ``grace_share`` of the time gathering has taken so far, and at least
    ``grace_min_s``, to come in (see ``_Gatherer._wait_for_better``). 0.4, not 0.5: the
    same HotpotQA recall at full latency, and wall within 1.2x the critical path on the
    three bench seeds (bench/README.md).

    The best-ranked candidate is the page a reader opens first: still on its way once
    enough pages are read, it is waited for until ``top_s`` after gathering began (when
    that is later than the grace above). Pages take 0.4 s at the median and over 3 s one
    time in ten; the grace alone cut the top page for 2-3 s pages, the commonest reason a
    HotpotQA report missed a gold page. Only the first page: waiting as long for the
    second too cost seed 9 a wall of 1.58x its critical path (bench/README.md).
    """

    grace_share: float = 0.4
    grace_min_s: float = 0.25
    top_s: float = 3.0
    #: Canonical URLs of pages waited for until they come or fail, wherever they rank: a
    #: deep research's name branch and the page named so (issue 24).
    own: frozenset[str] = frozenset()


#: Off-topic pages set aside before gathering stops looking further down the ranking: at
#: least this many, or ``want`` when more are wanted (with ``--max-sources 2``, two
#: off-topic PDFs ranked first ended a run with one source while on-topic pages waited).
MIN_ASIDE = 6

#: The waits of a run (``--top-wait`` sets ``top_s``; the tests of the waits pass others).
WAITS = Waits()


@dataclass
class Gathered:
    """Pages in candidate order, what went wrong along the way, and why gathering stopped."""

    pages: list[tuple[Candidate, Page]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    attempted: int = 0
    #: Of ``attempted``, how many were answered by ``known`` (the page cache).
    cached: int = 0
    stopped_by: str | None = None


async def gather_pages(candidates: list[Candidate], fetcher: Fetcher | RunFetcher, want: int,
                       on_event: ProgressCallback = no_progress,
                       budget: Budget | None = None, *,
                       known: Mapping[str, Page | FetchFailure] | None = None,
                       on_result: Callable[[Candidate, Page | FetchFailure], None] | None = None,
                       accept: PageCheck | None = None,
                       more: asyncio.Future[list[Candidate]] | None = None,
                       waits: Waits = WAITS, gate: Gate | None = None,
                       park: bool = False) -> Gathered:
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
    """
    gatherer = _Gatherer(candidates, fetcher, want, on_event, budget, on_result, accept, more,
                         waits, gate or _Keep())
    gatherer.park = park and accept is not None
    return await gatherer.run(known or {})


class _Gatherer:
    """The state of one :func:`gather_pages` call."""

    def __init__(self, candidates: list[Candidate], fetcher: Fetcher | RunFetcher, want: int,
                 on_event: ProgressCallback, budget: Budget | None,
                 on_result: Callable[[Candidate, Page | FetchFailure], None] | None,
                 accept: PageCheck | None, more: asyncio.Future[list[Candidate]] | None,
                 waits: Waits = WAITS, gate: Gate | None = None) -> None:
        self.candidates, self.fetcher, self.want = candidates, fetcher, want
        self.on_event, self.budget = on_event, budget
        self.on_result, self.accept, self.more = on_result, accept, more
        self.waits = waits
        self.gate: Gate = gate or _Keep()
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
        self.park = False
        self.done: dict[str, Page] = {}
        self.at_hand: Mapping[str, Page | FetchFailure] = {}
        self.more_taken = False
        self.started = 0.0

    async def run(self, known: Mapping[str, Page | FetchFailure]) -> Gathered:
        self.at_hand = known
        self.started = asyncio.get_running_loop().time()
        self._take_known()
        self._launch()
        try:
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
        while (self.queue and len(self.done) + self._promised() < self.want
               and self.aside < self.aside_cap
               and len(self.running) + len(self.judging) + len(self.done) + len(self.parked)
               < self.window):
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
        self.running[asyncio.ensure_future(self.fetcher.fetch(candidate.url))] = candidate

    async def _loop(self) -> None:
        budget = self.budget
        self._unpark()
        while (self.running or self.judging or self._coming()) and len(self.done) < self.want:
            timeout = budget.seconds_left() if budget is not None else None
            waiting: list[asyncio.Future[Any]] = [*self.running, *self.judging]
            if self._coming():
                assert self.more is not None
                waiting.append(self.more)
            finished, _ = await asyncio.wait(waiting, timeout=timeout,
                                             return_when=asyncio.FIRST_COMPLETED)
            for task in self._in_rank_order(finished):
                self._settle(task)
            self._unpark()
            # Only the time budget cuts pages already in flight; the others stop launches.
            if budget is not None and budget.seconds_left() == 0:
                self.out.stopped_by = budget.exhausted()
                return
            self._launch()

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
        grace_end = loop.time() + max(waits.grace_min_s,
                                      waits.grace_share * (loop.time() - self.started))
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
            better = [(rank, task) for rank, task in self._out_there(position)
                      if rank < top and (rank == 0 or now < grace_end)
                      and self.gate.likely(self._candidate_of(task))]
            timeout = (top_end if any(rank == 0 for rank, _ in better) else grace_end) - now
            own = [(rank, task) for rank, task in self._out_there(position)
                   if self._candidate_of(task).canonical_url in waits.own]
            if own:  # until they come or fail: the fetch timeout bounds them
                better, timeout = own + [b for b in better if b not in own], math.inf
            left = self.budget.seconds_left() if self.budget is not None else None
            if left is not None:
                timeout = min(timeout, left)
            if not better or timeout <= 0:
                return
            if not told:  # else the status line sits on the last page read, unexplained
                told = True
                pages = f"{len(better)} better-ranked page{'s' if len(better) > 1 else ''}"
                bound = math.isinf(timeout)
                until = "until they come" if bound else f"up to {timeout:.1f} s"
                self.on_event(Event("info", f"waiting {until} for {pages} still on the way",
                                    {"pages": len(better),
                                     "seconds": None if bound else round(timeout, 3)}))
            finished, _ = await asyncio.wait([task for _, task in better],
                                             timeout=None if math.isinf(timeout) else timeout,
                                             return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                self._settle(task)
            self._unpark()

    async def _local_by_rank(self) -> None:
        """Local documents (``file://``) cost no request: rank decides which are kept,
        not the order their reads finish in (issue 23: two identical documents-mode runs
        kept different pages for 38 of 100 questions).

        With only local candidates, the fuller ranking is awaited, then candidates are
        settled in rank order until ``want`` pages are read or ``want`` set aside by the
        gate (what each one gives is the same every run); pages read further down the
        ranking meanwhile are let go, as if never read. Bounded by the time budget.
        """
        if not self.candidates or not all(_local(c) for c in self.candidates):
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
                    self._let_go(self.order[rank + 1:])
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
        finished, _ = await asyncio.wait(tasks, timeout=left,
                                         return_when=asyncio.FIRST_COMPLETED)
        for task in finished:
            self._settle(task)
        return bool(finished)

    def _candidate_of(self, task: asyncio.Future[Any]) -> Candidate:
        running = self.running.get(task)
        return running if running is not None else self.judging[task][0]

    def _out_there(self, position: Mapping[str, int]) -> list[tuple[int, asyncio.Future[Any]]]:
        """(rank, task) of every page still downloading or being summarised."""
        return [(position.get(c.canonical_url, len(position)), task)
                for task, c in self._out_pairs()]

    def _take(self, candidate: Candidate, result: Page | FetchFailure) -> None:
        if self.on_result is not None:
            self.on_result(candidate, result)
        if isinstance(result, Page):
            if self.gate.check(candidate, result) is not None:
                # Off-topic as read: the next candidate is fetched in its place; the gate
                # keeps it (a page on-topic ones name may still be chosen) and reports it.
                self.aside += 1
                self.set_aside.add(candidate.canonical_url)
                self.on_event(Event("fetched", f"read {result.title or candidate.url} "
                                    "(off-topic, set aside)",
                                    {"url": candidate.url, "chars": len(result.text),
                                     "off_topic": True}))
                return
            if self.accept is None:
                self.done[candidate.canonical_url] = result
            elif self.park and self._ahead(candidate) >= self.want:
                self.parked[candidate.canonical_url] = (candidate, result)
            else:
                self._judge(candidate, result)
            self.on_event(Event("fetched", f"read {result.title or candidate.url}",
                                {"url": candidate.url, "chars": len(result.text)}))
        else:
            self.out.failures.append(Failure(url=candidate.url, reason=result.reason))
            self.on_event(Event("fetch_failed", f"{candidate.url}: {result.reason}",
                                {"url": candidate.url, "reason": result.reason}))

    def _in_rank_order(self, finished: set[asyncio.Future[Any]]) -> list[asyncio.Future[Any]]:
        """``finished`` best-ranked first when parking (what is parked depends on it)."""
        if not self.park:
            return list(finished)
        rank = {c.canonical_url: i for i, c in enumerate(self.order)}
        pairs = dict(self._out_pairs())
        return sorted(finished, key=lambda t: rank.get(pairs[t].canonical_url, len(rank))
                      if t in pairs else -1)

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
                self.out.failures.append(Failure(url=candidate.url, reason=reason,
                                                 stage="read"))

    async def _drop_stragglers(self) -> None:
        out = self.out
        why = out.stopped_by or "enough sources were read first"
        for task, candidate in self.running.items():
            task.cancel()
            out.failures.append(Failure(url=candidate.url, reason=f"not waited for: {why}"))
        for judged, (candidate, page) in self.judging.items():
            judged.cancel()
            # Cut by the time budget, a page read but not yet summarised is still a source.
            if out.stopped_by and len(self.done) < self.want:
                self.done[candidate.canonical_url] = page
            else:
                out.failures.append(Failure(url=candidate.url, reason=f"not waited for: {why}",
                                            stage="read"))
        for candidate, page in self.parked.values():  # likewise a page read, not judged
            if out.stopped_by and len(self.done) < self.want:
                self.done[candidate.canonical_url] = page
        if self.running or self.judging:
            await asyncio.gather(*self.running, *self.judging, return_exceptions=True)
