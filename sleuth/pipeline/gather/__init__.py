"""The fetch stage's scheduler: the best candidates, a few at a time, until enough are read.

Kept apart from the drivers because it is the one intricate piece of the pipeline: a
window of concurrent downloads, failed pages replaced by the next in line, pages judged
(summarised) while others still download, a fuller ranking that may arrive mid-way,
budgets, and once enough are in, a short wait for the top-ranked pages still on their
way and none for the other stragglers.

:func:`gather_pages` takes the candidates, a fetcher and a frozen :class:`GatherOptions`
whose ``policy`` is one mode's: :class:`Window` (quick mode: the fastest pages win, bounded
waits for better-ranked ones), :class:`Branch` (a deep research's branch: its own pages
waited for, pages it may not keep left unjudged) or :class:`ByRank` (a batch's default:
rank alone decides). :mod:`~sleuth.pipeline.gather.state` holds what they share;
:mod:`~sleuth.pipeline.gather.rules` the gate, the waits and what a gathering returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleuth.models import Candidate
from sleuth.pipeline.gather.branch import Branch
from sleuth.pipeline.gather.by_rank import ByRank
from sleuth.pipeline.gather.rules import (
    LATE,
    MIN_ASIDE,
    WAITS,
    Gate,
    Gathered,
    KeepAll,
    PageCheck,
    Waits,
    settle_late,
)
from sleuth.pipeline.gather.state import Gathering, GatherOptions, Policy
from sleuth.pipeline.gather.window import Window

if TYPE_CHECKING:
    from sleuth.fetch import Fetcher, RunFetcher

__all__ = [
    "LATE",
    "MIN_ASIDE",
    "WAITS",
    "Branch",
    "ByRank",
    "Gate",
    "GatherOptions",
    "Gathered",
    "KeepAll",
    "PageCheck",
    "Policy",
    "Waits",
    "Window",
    "gather_pages",
    "settle_late",
]


async def gather_pages(
    candidates: list[Candidate], fetcher: Fetcher | RunFetcher, options: GatherOptions
) -> Gathered:
    """Fetch the best of ``candidates`` until ``options.want`` pages are read or a budget
    is reached, as ``options.policy`` decides; the pages kept in candidate order (the
    fuller ranking's, when one came), and what went wrong.

    Once gathering ends the gate chooses the sources among the pages read (in rank
    order); the pages it leaves out are failures of the ``read`` stage, and whatever is
    still out is cut as "not waited for".
    """
    return await Gathering(candidates, fetcher, options).run()
