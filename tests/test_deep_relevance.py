"""Deep mode cites what is about the question: its sub-questions are the question's
parts, its follow-ups names that on-topic pages give, and every branch's pages pass the
same relevance judgement as quick mode's (offline web, and a folder of notes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sleuth
from sleuth.models import Report
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import MARKERS, ScriptedResearcher

PAGE_TIMEOUT = 5.0


def deep(web: OfflineWeb, question: str, **extra: Any) -> Report:
    return sleuth.research_sync(
        question,
        **web.search_options,
        timeout=PAGE_TIMEOUT,
        mode="deep",
        no_llm=True,
        **extra,
    )


def pages_of(web: OfflineWeb, *topics: str) -> set[str]:
    """The URLs of the corpus pages the named topics expect."""
    wanted = [t for t in web.topics if t.id in topics]
    return {web.doc(doc).url for t in wanted for doc in t.expected}


def test_the_moons_question_is_split_into_its_moons_and_cites_no_stadia_review(
    web: OfflineWeb,
) -> None:
    moons = next(t for t in web.topics if t.id == "moons")
    report = deep(web, moons.question, breadth=4, levels=2)
    assert report.tree is not None
    firsts = [n.question for n in report.tree if n.level == 1]
    for moon in ("Moon", "Europa", "Titan"):
        assert any(moon in q for q in firsts[1:]), (moon, firsts)
    assert "NASA" not in firsts, firsts
    cited = {s.url for s in report.sources}
    assert report.sources
    assert not cited & pages_of(web, "stadia"), sorted(cited & pages_of(web, "stadia"))


def test_deep_trade_war_cites_no_meth_or_hong_kong_page(web: OfflineWeb) -> None:
    trade = next(t for t in web.topics if t.id == "trade-war")
    report = deep(web, trade.question, breadth=3, levels=2)
    cited = {s.url for s in report.sources}
    assert cited & pages_of(web, "trade-war")
    assert not cited & pages_of(web, "meth", "hong-kong"), sorted(
        cited & pages_of(web, "meth", "hong-kong")
    )


COFFEE_NOTES = {
    "coffee_grind.md": "# Grinding coffee\n\nGrind coffee beans just before you brew: ground "
    "coffee loses its aroma within minutes. A burr grinder gives even particles; a blade "
    "grinder chops them unevenly, so some over-extract and taste bitter while others "
    "under-extract and taste sour. Use a coarse grind for a French press, a medium grind "
    "for drip coffee and a fine grind for espresso.\n",
    "coffee_water.md": "# Water for coffee\n\nBrew coffee with water just off the boil, "
    "about 90 to 96 C. Light roasts want the hotter end, dark roasts the cooler. Use about "
    "60 grams of coffee for a litre of water and let a French press steep for 4 minutes.\n",
    "tea_steeping.md": "# Steeping green tea\n\nGreen tea is steeped in water at 70 to 80 C "
    "for 1 to 3 minutes; hotter water makes it bitter. Note 1: Sencha and Gyokuro want the "
    "cooler end.\n",
    "composting.md": "# Composting at home\n\nA compost heap at home needs greens and "
    "browns: kitchen scraps, coffee grounds and grass cuttings with dry leaves and "
    "cardboard. Turn it every few weeks and keep it as damp as a wrung-out sponge.\n",
    "bike_fit.md": "# Bike fit\n\nA good bike fit starts with saddle height: with the "
    "pedal at its lowest, your knee should be slightly bent. Then set the saddle's "
    "setback and the reach to the bars, so that you ride at home on long trips.\n",
    "telescope.md": "# Choosing a telescope\n\nA good first telescope for use at home is a "
    "6 or 8 inch Dobsonian: its aperture gathers the light of faint galaxies, and it "
    "needs no power. Let it cool outside for half an hour before you observe.\n",
}


def coffee_report(tmp_path: Path) -> Report:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in COFFEE_NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return sleuth.research_sync(
        "How do I make good coffee at home?",
        docs=str(folder),
        no_llm=True,
        mode="deep",
        breadth=3,
        levels=2,
        max_sources=6,
    )


def test_deep_coffee_over_a_folder_of_notes_cites_the_coffee_notes(tmp_path: Path) -> None:
    report = coffee_report(tmp_path)
    cited = {Path(s.url).name for s in report.sources}
    assert {"coffee_grind.md", "coffee_water.md"} <= cited, cited
    assert not cited & {"bike_fit.md", "telescope.md", "tea_steeping.md"}, cited
    assert report.tree is not None
    asked = [n.question for n in report.tree if n.level > 1]
    for junk in ("Light", "C. Light", "C for 1", "Note 1", "Note"):
        assert junk not in asked, asked


@pytest.mark.xfail(
    strict=True,
    reason="a note on composting at home with coffee grounds shares the question's subject "
    "word and setting: neither measure tells it from the coffee notes",
)
def test_deep_coffee_leaves_out_the_composting_note(tmp_path: Path) -> None:
    cited = {Path(s.url).name for s in coffee_report(tmp_path).sources}
    assert "composting.md" not in cited


JUNK_PLAN = '["question sub each", "write name questions", "sub questions name each"]'


def test_a_model_that_plans_junk_still_researches_the_question_itself(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    """A small model's junk sub-questions are judged against the question and dropped:
    the question's own search is a branch, and finds the pages that answer it."""
    llm.add(JUNK_PLAN, contains=MARKERS["subquestions"], times=None)
    ScriptedResearcher().install(llm)
    moons = next(t for t in web.topics if t.id == "moons")
    report = sleuth.research_sync(
        moons.question,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=PAGE_TIMEOUT,
        mode="deep",
        base_url=web.llm_url,
        model="scripted-model",
        breadth=3,
        levels=1,
        max_sources=5,
    )
    assert report.tree is not None
    firsts = [n.question for n in report.tree if n.level == 1]
    assert firsts[0] == moons.question, firsts
    assert not {"question sub each", "write name questions"} & set(firsts), firsts
    cited = {s.url for s in report.sources}
    assert len(cited & pages_of(web, "moons")) >= 2, cited
    assert "do not bear on the question" in report.markdown.split("## Gaps", 1)[1]


def test_a_model_that_plans_junk_queries_in_quick_mode_is_not_searched(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    """Quick mode judges the model's queries as deep mode judges its sub-questions: junk
    is not searched, the rule-based queries are, and the Gaps say why."""
    llm.add(JUNK_PLAN, contains=MARKERS["plan"], times=None)
    ScriptedResearcher().install(llm)
    moons = next(t for t in web.topics if t.id == "moons")
    web.reset_log()
    report = sleuth.research_sync(
        moons.question,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=PAGE_TIMEOUT,
        base_url=web.llm_url,
        model="scripted-model",
        max_sources=4,
    )
    searched = " ".join(r.query for r in web.requests if r.path == "/search")
    assert "sub+each" not in searched and "name+questions" not in searched, searched
    assert not {"question sub each", "write name questions"} & set(report.queries)
    assert len({s.url for s in report.sources} & pages_of(web, "moons")) >= 2
    assert "do not bear on the question" in report.markdown.split("## Gaps", 1)[1]
