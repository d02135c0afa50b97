"""The fetch window (``sleuth.pipeline.gather``): which pages read become sources, and how
long gathering waits for a page still on its way.

With a stand-in fetcher whose pages come when the test says (as tests/test_relevance.py's
scheduler tests), so arrival order is the test's to choose; no wall time is asserted.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from records import candidate, page

from sleuth.models import Candidate, FetchFailure, Page
from sleuth.pipeline.gather import (
    LATE,
    Branch,
    ByRank,
    GatherOptions,
    Policy,
    Waits,
    Window,
    gather_pages,
    settle_late,
)
from sleuth.pipeline.gather.by_rank import cut_point
from sleuth.pipeline.gather.state import Gathering

URLS = [f"https://{n}.example/" for n in "abcdefgh"]
#: Every page read took this long (``Page.elapsed_s``): the run's own timings.
PAGE_S = 0.05


class Held:
    """``held`` pages come only once ``release`` is set (never, unless the test sets it)."""

    def __init__(self, held: set[str]) -> None:
        self.held = held
        self.release = asyncio.Event()

    async def fetch(self, url: str) -> Page | FetchFailure:
        if url in self.held:
            await self.release.wait()
        else:
            await asyncio.sleep(0)
        return page(url, elapsed_s=PAGE_S)


async def test_a_page_that_never_finishes_is_not_waited_for_past_the_runs_own_bound() -> None:
    """Issue 26: the best-ranked page never comes; --top-wait would wait an hour, but once
    the sources are in it is waited for no longer than ``bound_factor`` times this run's
    page times (the floor set to 0 here), then cut as not waited for."""
    fetcher = Held({URLS[0]})
    events: list[Any] = []
    waits = Waits(grace_min_s=0.0, grace_share=0.0, top_s=3600.0, bound_factor=3.0, bound_min_s=0.0)
    gathered = await asyncio.wait_for(
        gather_pages(
            [candidate(u) for u in URLS],
            fetcher,  # type: ignore[arg-type]
            GatherOptions(want=3, policy=Window(waits), on_event=events.append),
        ),
        timeout=60,
    )
    told = [e.data for e in events if e.kind == "info" and "better-ranked" in e.message]
    assert len(told) == 1 and told[0]["pages"] == 1
    # Not a clock reading: the bound comes from the pages' recorded times (PAGE_S each),
    # so the wait announced is at most bound_factor times that, not --top-wait's hour.
    assert told[0]["seconds"] <= 3.0 * PAGE_S
    assert [c.url for c, _ in gathered.pages] == URLS[1:4]
    assert (URLS[0], "not waited for: enough sources were read first") in [
        (f.url, f.reason) for f in gathered.failures
    ]


async def test_rank_order_waits_for_the_best_ranked_page_however_late_it_comes() -> None:
    """Issue 25: by rank (a batch), the slow best-ranked page is a source whenever it comes,
    and the pages read meanwhile further down are let go; the first pages read win only
    in the default order."""
    for by_rank in (False, True):
        fetcher = Held({URLS[0]})

        def on_event(event: Any, fetcher: Held = fetcher) -> None:
            # The best-ranked page comes only once the three sources wanted are read.
            if event.kind == "fetched" and event.data["url"] == URLS[3]:
                fetcher.release.set()

        no_wait = Waits(grace_min_s=0.0, grace_share=0.0, top_s=0.0)
        gathered = await asyncio.wait_for(
            gather_pages(
                [candidate(u) for u in URLS],
                fetcher,  # type: ignore[arg-type]
                GatherOptions(
                    want=3,
                    policy=ByRank(Window(no_wait)) if by_rank else Window(no_wait),
                    on_event=on_event,
                ),
            ),
            timeout=60,
        )
        kept = [c.url for c, _ in gathered.pages]
        assert kept == (URLS[:3] if by_rank else URLS[1:4]), by_rank


async def test_the_last_candidate_still_out_is_not_waited_for_past_the_runs_own_bound() -> None:
    """Issue 26: every candidate was tried and fewer pages than wanted are read; the one
    page still on its way never comes. The run ends at that page's bound (this run's own
    page times; floors 0 here) with the pages it has, the slow page cut as not waited for,
    instead of waiting out the download's time cap."""
    fetcher = Held({URLS[2]})
    waits = Waits(
        grace_min_s=0.0,
        grace_share=0.0,
        top_s=3600.0,
        bound_factor=3.0,
        bound_min_s=0.0,
        last_min_s=0.0,
    )
    gathered = await asyncio.wait_for(
        gather_pages(
            [candidate(u) for u in URLS[:3]],
            fetcher,  # type: ignore[arg-type]
            GatherOptions(want=3, policy=Window(waits)),
        ),
        timeout=60,
    )
    assert [c.url for c, _ in gathered.pages] == URLS[:2]
    reasons = {f.url: f.reason for f in gathered.failures}
    assert reasons[URLS[2]].startswith("not waited for: it took longer than")


