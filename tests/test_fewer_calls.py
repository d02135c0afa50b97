"""Model calls on the critical path: the judgement selects, the writer reads passages.

A quick run with a model asks it to plan and to write; it asks it to choose among the
search results only when the relevance judgement cannot tell, and to summarise pages
only when their passages do not fit the report call (or ``--summaries always``).
"""

from __future__ import annotations

from typing import Any

from test_llm_pipeline import by_stage
from test_llm_pipeline import research as research_every_call

from sleuth.models import Candidate, Quality, Report
from sleuth.progress import Event
from sleuth.stages.select import clear_picks
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import ScriptedResearcher


def research(web: OfflineWeb, question: str, *args: Any, **extra: Any) -> Report:
    """A run with the model, asking it what the defaults ask it."""
    defaults = {"summaries": "auto", "select": "auto"}
    return research_every_call(web, question, *args, **{**defaults, **extra})


def test_a_quick_run_whose_evidence_fits_asks_the_model_twice(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    ScriptedResearcher().install(llm)
    events: list[Event] = []
    report = research(web, web.topics[3].question, events, depth=1, max_sources=3)
    assert (report.planner, report.writer) == ("llm", "llm") and report.sources
    assert by_stage(llm) == {"plan": 1, "report": 1}
    assert report.stats.model_calls == {"plan": 1, "report": 1}
    assert report.stats.llm_calls == 2
    # The writer read the sources' passages: no summary, every source still cited.
    assert all(s.summary is None and s.passages for s in report.sources)
    assert "[1]" in report.markdown
    said = [e.message for e in events if e.kind == "info"]
    assert "the sources' passages fit the report call: no page summaries" in said


def test_summaries_always_summarises_each_page_as_before(web: OfflineWeb, llm: ScriptedLLM) -> None:
    ScriptedResearcher().install(llm)
    report = research(
        web, web.topics[3].question, depth=1, max_sources=3, summaries="always", select="model"
    )
    stages = by_stage(llm)
    assert stages["select"] == 1 and stages["summarize"] >= len(report.sources) >= 2
    assert report.stats.model_calls["summarize"] == stages["summarize"]
    assert all(s.summary for s in report.sources)


def test_evidence_that_does_not_fit_the_report_call_is_summarised(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    ScriptedResearcher().install(llm)
    events: list[Event] = []
    # A small context: five sources' passages do not fit the report call whole.
    report = research(
        web,
        web.topics[3].question,
        events,
        depth=1,
        max_sources=5,
        passages=8,
        context_window=2048,
    )
    assert by_stage(llm)["summarize"] >= 1
    assert any(s.summary for s in report.sources)
    said = [e.message for e in events if e.kind == "info"]
    assert any("do not fit the report call" in m for m in said)


def _candidate(n: int, title: str, snippet: str) -> Candidate:
    url = f"https://site{n}.example/page"
    return Candidate(
        url=url,
        canonical_url=url,
        domain=f"site{n}.example",
        title=title,
        snippet=snippet,
        quality=Quality.SECONDARY,
        quality_score=3,
        frequency=1,
        score=1.0,
    )


def test_the_judgement_picks_when_clear_and_leaves_close_results_to_the_model() -> None:
    question = "Why did the Federal Reserve raise interest rates in 2022?"
    on = _candidate(
        1,
        "Federal Reserve raises interest rates to fight inflation",
        "The Federal Reserve raised interest rates in 2022 because inflation ran at a "
        "forty-year high, the Fed said.",
    )
    off = [
        _candidate(n, title, snippet)
        for n, (title, snippet) in enumerate(
            [
                ("Best hiking boots of the year", "We tested twenty boots on rocky trails."),
                ("How to make sourdough bread", "Feed the starter, then fold the dough."),
                ("Tour de France stage results", "The peloton crossed the Alps in rain."),
            ],
            start=2,
        )
    ]
    # One on-topic result among off-topic ones: nothing to choose, the model is not asked.
    assert clear_picks(question, [*off, on], want=3) == [on.canonical_url]
    # Many results about the question, scoring alike: the model chooses.
    alike = [
        _candidate(
            10 + n,
            f"Federal Reserve raises interest rates, report {n}",
            "The Federal Reserve raised interest rates in 2022 to fight inflation.",
        )
        for n in range(6)
    ]
    assert clear_picks(question, alike, want=3) is None


def test_select_model_asks_the_model_every_round(web: OfflineWeb, llm: ScriptedLLM) -> None:
    ScriptedResearcher().install(llm)
    kwargs: dict[str, Any] = {"depth": 1, "max_sources": 3}
    research(web, web.topics[3].question, select="model", **kwargs)
    assert by_stage(llm)["select"] == 1
