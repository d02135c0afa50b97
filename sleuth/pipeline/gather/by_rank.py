"""A batch's fetch policy (``--fetch-order rank``): rank alone decides which pages are read.

Never which downloads finish first or which pages a cache had: the candidates are walked
from the top of the ranking, up to a window of them out at once, a failed or off-topic
page replaced by the next in line, each page waited for until it is read or fails (its
download's own time cap, ``--timeout``, ends the wait for one that never finishes).
What a page gives does not depend on when it arrives, so neither does the choice: a batch
in one process and on Ray agree (issue 25).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from sleuth.models import Candidate
from sleuth.pipeline.gather.rules import is_local
from sleuth.pipeline.gather.state import Gathering, Policy, Task
from sleuth.pipeline.gather.window import Window

__all__ = ["ByRank", "cut_point", "judge_parked"]


@dataclass(frozen=True)
class ByRank:
    """Rank order over another mode's policy, ``within``: it gathers when every candidate
    is a local document (rank decides there too, see ``local_by_rank``) and says which
    pages wait unjudged."""

    within: Policy = field(default_factory=Window)

    async def gather(self, g: Gathering) -> None:
        if all(is_local(c) for c in g.candidates):
            await self.within.gather(g)
            return
        cut = await self.loop(g)
        if cut is not None:
            g.let_go(g.order[cut:])

    def holds(self, g: Gathering, candidate: Candidate) -> bool:
        return self.within.holds(g, candidate)

    async def loop(self, g: Gathering) -> int | None:
        """Fetch down the ranking until rank order settles the sources (:func:`cut_point`).

        As in a live run, up to ``window`` pages are read or out at once, and a failed or
        off-topic page is replaced by the next in line; a parked page the ranking still
        needs is judged (:func:`judge_parked`); a fuller ranking on its way (``more``) is
        waited for. Returns where the sources end; None when a budget
        stopped gathering first.
        """
        budget = g.budget
        while True:
            judge_parked(g)
            cut, untried, busy = cut_point(g)
            while untried is not None and busy < g.window:
                if budget is not None and (reason := budget.exhausted()):
                    g.out.stopped_by = reason
                    break
                if untried in g.queue:
                    g.queue.remove(untried)
                g.start(untried)
                cut, untried, busy = cut_point(g)
            if cut is not None and not g.coming():
                return cut
            waiting: list[Task] = [*g.running, *g.judging]
            if g.coming():
                assert g.more is not None
                waiting.append(g.more)
            if not waiting:
                return None
            finished, _ = await asyncio.wait(
                waiting,
                timeout=budget.seconds_left() if budget is not None else None,
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in finished:
                g.settle(task)
            if g.out_of_time():
                return None


def judge_parked(g: Gathering) -> None:
    """Judge the parked pages (read, left unjudged: ``Policy.holds``) that rank order may
    still need: walking the ranking from the top, each parked page met while the pages
    above it, read or still out, are fewer than ``want``. Which pages become sources then
    depends on rank alone, not on which were parked as they arrived."""
    out = {c.canonical_url for _, c in g.out_pairs()}
    count = 0
    for candidate in g.order:
        if count >= g.want:
            return
        url = candidate.canonical_url
        if url in g.parked:
            g.judge(*g.parked.pop(url))
            count += 1
        elif url in out or url in g.done:
            count += 1


def cut_point(g: Gathering) -> tuple[int | None, Candidate | None, int]:
    """Where rank order puts the end of the sources, walking the ranking from the top.

    Each candidate is read, set aside, failed, still out (downloading or being judged)
    or not tried. The sources are settled once ``want`` are read (or ``aside_cap`` set
    aside) with none better-ranked still out: then (one past the last that counts,
    None, 0). Otherwise (None, the first candidate not tried before that point if one
    is needed, how many pages up to it are read or still out).
    """
    out = {c.canonical_url for _, c in g.out_pairs()}
    read = aside = pending = end = 0
    for candidate in g.order:
        url = candidate.canonical_url
        if url in out:
            pending += 1
        elif url not in g.tried:
            return None, candidate, read + pending
        else:
            read += url in g.done
            aside += url in g.set_aside
        end += 1
        if read >= g.want or aside >= g.aside_cap:
            break
    return (None if pending else end), None, read + pending
