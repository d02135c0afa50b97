"""A deep research branch's fetch policy: quick mode's window, for a few pages of its own.

A branch reads its share of a level, a few pages, often a name's own page (its title
carries the name): that page is waited for however slow it is (the fetch timeout bounds
it), not cut for quicker pages; and a page read is summarised only when it may be kept
(fewer pages rank above it than the branch wants), since a branch's summaries of pages
beyond its share were most of deep mode's tokens per cited source.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sleuth.models import Candidate
from sleuth.pipeline.gather.state import Gathering, Task
from sleuth.pipeline.gather.window import Window

__all__ = ["Branch"]


@dataclass(frozen=True)
class Branch(Window):
    """A deep research's branch: a window that parks pages it may not keep, and waits for
    its ``own`` pages (canonical URLs) until they come or fail."""

    own: frozenset[str] = frozenset()

    def holds(self, g: Gathering, candidate: Candidate) -> bool:
        """Park a page read while ``want`` pages above it are read or being judged: it is
        judged only if one of those is rejected (:meth:`Gathering.unpark`)."""
        return g.ahead(candidate) >= g.want

    def waited_out(self) -> frozenset[str]:
        return self.own

    def in_order(self, g: Gathering, finished: Iterable[Task]) -> list[Task]:
        """Best-ranked first when pages are judged (what is parked depends on it)."""
        if g.options.accept is None:
            return list(finished)
        rank = g.rank()
        pairs = dict(g.out_pairs())
        return sorted(
            finished,
            key=lambda t: rank.get(pairs[t].canonical_url, len(rank)) if t in pairs else -1,
        )