# -- each policy alone: its decisions on a gathering's state, no fetcher ------------------


def state(want: int, policy: Policy | None = None, accept: bool = False) -> Gathering:
    async def keep(c: Candidate, p: Page) -> str | None:
        return None

    options = GatherOptions(want=want, policy=policy or Window(), accept=keep if accept else None)
    return Gathering([candidate(u) for u in URLS], None, options)  # type: ignore[arg-type]


def out(g: Gathering, candidate: Candidate) -> asyncio.Future[Any]:
    """``candidate`` as a download still on its way."""
    task: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    g.tried.add(candidate.canonical_url)
    g.running[task] = candidate
    return task


def read(g: Gathering, *candidates: Candidate) -> None:
    for c in candidates:
        g.tried.add(c.canonical_url)
        g.done[c.canonical_url] = page(c.url, elapsed_s=PAGE_S)


async def test_rank_order_ends_the_sources_where_the_ranking_says() -> None:
    g = state(2, ByRank())
    a, b, c, d, *_ = g.order
    read(g, a)
    g.tried.add(b.canonical_url)  # failed
    task = out(g, c)
    # c is still out: d is the next to start, with a read and c out (two of the window).
    assert cut_point(g) == (None, d, 2)
    del g.running[task]
    read(g, c)
    # Two read: the sources end after c, whatever d would give or when.
    assert cut_point(g) == (3, None, 2)


async def test_the_window_waits_only_for_better_ranked_pages_in_the_top_half() -> None:
    g = state(4)
    a, b, c, d, e, f, h, _ = g.order
    read(g, c, d, e, f)
    waits = {out(g, x): x.url for x in (a, b, h)}
    position = g.rank()
    ends = {waits[task]: end for end, task in Window().ends(g, position, 10.0, 20.0)}
    # The best-ranked until top_s, the second for the grace; the seventh not at all.
    assert ends == {a.url: 20.0, b.url: 10.0}
    # A branch's own page is waited for until it comes, wherever it ranks.
    own = Branch(own=frozenset({h.canonical_url}))
    ends = {waits[task]: end for end, task in own.ends(g, position, 10.0, 20.0)}
    assert ends == {a.url: 20.0, b.url: 10.0, h.url: math.inf}


async def test_only_a_branch_leaves_pages_it_may_not_keep_unjudged() -> None:
    cases: list[tuple[Policy, bool]] = [
        (Window(), False),
        (Branch(), True),
        (ByRank(), False),
        (ByRank(Branch()), True),
    ]
    for policy, parks in cases:
        g = state(2, policy, accept=True)
        a, b, c, *_ = g.order
        read(g, a, b)
        # Two pages rank above c: a branch reads c only if one of them is rejected.
        assert policy.holds(g, c) is parks, policy
        assert policy.holds(g, a) is False


async def parked_run(policy: Policy) -> list[str]:
    """c and d arrive while a and b, ranked above them, are being judged (so they are
    parked); a is then rejected. The URLs kept, two wanted."""
    a, b, c, d = URLS[:4]
    judging, verdicts = asyncio.Event(), asyncio.Event()

    class Staggered:
        async def fetch(self, url: str) -> Page | FetchFailure:
            if url in (c, d):
                await judging.wait()
            return page(url)

    async def accept(cand: Candidate, p: Page) -> str | None:
        if cand.url == b:
            judging.set()
        await verdicts.wait()
        return "not relevant" if cand.url == a else None

    def on_event(event: Any) -> None:
        if event.kind == "fetched" and event.data["url"] == d:
            verdicts.set()  # c and d are in (parked): now a and b are judged

    options = GatherOptions(want=2, policy=policy, accept=accept, on_event=on_event)
    gathered = await asyncio.wait_for(
        gather_pages([candidate(u) for u in URLS[:4]], Staggered(), options),  # type: ignore[arg-type]
        timeout=60,
    )
    return [x.url for x, _ in gathered.pages]


async def test_rank_order_judges_a_parked_page_when_a_better_one_is_rejected() -> None:
    """A deep research's branch in a batch (rank order over a branch's parking): the parked
    c is judged and kept once a is rejected, as in quick order; rank order never judged
    it, and the branch read one source of the two it wanted."""
    assert await parked_run(Branch()) == URLS[1:3]
    assert await parked_run(ByRank(Branch())) == URLS[1:3]


