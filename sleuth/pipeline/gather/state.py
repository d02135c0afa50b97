"""What one gathering holds, and the moves every fetch policy makes with it.

:class:`Gathering` is the state of one :func:`~sleuth.pipeline.gather.gather_pages` call:
the candidates in line, the downloads and summaries still out, the pages read, parked or
set aside, and what goes wrong. Its methods are the moves every policy shares: start a
download, take a result (through the gate, then the reader's ``accept`` or the parking
lot), settle what finished, cut the stragglers at the end. A :class:`Policy` decides the
rest: which candidates to start, how long to wait, and which pages may wait unjudged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sleuth import timeline
from sleuth.models import Candidate, Failure, FetchFailure, Page
from sleuth.pipeline.gather.rules import MIN_ASIDE, Gate, Gathered, KeepAll, PageCheck
from sleuth.progress import Event, ProgressCallback, no_progress

if TYPE_CHECKING:
    from sleuth.budget import Budget
    from sleuth.fetch import Fetcher, RunFetcher

__all__ = ["GatherOptions", "Gathering", "Policy", "window"]

Task = asyncio.Future[Any]


def window(want: int) -> int:
    """Pages on their way (or read) at once for ``want`` pages: a few beyond those wanted,
    so a failure costs no extra round trip."""
    return want + max(2, want // 2)


class Policy(Protocol):
    """How one mode gathers: quick mode's window, a deep research's branch, rank order."""

    async def gather(self, g: Gathering) -> None:
        """Start downloads and settle what comes until this mode has what it wants (or a
        budget ends it). What is still out afterwards is cut by the caller."""

    def holds(self, g: Gathering, candidate: Candidate) -> bool:
        """Whether a page just read waits unjudged (parked) until it may be kept."""


@dataclass(frozen=True)
class GatherOptions:
    """What a gathering is asked for, and how (``policy``).

    ``want``: pages to read. ``known``: results already at hand by canonical URL (fresh
    in the page cache), taken first, in the order given, at no request and no fetch
    budget. ``on_result`` hears of every page and failure as it arrives. ``accept`` (the
    reader's summariser) is started on each page as it arrives, while other pages still
    download: a page counts as read once it returns None, and is replaced by the next
    candidate when it returns a reason. ``more``: a future the caller owns that resolves
    to a fuller ranking while pages are already being fetched; the candidates not tried
    yet are then taken in its order, and the pages kept are ordered by it. ``gate``
    judges each page as it arrives, before ``accept``, and chooses the sources at the
    end (see :class:`~sleuth.pipeline.gather.rules.Gate`).
    """

    want: int
    policy: Policy
    on_event: ProgressCallback = no_progress
    budget: Budget | None = None
    known: Mapping[str, Page | FetchFailure] = field(default_factory=dict)
    on_result: Callable[[Candidate, Page | FetchFailure], None] | None = None
    accept: PageCheck | None = None
    more: asyncio.Future[list[Candidate]] | None = None
    gate: Gate = field(default_factory=KeepAll)
    #: Leave the downloads still out when gathering ends to finish while the report is
    #: written (``Gathered.late``) instead of cutting them: the driver settles them.
    late: bool = False
    #: Hears of each page the gate lets through, as it arrives (before ``accept``): the
    #: driver starts the work each source will need while other pages download.
    on_page: Callable[[Candidate, Page], None] | None = None


class Gathering:
    """The state of one gathering, and the moves every policy shares."""

    def __init__(
        self, candidates: list[Candidate], fetcher: Fetcher | RunFetcher, options: GatherOptions
    ) -> None:
        self.candidates, self.fetcher, self.options = candidates, fetcher, options
        self.want = options.want
        self.budget = options.budget
        self.more = options.more
        self.gate = options.gate
        self.policy = options.policy
        #: Pages the gate set aside as they arrived (they do not count as read).
        self.aside = 0
        self.aside_cap = max(self.want, MIN_ASIDE)
        self.set_aside: set[str] = set()
        self.out = Gathered()
        self.queue = list(candidates)
        self.order = list(candidates)
        self.tried: set[str] = set()
        self.window = window(self.want)
        self.running: dict[Task, Candidate] = {}
        self.judging: dict[Task, tuple[Candidate, Page]] = {}
        #: Pages read and not judged yet (``Policy.holds``): judged only if one is needed.
        self.parked: dict[str, tuple[Candidate, Page]] = {}
        self.done: dict[str, Page] = {}
        self.at_hand: Mapping[str, Page | FetchFailure] = options.known
        self.more_taken = False
        self.started = 0.0
        #: When each candidate's download started; how long each page read took.
        self.launched: dict[str, float] = {}
        self.timings: list[float] = []
        #: Why the downloads still out were cut, when it was their bound (``Window``).
        self.cut_why: str | None = None

    async def run(self) -> Gathered:
        """Take what is known, let the policy gather, cut the stragglers, choose."""
        self.started = asyncio.get_running_loop().time()
        self.take_known()
        try:
            await self.policy.gather(self)
        finally:
            await self.drop_stragglers()
        # Pages finishing in the same wait can overshoot ``want``: the gate keeps the
        # best-ranked (each part of the question covered first, see the gate).
        done = self.done
        ranked = [(c, done[c.canonical_url]) for c in self.order if c.canonical_url in done]
        self.out.pages, left_out = self.gate.choose(ranked, self.want)
        self.out.failures += left_out
        return self.out

    # -- what is where ---------------------------------------------------------------------
    def promised(self) -> int:
        """Cached pages still being judged: counted as read, so a rerun whose pages are all
        in the store sends no request while the (cached) verdicts come in."""
        return sum(1 for c, _ in self.judging.values() if c.canonical_url in self.at_hand)

    def coming(self) -> bool:
        """Whether ``more`` is still to be waited for (once): pending or not yet taken in."""
        return self.more is not None and not self.more_taken

    def out_pairs(self) -> list[tuple[Task, Candidate]]:
        """(task, candidate) of every page still downloading or being judged."""
        return [*self.running.items(), *((task, c) for task, (c, _) in self.judging.items())]

    def out_there(self, position: Mapping[str, int]) -> list[tuple[int, Task]]:
        """(rank, task) of every page still downloading or being summarised."""
        return [
            (position.get(c.canonical_url, len(position)), task) for task, c in self.out_pairs()
        ]

    def candidate_of(self, task: Task) -> Candidate:
        running = self.running.get(task)
        return running if running is not None else self.judging[task][0]

    def rank(self) -> dict[str, int]:
        """Each candidate's place in the current order, by canonical URL."""
        return {c.canonical_url: i for i, c in enumerate(self.order)}

    def ahead(self, candidate: Candidate) -> int:
        """Pages read or being judged that rank above ``candidate``."""
        rank = self.rank()
        mine = rank.get(candidate.canonical_url, len(rank))
        judging = [c.canonical_url for c, _ in self.judging.values()]
        return sum(1 for url in (*self.done, *judging) if rank.get(url, len(rank)) < mine)

    # -- moves -----------------------------------------------------------------------------
    def take_known(self) -> None:
        """Take the results already at hand, in the order given, until enough."""
        by_url = {c.canonical_url: c for c in self.candidates}
        for candidate in [by_url[key] for key in self.at_hand if key in by_url]:
            if len(self.done) + self.promised() >= self.want or self.aside >= self.aside_cap:
                break
            self.queue.remove(candidate)
            self.tried.add(candidate.canonical_url)
            self.out.attempted += 1
            self.out.cached += 1
            result = self.at_hand[candidate.canonical_url]
            if isinstance(result, Page):
                timeline.instant("download", "fetch", candidate.url, detail="already read")
            else:
                timeline.instant("download", "fetch", candidate.url, "failed", detail=result.reason)
            self.take(candidate, result)

    def launch(self) -> None:
        """Start the next candidates in line while fewer than ``window`` are out or read."""
        budget = self.budget
        while (
            self.queue
            and len(self.done) + self.promised() < self.want
            and self.aside < self.aside_cap
            and len(self.running) + len(self.judging) + len(self.done) + len(self.parked)
            < self.window
        ):
            if budget is not None and (reason := budget.exhausted()):
                self.out.stopped_by = reason
                return
            self.start(self.queue.pop(0))

    def start(self, candidate: Candidate) -> None:
        """Start downloading ``candidate`` (one fetch of the budget)."""
        self.tried.add(candidate.canonical_url)
        self.out.attempted += 1
        if self.budget is not None:
            self.budget.charge_fetch()
        url = candidate.url
        self.options.on_event(Event("fetch_start", f"fetching {url}", {"url": url}))
        self.launched[candidate.canonical_url] = asyncio.get_running_loop().time()
        self.running[asyncio.ensure_future(self.fetcher.fetch(url))] = candidate

    def take(self, candidate: Candidate, result: Page | FetchFailure) -> None:
        """A result that came: a failure, a page set aside, parked, judged or read."""
        if self.options.on_result is not None:
            self.options.on_result(candidate, result)
        url, say = candidate.url, self.options.on_event
        if not isinstance(result, Page):
            self.out.failures.append(Failure(url=url, reason=result.reason))
            reason = result.reason
            say(Event("fetch_failed", f"{url}: {reason}", {"url": url, "reason": reason}))
            return
        if result.elapsed_s:
            self.timings.append(result.elapsed_s)
        title = result.title or url
        if self.gate.check(candidate, result) is not None:
            # Off-topic as read: the next candidate is fetched in its place; the gate
            # keeps it (a page on-topic ones name may still be chosen) and reports it.
            self.put_aside(
                candidate.canonical_url, url, result, f"read {title} (off-topic, set aside)"
            )
            return
        if self.options.on_page is not None:
            self.options.on_page(candidate, result)
        if self.options.accept is None:
            self.done[candidate.canonical_url] = result
            self.set_aside_outranked()
        elif self.policy.holds(self, candidate):
            self.parked[candidate.canonical_url] = (candidate, result)
        else:
            self.judge(candidate, result)
        say(Event("fetched", f"read {title}", {"url": url, "chars": len(result.text)}))

    def set_aside_outranked(self) -> None:
        """Set aside the pages read that a better page read since has made off-topic (the
        gate's ``outranked``): they would not be sources, so others are read instead."""
        for canonical in self.gate.outranked(list(self.done)):
            page = self.done.pop(canonical)
            title = page.title or page.url
            self.put_aside(
                canonical, page.url, page, f"set aside {title} (off-topic beside a better page)"
            )

    def put_aside(self, canonical: str, url: str, page: Page, message: str) -> None:
        """Count a page read as set aside, not read (gathering reads another in its
        place), and say so with ``message``."""
        self.aside += 1
        self.set_aside.add(canonical)
        data: dict[str, Any] = {"url": url, "chars": len(page.text), "off_topic": True}
        self.options.on_event(Event("fetched", message, data))

    def judge(self, candidate: Candidate, page: Page) -> None:
        """Start the reader's verdict on a page read."""
        assert self.options.accept is not None
        judged = asyncio.ensure_future(self.options.accept(candidate, page))
        self.judging[judged] = (candidate, page)

    def unpark(self) -> None:
        """Judge the best parked pages while fewer than ``want`` are read or being judged
        (one judged was rejected, or nothing else is on its way)."""
        while self.parked and len(self.done) + len(self.judging) < self.want:
            rank = self.rank()
            best = min(self.parked, key=lambda url: rank.get(url, len(rank)))
            self.judge(*self.parked.pop(best))

    def settle(self, task: Task) -> None:
        """Take in what ``task`` (a download, a verdict, or ``more``) ended with."""
        if task is self.more:
            self.more_taken = True
            fuller: list[Candidate] = task.result()
            self.queue[:] = [c for c in fuller if c.canonical_url not in self.tried]
            urls = {c.canonical_url for c in fuller}
            self.order = fuller + [c for c in self.order if c.canonical_url not in urls]
        elif task in self.running:
            self.take(self.running.pop(task), task.result())
        else:
            candidate, page = self.judging.pop(task)
            reason = task.result()
            if reason is None:
                self.done[candidate.canonical_url] = page
            else:
                self.out.failures.append(Failure(url=candidate.url, reason=reason, stage="read"))

    async def settle_one(self, tasks: list[Task]) -> bool:
        """Wait for the first of ``tasks`` (within the time budget) and settle what ended."""
        left = self.budget.seconds_left() if self.budget is not None else None
        finished, _ = await asyncio.wait(tasks, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        for task in finished:
            self.settle(task)
        return bool(finished)

    def let_go(self, below: list[Candidate]) -> None:
        """Forget what ``below`` (ranked under the last page needed) gave: read or not."""
        urls = {c.canonical_url for c in below}
        for url in urls & set(self.done):
            del self.done[url]
        self.gate.forget(urls)  # (those still out are cut with the other stragglers)

    def out_of_time(self) -> bool:
        """Whether the time budget is spent (it alone cuts pages already in flight)."""
        if self.budget is not None and self.budget.seconds_left() == 0:
            self.out.stopped_by = self.budget.exhausted()
            return True
        return False

    async def drop_stragglers(self) -> None:
        """Cut what is still out: downloads, verdicts; keep what the budget cut short."""
        out = self.out
        why = out.stopped_by or self.cut_why or "enough sources were read first"
        if self.options.late and not out.stopped_by:
            out.late = [(candidate, task) for task, candidate in self.running.items()]
            out.late_why = why
            self.running = {}
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
