"""How a deep research's branch gathers its few pages (issue 24): a name's own page is
waited for however slow it is, pages beyond the branch's share are not summarised
unless they may be kept, and its select call is shown its best results only."""

from __future__ import annotations

import asyncio
import re

from records import candidate, page

from sleuth.llm.client import LLMClient
from sleuth.llm.config import LLMConfig
from sleuth.llm.run import RunLLM
from sleuth.models import Candidate, FetchFailure, Page, SearchHit
from sleuth.pipeline.deep import spread
from sleuth.pipeline.gather import Branch, GatherOptions, Waits, Window, gather_pages
from sleuth.stages.explore import named_by, named_things, own_first, rule_subquestions, titled
from sleuth.stages.select import select_candidates
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import section
from sleuth.urls import canonicalize


class InstantFetcher:
    """Every page is ready at once."""

    async def fetch(self, url: str) -> Page | FetchFailure:
        return page(url)


class SlowFetcher:
    """``slow`` comes only once every other page has been read and a while has passed."""

    def __init__(self, slow: str, others: int) -> None:
        self.slow, self.others = slow, others
        self.served = 0
        self.others_done = asyncio.Event()

    async def fetch(self, url: str) -> Page | FetchFailure:
        if url == self.slow:
            await self.others_done.wait()
            await asyncio.sleep(0.3)  # far past the waits given below
        else:
            self.served += 1
            if self.served >= self.others:
                self.others_done.set()
        return page(url)


URLS = [f"https://{x}.example/" for x in "abcdefg"]


async def test_pages_beyond_the_share_are_not_summarised_unless_needed() -> None:
    judged: list[str] = []

    async def accept(c: Candidate, p: Page) -> str | None:
        judged.append(c.url)
        return "not relevant" if c.url == URLS[0] else None

    gathered = await asyncio.wait_for(
        gather_pages(
            [candidate(u) for u in URLS],
            InstantFetcher(),  # type: ignore[arg-type]
            GatherOptions(want=2, policy=Branch(), accept=accept),
        ),
        timeout=10,
    )
    # a is rejected, so c (the best page left) is summarised in its place; d-g never are.
    assert [c.url for c, _ in gathered.pages] == [URLS[1], URLS[2]]
    assert sorted(judged) == URLS[:3]


async def test_without_parking_every_page_that_arrives_is_summarised() -> None:
    judged: list[str] = []

    async def accept(c: Candidate, p: Page) -> str | None:
        judged.append(c.url)
        return None

    gathered = await asyncio.wait_for(
        gather_pages(
            [candidate(u) for u in URLS],
            InstantFetcher(),  # type: ignore[arg-type]
            GatherOptions(want=2, policy=Window(), accept=accept),
        ),
        timeout=10,
    )
    assert [c.url for c, _ in gathered.pages] == URLS[:2]
    assert len(judged) == 4  # the window (quick mode, unchanged)


async def test_a_names_own_page_is_waited_for_however_slow() -> None:
    short = Waits(grace_min_s=0.01, grace_share=0.0, top_s=0.01)
    # c, ranked third of four wanted, is past every wait: cut for quicker pages ...
    fetcher = SlowFetcher(URLS[2], 4)
    gathered = await asyncio.wait_for(
        gather_pages(
            [candidate(u) for u in URLS],
            fetcher,  # type: ignore[arg-type]
            GatherOptions(want=4, policy=Window(short)),
        ),
        timeout=10,
    )
    assert URLS[2] not in [c.url for c, _ in gathered.pages]
    # ... unless it is the branch's own page: then it is read, in its place.
    fetcher = SlowFetcher(URLS[2], 4)
    own = Branch(short, own=frozenset({canonicalize(URLS[2])}))
    gathered = await asyncio.wait_for(
        gather_pages(
            [candidate(u) for u in URLS],
            fetcher,  # type: ignore[arg-type]
            GatherOptions(want=4, policy=own),
        ),
        timeout=10,
    )
    assert [c.url for c, _ in gathered.pages] == URLS[:4]


def test_a_names_own_page_comes_first() -> None:
    ranked = [
        candidate("https://a.example/1", "Audrey Williams (archaeologist)"),
        candidate("https://a.example/2", "Audrey Williams"),
        candidate("https://a.example/3", "Lee Roy Selmon's"),
    ]
    assert [c.title for c in own_first("Audrey Williams", ranked)] == [
        "Audrey Williams",
        "Audrey Williams (archaeologist)",
        "Lee Roy Selmon's",
    ]
    assert titled("Toad Hall (ANU)", "Toad Hall")
    assert not titled("Sorin Hall (University of Notre Dame)", "Toad Hall")
    assert not titled("Toad Hall Records", "Toad Hall")
    assert titled("Young, New South Wales", "Young")
    assert not titled("Check", "What is known about Check?")


async def test_a_branch_select_call_is_shown_its_best_results_only() -> None:
    hits = [
        SearchHit(title=u, url=u, rank=n, provider="searxng", query=q)
        for q in ("q1", "q2")
        for n, u in enumerate(URLS, start=1)
        if (q == "q1") == (n % 2 == 1)
    ]  # q1: a c e g, q2: b d f
    with ScriptedLLM.serve(models=["small"]) as served:
        served.add("[2]")
        served.add("[1]")
        shown: set[str] = set()
        config = LLMConfig(base_url=served.base_url, model="small")
        async with LLMClient(config, sleep=lambda s: asyncio.sleep(0)) as client:
            llm = RunLLM(client, question="q", language="English")
            ranked, _ = await select_candidates(llm, "q?", ["q1", "q2"], hits, shown=shown, show=3)
            # What was not shown is still a candidate, ranked after the picks.
            assert sorted(c.url for c in ranked) == URLS
            # A later call (more queries) may show what the first one did not.
            await select_candidates(
                llm,
                "q?",
                ["q1", "q2", "q3"],
                [*hits, SearchHit(title="x", url=URLS[6], rank=1, provider="searxng", query="q3")],
                shown=shown,
            )
        prompts = [r.last_user for r in served.requests]
    # Each query's best in turn, three of them: a (q1), b (q2), c (q1).
    assert re.findall(r"URL: (\S+)", section(prompts[0], "RESULTS")) == URLS[:3]
    assert URLS[6] in re.findall(r"URL: (\S+)", section(prompts[1], "RESULTS"))


def test_a_name_keeps_its_number_and_a_year_alone_is_no_name() -> None:
    found = named_things(
        "It was a Heinkel HD 23, a fighter. At the 2011 census, BWV 1033 was played in Young."
    )
    assert "Heinkel HD 23" in found and "BWV 1033" in found
    assert "2011" not in found and "Heinkel HD" not in found
    assert rule_subquestions("Heinkel HD 23 was held on what craft?", 4)[1:] == ["Heinkel HD 23"]


def test_the_pages_a_question_names_are_its_first_hop() -> None:
    question = "The person James Woods plays in the film In Love and War won what medal?"
    assert named_by(question, "In Love and War (1987 film)")
    assert not named_by(question, "James Stockdale")
    assert not named_by(question, "(disambiguation)")  # no words: names nothing


def test_names_with_a_page_of_their_own_are_dealt_a_page_first() -> None:
    # Three pages for four hops: the second and fourth found their own page, so they
    # read before the others, which share what is left in turn.
    assert spread(3, [2, 2, 2, 2], 2, first=[False, True, False, True]) == [1, 1, 0, 1]
    assert spread(3, [2, 2, 2, 2], 2) == [1, 1, 1, 0]
    assert spread(6, [2, 0, 2, 2], 2, first=[False, True, False, False]) == [2, 0, 2, 2]
