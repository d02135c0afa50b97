"""Quick mode's fetch policy: a window of downloads, the fastest pages win, bounded waits.

A few candidates beyond those wanted are fetched at once, so a failure costs no extra
round trip; a failed or off-topic page is replaced by the next in line. Once enough
pages are read, only the top-ranked pages still on their way are waited for, briefly
(:meth:`Window.wait_for_better`), and never past their own bound
(:meth:`Window.bound`); once nothing more can start, the last downloads are cut at
theirs (:meth:`Window.give_up_at`). Local documents are settled in rank order instead
(:func:`local_by_rank`): they cost no request, so rank alone decides.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sleuth.models import Candidate
from sleuth.pipeline.gather.rules import WAITS, Waits, is_local
from sleuth.pipeline.gather.state import Gathering, Task
from sleuth.progress import Event

__all__ = ["Window", "local_by_rank"]


@dataclass(frozen=True)
class Window:
    """Quick mode: the first pages read win, after a short wait for better-ranked ones.

    ``waits``: how long the best-ranked pages still out are waited for once enough
    pages are read (``--top-wait`` sets ``top_s``).
    """

    waits: Waits = WAITS

    async def gather(self, g: Gathering) -> None:
        g.launch()
        if not all_local(g):
            await self.loop(g)
        await local_by_rank(g)
        await self.wait_for_better(g)

    def holds(self, g: Gathering, candidate: Candidate) -> bool:
        return False

    def waited_out(self) -> frozenset[str]:
        """Canonical URLs waited for until they come or fail, wherever they rank."""
        return frozenset()

    def in_order(self, g: Gathering, finished: Iterable[Task]) -> list[Task]:
        """The order ``finished`` tasks are settled in."""
        return list(finished)

    async def loop(self, g: Gathering) -> None:
        """Settle what finishes and start what is next until ``want`` pages are read,
        nothing is out, the time budget is spent, or the last downloads' bound passes."""
        loop = asyncio.get_running_loop()
        g.unpark()
        while (g.running or g.judging or g.coming()) and len(g.done) < g.want:
            timeout = g.budget.seconds_left() if g.budget is not None else None
            give_up = self.give_up_at(g)
            if give_up is not None:
                left = give_up - loop.time()
                if left <= 0:
                    factor = self.waits.bound_factor
                    g.cut_why = f"it took longer than {factor:g}x this run's other pages"
                    return
                timeout = left if timeout is None else min(timeout, left)
            waiting: list[Task] = [*g.running, *g.judging]
            if g.coming():
                assert g.more is not None
                waiting.append(g.more)
            finished, _ = await asyncio.wait(
                waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            for task in self.in_order(g, finished):
                g.settle(task)
            g.unpark()
            if g.out_of_time():  # only the time budget cuts pages in flight
                return
            g.launch()

    async def wait_for_better(self, g: Gathering) -> None:
        """Once enough pages are read, give the top-ranked ones still on their way a little
        longer.

        The first ``want`` pages to arrive are not the best ``want``: without this, a
        top-ranked page that is merely slow loses its place to the seventh-ranked one
        (on the HotpotQA bench, a gold page was cut this way in most questions that
        missed one). A page in the top half of the ``want`` best-ranked, ranked above
        the worst one kept and still downloading or being summarised, gets 40% as long
        again as gathering has taken (``Waits.grace_share``, at least ``grace_min_s``); the
        best-ranked page of all gets until ``top_s`` after gathering began, if that is later.
        Only a page that may displace one kept is waited for: with a relevance gate, one
        whose search result looks on-topic (an off-topic one would be set
        aside on arrival). Whatever is still out then is cut as before. Waiting for any
        better-ranked page instead costs more than it finds.
        Pages of :meth:`waited_out` still out are waited for until they come or fail.
        """
        if len(g.done) < g.want or g.out.stopped_by:
            return
        loop = asyncio.get_running_loop()
        waits = self.waits
        grace_end = loop.time() + max(
            waits.grace_min_s, waits.grace_share * (loop.time() - g.started)
        )
        top_end = max(grace_end, g.started + waits.top_s)
        # Only downloads and summaries are awaited below, never ``more``: the order holds.
        position = {c.canonical_url: i for i, c in enumerate(g.order)}
        told = False
        while True:
            ends = self.ends(g, position, grace_end, top_end)
            now = loop.time()
            better = [(end, task) for end, task in ends if end > now]
            budget_left = g.budget.seconds_left() if g.budget is not None else None
            left = math.inf if budget_left is None else budget_left
            if not better or left <= 0:
                return
            if not told:  # else the status line sits on the last page read, unexplained
                told = True
                _tell_wait(g, better, min(max(end for end, _ in better) - now, left))
            # Awake at the first page's end: from then on it is no longer waited for.
            timeout = min(min(end for end, _ in better) - now, left)
            finished, _ = await asyncio.wait(
                [task for _, task in better],
                timeout=None if math.isinf(timeout) else timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in finished:
                g.settle(task)
            g.unpark()

    def ends(
        self, g: Gathering, position: Mapping[str, int], grace_end: float, top_end: float
    ) -> list[tuple[float, Task]]:
        """(when its wait ends, task) of each page still out that is waited for.

        A better-ranked page than the worst kept, in the top half of those wanted, whose
        search result looks on-topic: until the grace ends (the best-ranked: ``top_end``),
        never past its own bound (:meth:`bound`); a page of :meth:`waited_out`: forever.
        """
        worst = sorted(position.get(url, len(position)) for url in g.done)[g.want - 1]
        top = min(worst, max(1, g.want // 2))
        ends = [
            (min(top_end if rank == 0 else grace_end, self.bound(g, task)), task)
            for rank, task in g.out_there(position)
            if rank < top and g.gate.likely(g.candidate_of(task))
        ]
        waited_out = self.waited_out()
        own = {
            task
            for _, task in g.out_there(position)
            if g.candidate_of(task).canonical_url in waited_out
        }
        return [(math.inf, task) for task in own] + [e for e in ends if e[1] not in own]

    def give_up_at(self, g: Gathering) -> float | None:
        """When to stop waiting for the last downloads, else None.

        Only once nothing more can start (no candidate left to try, no fuller ranking
        coming), at least one page is read and none is being judged: the downloads still
        out are then all the run waits for, each until its own bound (:meth:`bound`) and,
        when it is worth more than that (:meth:`worth_the_floor`), at least
        ``Waits.last_min_s`` from its start: a page that never finishes does not hold
        the run to its download cap for one more source, and a slow page that would be
        among the best sources is not cut by the bound alone. Local documents are never
        cut.
        """
        if (
            g.coming()
            or (g.queue and g.aside < g.aside_cap)
            or not g.done
            or g.judging
            or not g.running
            or any(is_local(c) for c in g.running.values())
        ):
            return None
        end = max(
            max(
                self.bound(g, task),
                g.launched[c.canonical_url] + self.waits.last_min_s
                if self.worth_the_floor(g, c)
                else -math.inf,
            )
            for task, c in g.running.items()
        )
        return None if math.isinf(end) else end

    def worth_the_floor(self, g: Gathering, candidate: Candidate) -> bool:
        """Whether a last download is worth ``Waits.last_min_s``: what it may add beats
        the time. Its search result looks on-topic (the gate's ``likely``: an off-topic
        one would be set aside), and it would be among the top half of the sources
        wanted by rank (as the grace of :meth:`wait_for_better`): fewer than
        ``max(1, want // 2)`` pages ranked above it are read or still on their way. A
        page below those adds one more source after the best ones are in: it gets its
        bound, not the floor."""
        if not g.gate.likely(candidate):
            return False
        rank = g.rank()
        mine = rank.get(candidate.canonical_url, len(rank))
        live = [*g.done, *g.parked, *(c.canonical_url for _, c in g.out_pairs())]
        above = sum(1 for url in live if rank.get(url, len(rank)) < mine)
        return above < max(1, g.want // 2)

    def bound(self, g: Gathering, task: Task) -> float:
        """When waiting for a download still out must end, whatever its rank: its start
        plus ``bound_factor`` times the 90th percentile of this run's own page times
        (``Page.elapsed_s`` of the pages read), and at least ``bound_min_s``.
        A page being judged (downloaded already) has no such bound."""
        url = g.running[task].canonical_url if task in g.running else None
        start = g.launched.get(url) if url is not None else None
        if start is None or not g.timings:
            return math.inf
        times = sorted(g.timings)
        p90 = times[int(0.9 * (len(times) - 1))]
        return start + max(self.waits.bound_min_s, self.waits.bound_factor * p90)


def _tell_wait(g: Gathering, better: list[tuple[float, Task]], longest: float) -> None:
    """Say how long gathering waits, and for how many pages."""
    pages = f"{len(better)} better-ranked page{'s' if len(better) > 1 else ''}"
    until = "until they come" if math.isinf(longest) else f"up to {longest:.1f} s"
    g.options.on_event(
        Event(
            "info",
            f"waiting {until} for {pages} still on the way",
            {
                "pages": len(better),
                "seconds": None if math.isinf(longest) else round(longest, 3),
            },
        )
    )


def all_local(g: Gathering) -> bool:
    """Whether every candidate is a local document (``file://``)."""
    return bool(g.candidates) and all(is_local(c) for c in g.candidates)


async def local_by_rank(g: Gathering) -> None:
    """Local documents (``file://``) cost no request: rank decides which are kept,
    not the order their reads finish in, so two identical documents-mode runs keep
    the same pages.

    With only local candidates, the fuller ranking is awaited, then candidates are
    settled in rank order until ``want`` pages are read or as many set aside by the gate
    as a web gathering sets aside (``Gathering.aside_cap``); what each one gives is the
    same every run. Pages read further down the ranking meanwhile are let go, as if
    never read. Bounded by the time budget.
    """
    if not all_local(g):
        return
    if g.more is not None and not g.more_taken:
        await g.settle_one([g.more])
    while not g.out.stopped_by:
        if await _settle_next_local(g):
            return


async def _settle_next_local(g: Gathering) -> bool:
    """Walk the ranking from the top: start what is untried, settle the first still out;
    True when gathering is over (enough read or set aside, nothing left, or time up)."""
    read = aside = 0
    for rank, candidate in enumerate(g.order):
        url = candidate.canonical_url
        if url not in g.tried:
            if candidate in g.queue:
                g.queue.remove(candidate)
            g.start(candidate)
        pending = [task for task, c in g.out_pairs() if c.canonical_url == url]
        if pending:
            # Settled: the caller counts again from the top.
            return not await g.settle_one(pending)
        read += url in g.done
        aside += url in g.set_aside
        if read >= g.want or aside >= g.aside_cap:
            g.let_go(g.order[rank + 1 :])
            return True
    return True
