"""What gathering (:mod:`sleuth.pipeline.gather`) keeps and how long it waits.

The gate's protocol (which pages read are sources), the waits for better-ranked pages
still on their way once enough are read, and what a gathering returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sleuth import tuned
from sleuth.models import Candidate, Failure, FetchFailure, Page

__all__ = [
    "LATE",
    "MIN_ASIDE",
    "WAITS",
    "Gate",
    "Gathered",
    "KeepAll",
    "PageCheck",
    "Pages",
    "Waits",
    "is_local",
    "settle_late",
]

#: The fetch stage's ``accept`` hook: None to use a page, else why it is not used.
PageCheck = Callable[[Candidate, Page], Awaitable[str | None]]
Pages = list[tuple[Candidate, Page]]


class Gate(Protocol):
    """What decides which pages read are sources (``sleuth.stages.relevance.Relevance``)."""

    def check(self, candidate: Candidate, page: Page) -> str | None:
        """As a page arrives: None to read it on, else why it is set aside."""

    def choose(
        self, pages: Sequence[tuple[Candidate, Page]], want: int
    ) -> tuple[Pages, list[Failure]]:
        """The sources among ``pages`` (in rank order), and the pages left out, as failures."""

    def forget(self, urls: set[str]) -> None:
        """Drop what was judged of ``urls`` (canonical): as if they had never been read."""

    def likely(self, candidate: Candidate) -> bool:
        """Whether a page not read yet may become a source (judged on its search result)."""

    def outranked(self, urls: Sequence[str]) -> list[str]:
        """Of the pages read and kept so far (canonical ``urls``), those now off-topic
        beside the others (a better page came since): set aside from now on."""


class KeepAll:
    """Without a gate: every page read is on-topic; the best-ranked are kept."""

    def check(self, candidate: Candidate, page: Page) -> str | None:
        return None

    def choose(
        self, pages: Sequence[tuple[Candidate, Page]], want: int
    ) -> tuple[Pages, list[Failure]]:
        return list(pages[:want]), []

    def forget(self, urls: set[str]) -> None:
        return None

    def likely(self, candidate: Candidate) -> bool:
        return True

    def outranked(self, urls: Sequence[str]) -> list[str]:
        return []


def is_local(candidate: Candidate) -> bool:
    """A local document (``file://``): read from disk, no request, no waiting on a server."""
    return candidate.url[:5].lower() == "file:"


@dataclass(frozen=True)
class Waits:
    """How long gathering waits, once enough pages are read, for better-ranked ones.

    A page in the top half of those wanted that is still on its way gets
    ``grace_share`` of the time gathering has taken so far, and at least
    ``grace_min_s``, to come in (see :class:`~sleuth.pipeline.gather.window.Window`).

    The best-ranked candidate is the page a reader opens first: still on its way once
    enough pages are read, it is waited for until ``top_s`` after gathering began (when
    that is later than the grace above): the grace alone cuts a top page that is merely
    slow. Only the first page is waited for so long.

    Neither wait goes past a page's own bound: its start plus
    ``bound_factor`` times the 90th percentile of the run's page times so far, and at
    least ``bound_min_s``: a page that never finishes costs a few of this run's page
    times, not ``top_s`` (which ``--top-wait`` may set to minutes).

    The defaults are :mod:`sleuth.tuned`'s, each with the experiment that chose it.
    """

    grace_share: float = tuned.GRACE_SHARE
    grace_min_s: float = tuned.GRACE_MIN_S
    top_s: float = tuned.TOP_WAIT_S
    bound_factor: float = tuned.BOUND_FACTOR
    bound_min_s: float = tuned.BOUND_MIN_S
    #: The last downloads worth it (``Window.worth_the_floor``), once nothing more can
    #: start, get at least this long from their start before their bound applies.
    last_min_s: float = tuned.LAST_MIN_S


#: Off-topic pages set aside before gathering stops looking further down the ranking: at
#: least this many, or ``want`` when more are wanted (with ``--max-sources 2``, two
#: off-topic PDFs ranked first ended a run with one source while on-topic pages waited).
MIN_ASIDE = tuned.MIN_ASIDE

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
    #: Downloads still out when gathering ended, left to finish while the report is
    #: written (``GatherOptions.late``): :func:`settle_late` says what became of them.
    late: list[tuple[Candidate, asyncio.Future[Page | FetchFailure]]] = field(default_factory=list)
    #: Why the late downloads were not waited for (said of those that never came).
    late_why: str = "enough sources were read first"


#: Why a page that came while the report was being written is not among its sources.
LATE = "arrived after the report was written (kept for a rerun)"


async def settle_late(gathered: Gathered) -> list[Failure]:
    """What became of ``gathered``'s late downloads, as failures for the report's Gaps:
    a page that came is :data:`LATE` (the fetcher has cached it: a rerun reads it from the
    store), a download still out is cut now, not waited for (``Gathered.late_why``)."""
    why = gathered.late_why
    failures: list[Failure] = []
    for candidate, task in gathered.late:
        came = task.done() and not task.cancelled() and task.exception() is None
        if came and isinstance(task.result(), Page):
            failures.append(Failure(url=candidate.url, reason=LATE, stage="read"))
        elif came or not task.done():
            task.cancel()
            failures.append(Failure(url=candidate.url, reason=f"not waited for: {why}"))
    if gathered.late:
        await asyncio.gather(*(task for _, task in gathered.late), return_exceptions=True)
        gathered.late = []
    return failures
