"""What a run did, as its driver folds in each step's result.

The steps (:mod:`sleuth.pipeline.steps`, :mod:`sleuth.pipeline.searching`) return what
they did as small frozen records (:class:`Searched`, :class:`Ranked`, :class:`Fetched`,
:class:`Read`, :class:`NothingFound`); the driver folds each into the run's
:class:`Tally` as it returns (:meth:`Tally.fold`). The tally is the record of the run
(what was searched, shown to the model, read, and what failed), apart from the services
that did the work (:class:`~sleuth.pipeline.context.RunContext`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from sleuth.models import Candidate, Failure, SearchFailure, SearchHit, Source
from sleuth.pipeline.cached import CachedProvider
from sleuth.pipeline.gather import Gathered

__all__ = ["Fetched", "NothingFound", "Ranked", "Read", "Searched", "Step", "Tally"]


@dataclass(frozen=True)
class Searched:
    """What one search step did: ``found`` the hits of each query it searched, the
    ``failures`` of the providers, the cache wrappers it searched through (``providers``:
    their hits count as cached) and how many searches that was. ``planned`` is the plan's
    queries (each once); ``waiting`` the searches of some of them still in flight
    elsewhere (the question's own search), which fold their own results."""

    planned: list[str]
    found: dict[str, list[SearchHit]] = field(default_factory=dict)
    failures: list[SearchFailure] = field(default_factory=list)
    providers: list[CachedProvider] = field(default_factory=list)
    searches: int = 0
    waiting: list[asyncio.Future[list[SearchHit]]] = field(default_factory=list)


@dataclass(frozen=True)
class Ranked:
    """The candidates in the order to fetch them, with what the model has been asked:
    each query's picks (canonical URLs, best first) and the results shown to it."""

    candidates: list[Candidate]
    picks: dict[str, list[str]] = field(default_factory=dict)
    shown: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Fetched:
    """What one fetch step gathered; how many results a cache answered; the notes of the
    sites whose robots.txt could not be read (origin: note), told once a run."""

    gathered: Gathered
    cached: int = 0
    robots: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Read:
    """The sources read, and the pages the reader left out (failures of the read stage)."""

    sources: list[Source]
    dropped: list[Failure] = field(default_factory=list)


@dataclass(frozen=True)
class NothingFound:
    """Why no query found anything, in one line: it takes the place of the search
    failures it sums up (or is added, when no search failed)."""

    failure: Failure


Step = Searched | Ranked | Fetched | Read | NothingFound


@dataclass
class Tally:
    """What one run did so far: its failures (the report's Gaps), its searches, the hits
    of every query searched (none is searched twice), what the model was asked to pick
    from, the pages answered by a cache."""

    failures: list[Failure] = field(default_factory=list)
    searches: int = 0
    searched: dict[str, list[SearchHit]] = field(default_factory=dict)
    #: Every search that failed, as the providers said it (the report's Gaps sum them up).
    search_failures: list[SearchFailure] = field(default_factory=list)
    cached_fetches: int = 0
    #: The cache wrappers of this run's search providers (their hits count as cached).
    providers: list[CachedProvider] = field(default_factory=list)
    #: The sites whose unreadable robots.txt this run already reported.
    robots_told: set[str] = field(default_factory=set)
    #: Each query the model was asked about → its round's picks (canonical URLs, best
    #: first), so none is asked about twice.
    picks: dict[str, list[str]] = field(default_factory=dict)
    #: The search results shown to the model so far (canonical URLs): each is shown once.
    shown: set[str] = field(default_factory=set)

    @property
    def cached_searches(self) -> int:
        """Searches a cache answered."""
        return sum(p.hits_served for p in self.providers)

    def hits(self, queries: list[str]) -> list[SearchHit]:
        """The hits of ``queries`` searched so far, query by query."""
        return [hit for query in queries for hit in self.searched.get(query, [])]

    def fold(self, step: Step) -> None:
        """Take in what one step did."""
        if isinstance(step, Searched):
            self._searched(step)
        elif isinstance(step, Ranked):
            self.picks.update(step.picks)
            self.shown |= step.shown
        elif isinstance(step, Fetched):
            self._fetched(step)
        elif isinstance(step, Read):
            self.failures += step.dropped
        else:
            self._nothing_found(step.failure)

    def _searched(self, step: Searched) -> None:
        self.providers += step.providers
        self.search_failures += step.failures
        self.failures += [
            Failure(
                url="",
                reason=f"{f.provider} search for “{f.query}” failed: {f.reason}",
                stage="search",
            )
            for f in step.failures
        ]
        self.searches += step.searches
        self.searched.update(step.found)

    def _fetched(self, step: Fetched) -> None:
        gathered = step.gathered
        self.cached_fetches += step.cached
        self.failures += gathered.failures
        # --respect-robots: a site whose robots.txt could not be read was read anyway;
        # said once a run (the fetcher, and its notes, may serve several runs).
        notes = {o: note for o, note in step.robots.items() if o not in self.robots_told}
        self.robots_told.update(notes)
        self.failures += [
            Failure(url=f"{origin}/robots.txt", reason=f"{note}; every page allowed")
            for origin, note in notes.items()
        ]
        if gathered.stopped_by:
            self.failures.append(Failure(url="", reason=gathered.stopped_by, stage="budget"))

    def _nothing_found(self, line: Failure) -> None:
        first = next((n for n, f in enumerate(self.failures) if f.stage == "search"), None)
        if first is None or not self.search_failures:
            self.failures.append(line)
            return
        self.failures[:] = [
            *self.failures[:first],
            line,
            *(f for f in self.failures[first:] if f.stage != "search"),
        ]