async def test_pages_still_out_when_the_sources_are_read_come_late_not_waited_for() -> None:
    """With ``late``, the downloads still out once enough pages are read are not waited
    for: they finish while the report is written, and the Gaps say that one came after
    it was written (a rerun finds it in the cache) and that one never came."""
    fetcher, never = Held({URLS[0]}), Held({URLS[1]})

    class Both:
        async def fetch(self, url: str) -> Page | FetchFailure:
            return await (never if url == URLS[1] else fetcher).fetch(url)

    waits = Waits(grace_min_s=0.0, grace_share=0.0, top_s=0.0, bound_min_s=0.0)
    gathered = await asyncio.wait_for(
        gather_pages(
            [candidate(u) for u in URLS],
            Both(),  # type: ignore[arg-type]
            GatherOptions(want=3, policy=Window(waits), late=True),
        ),
        timeout=60,
    )
    assert [c.url for c, _ in gathered.pages] == URLS[2:5]
    assert {c.url for c, _ in gathered.late} == {URLS[0], URLS[1]}
    assert not [f for f in gathered.failures if f.url in URLS[:2]]
    late = {c.url: task for c, task in gathered.late}
    fetcher.release.set()  # one comes while "the report is written", one never does
    await late[URLS[0]]
    failures = await settle_late(gathered)
    reasons = {f.url: f.reason for f in failures}
    assert reasons[URLS[0]] == LATE
    assert reasons[URLS[1]] == "not waited for: enough sources were read first"
    assert gathered.late == []


class OffTopicResults:
    """A gate that finds one search result off-topic (and keeps every page read)."""

    def __init__(self, off: str) -> None:
        self.off = off

    def check(self, candidate: Candidate, page: Page) -> str | None:
        return None

    def choose(self, pages: Any, want: int) -> tuple[Any, list[Any]]:
        return list(pages[:want]), []

    def forget(self, urls: set[str]) -> None:
        return None

    def likely(self, candidate: Candidate) -> bool:
        return candidate.url != self.off

    def outranked(self, urls: Any) -> list[str]:
        return []


async def test_the_last_downloads_floor_waits_only_for_pages_that_may_be_sources() -> None:
    """Once nothing more can start, the last download is waited for at least
    ``last_min_s`` only if its search result looks on-topic; an off-topic one gets its
    bound (this run's page times), not the floor's hour."""
    fetcher = Held({URLS[2]})
    waits = Waits(grace_min_s=0.0, grace_share=0.0, top_s=0.0, bound_min_s=0.0, last_min_s=3600.0)
    gathered = await asyncio.wait_for(
        gather_pages(
            [candidate(u) for u in URLS[:3]],
            fetcher,  # type: ignore[arg-type]
            GatherOptions(want=3, policy=Window(waits), gate=OffTopicResults(URLS[2])),
        ),
        timeout=60,
    )
    assert [c.url for c, _ in gathered.pages] == URLS[:2]
    reasons = {f.url: f.reason for f in gathered.failures}
    assert reasons[URLS[2]].startswith("not waited for: it took longer than")


class Failing(Held):
    """As :class:`Held`, and the ``failing`` pages answer with a failure at once."""

    def __init__(self, held: set[str], failing: set[str]) -> None:
        super().__init__(held)
        self.failing = failing

    async def fetch(self, url: str) -> Page | FetchFailure:
        if url in self.failing:
            await asyncio.sleep(0)
            return FetchFailure(url=url, reason="HTTP 404")
        return await super().fetch(url)


async def test_the_last_downloads_floor_is_for_the_best_ranked_pages_still_to_come() -> None:
    """Fewer pages than wanted are read and nothing more can start: a slow page ranked
    below two pages that may still be sources is worth no floor (its bound ends the
    wait, floor or not), while the best-ranked page still out is worth it: it is waited
    for and becomes a source when it comes."""
    waits = Waits(grace_min_s=0.0, grace_share=0.0, top_s=0.0, bound_min_s=0.0, last_min_s=3600.0)
    # Low value: a, b read; c-f fail; g (two pages that count rank above it) never comes.
    slow = Failing({URLS[6]}, set(URLS[2:6]))
    gathered = await asyncio.wait_for(
        gather_pages(
            [candidate(u) for u in URLS[:7]],
            slow,  # type: ignore[arg-type]
            GatherOptions(want=3, policy=Window(waits)),
        ),
        timeout=60,
    )
    assert [c.url for c, _ in gathered.pages] == URLS[:2]
    reasons = {f.url: f.reason for f in gathered.failures}
    assert reasons[URLS[6]].startswith("not waited for: it took longer than")

    # Top value: a is slow, b read, c-g fail: a is waited for (released once the rest is in).
    top = Failing({URLS[0]}, set(URLS[2:7]))

    def on_event(event: Any) -> None:
        if event.kind == "fetch_failed" and event.data["url"] == URLS[6]:
            top.release.set()

    gathered = await asyncio.wait_for(
        gather_pages(
            [candidate(u) for u in URLS[:7]],
            top,  # type: ignore[arg-type]
            GatherOptions(want=3, policy=Window(waits), on_event=on_event),
        ),
        timeout=60,
    )
    assert [c.url for c, _ in gathered.pages] == URLS[:2]
