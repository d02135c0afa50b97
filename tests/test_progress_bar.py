"""The CLI's progress on a terminal: a bar with the run's counts, not only the last event.

Pages read of those wanted, searches done of those planned, and with a model the tokens
and cost so far, counted from the run's own events on the offline web.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import pytest
from rich.console import Console

import sleuth
from sleuth.cli._progress import Progress
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import ScriptedResearcher


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=160, highlight=False), out


def offline(web: OfflineWeb, **extra: Any) -> dict[str, Any]:
    return {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 5,
        "no_store": True,
        **extra,
    }


def bar_text(progress: Progress) -> str:
    """The bar's line as the terminal shows it now."""
    console, out = terminal()
    console.print(progress.bar.make_tasks_table(progress.bar.tasks))
    return out.getvalue()


@pytest.fixture
def llm(web: OfflineWeb) -> Iterator[ScriptedLLM]:
    previous, web.llm = web.llm, ScriptedLLM(models=["gpt-4o-mini"])
    try:
        yield web.llm
    finally:
        web.llm = previous


def test_the_bar_counts_pages_and_searches(web: OfflineWeb) -> None:
    console, out = terminal()
    progress = Progress(False, wanted=3, console=console)
    try:
        report = sleuth.research_sync(
            web.topics[0].question, on_event=progress, **offline(web, no_llm=True, max_sources=3)
        )
        shown = bar_text(progress)
    finally:
        progress.close()
    assert len(report.sources) == 3
    planned = len(report.queries)
    assert f"pages 3/3 · searches {planned}/{planned}" in shown
    assert "tokens" not in shown  # no model, no token count
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    # The events do not scroll past the bar: it says what the run is doing instead.
    assert not re.search(r"^ *(plan|search|fetched|report) ", plain, re.MULTILINE), plain
    assert "writing: report with 3 sources" in shown


def test_verbose_prints_every_event_above_the_bar(web: OfflineWeb) -> None:
    console, out = terminal()
    progress = Progress(False, wanted=3, console=console, verbose=True)
    try:
        report = sleuth.research_sync(
            web.topics[0].question, on_event=progress, **offline(web, no_llm=True, max_sources=3)
        )
    finally:
        progress.close()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert re.search(rf"\bplan {len(report.queries)} queries\n", plain)
    assert re.search(r"\bfetched read ", plain)
    assert " span " not in plain  # timings are drawn by show --timeline, not printed


def test_a_deep_research_counts_pages_over_its_tree_never_backwards(web: OfflineWeb) -> None:
    """Branches start and finish side by side: the count is the tree's, read of wanted,
    and it only goes up (it fell back to one branch's count at each branch's end)."""
    console, _ = terminal()
    progress = Progress(False, wanted=6, console=console)
    seen: list[int] = []
    branches: set[str] = set()

    def on_event(event: Any) -> None:
        progress(event)
        seen.append(progress.counts.pages_done())
        if event.kind == "branch":
            branches.add(str(event.data["node"]))

    try:
        report = sleuth.research_sync(
            web.topics[1].question,
            on_event=on_event,
            **offline(web, no_llm=True, mode="deep", breadth=3, levels=2, max_sources=6),
        )
    finally:
        progress.close()
    assert len(branches) >= 3
    assert seen == sorted(seen), seen
    # Pages read, of wanted: at least the sources cited (a page read and then left out
    # as off-topic beside the others still counted as read when it arrived).
    assert 6 >= seen[-1] >= min(6, len(report.sources)) >= 3
    assert progress.counts.branch is not None


def test_the_bar_adds_tokens_and_cost_with_a_model(web: OfflineWeb, llm: ScriptedLLM) -> None:
    ScriptedResearcher().install(llm)
    console, _ = terminal()
    progress = Progress(False, wanted=3, console=console)
    try:
        report = sleuth.research_sync(
            web.topics[0].question,
            on_event=progress,
            **offline(web, base_url=web.llm_url, model="gpt-4o-mini", max_sources=3),
        )
        shown = bar_text(progress)
    finally:
        progress.close()
    stats = report.stats
    assert stats.cost_usd is not None
    assert f"{stats.prompt_tokens + stats.completion_tokens:,} tokens" in shown
    assert f"${stats.cost_usd:.4f}" in shown


def test_without_a_terminal_the_lines_are_as_before(web: OfflineWeb) -> None:
    out = io.StringIO()
    progress = Progress(False, wanted=3, console=Console(file=out, highlight=False, width=300))
    try:
        sleuth.research_sync(
            web.topics[0].question, on_event=progress, **offline(web, no_llm=True, max_sources=3)
        )
    finally:
        progress.close()
    assert progress.bar is None
    lines = out.getvalue().splitlines()
    assert lines[0].split() == [
        "info",
        "--no-llm:",
        "the",
        "no-LLM",
        "pipeline",
        "runs",
        "(quoted",
        "passages,",
        "no",
        "model)",
    ]
    assert any(line.split()[:2] == ["plan", "2"] for line in lines)
    assert lines[-1].split() == ["report", "report", "with", "3", "sources"]


def test_the_resume_command_names_what_the_run_said_it_was() -> None:
    from sleuth.progress import Event

    progress = Progress(True)
    assert progress.resume_command() is None  # interrupted before the run was recorded
    progress(Event("info", "run k3xq7abcdefg started", {"run_id": "k3xq7abcdefg"}))
    assert progress.resume_command() == "sleuth resume k3xq7abcdefg"
    assert progress.resume_command("/tmp/my home") == (
        "sleuth resume k3xq7abcdefg --home '/tmp/my home'"
    )
    agent = Progress(True)
    agent(Event("info", "workspace /w/web_search/1", {"workspace": "/w/web_search/1"}))
    assert agent.resume_command() == "sleuth agent --resume /w/web_search/1"


def test_the_pages_wanted_follow_the_mode() -> None:
    from sleuth.cli._progress import pages_wanted
    from sleuth.settings import load_settings

    assert pages_wanted(load_settings({}, env={})) == 5
    assert pages_wanted(load_settings({"mode": "deep"}, env={})) == 20  # deep's own default
    assert pages_wanted(load_settings({"mode": "deep", "max_sources": 8}, env={})) == 8


def test_a_batch_eta_counts_the_questions_still_waiting() -> None:
    from sleuth.cli.batch import eta_s

    # 8 questions waiting, 4 at a time, 2 s each: two rounds.
    assert eta_s([], 8, 2.0, 4) == 4.0
    # One running for 1.5 s already ends in 0.5 s; its slot then takes the waiting one.
    assert eta_s([1.5], 1, 2.0, 1) == 2.5
    assert eta_s([1.0, 3.0], 3, 2.0, 2) == 4.0  # the overdue one is taken to end now
    assert eta_s([], 0, 2.0, 4) == 0.0


def test_a_batch_prints_each_question_as_it_finishes_above_its_bar() -> None:
    from sleuth.cli.batch import BatchProgress
    from sleuth.models import Report, Stats
    from sleuth.pipeline.batch.one import BatchResult
    from sleuth.progress import Event

    console, out = terminal()
    progress = BatchProgress(3, False, jobs=2, console=console)
    report = Report(
        topic="q",
        depth=1,
        queries=[],
        sources=[],
        failures=[],
        confidence="LOW",
        confidence_reason="none",
        markdown="",
        stats=Stats(),
    )
    try:
        for qid in ("a", "b"):
            progress(Event("question_start", qid, {"question_id": qid}))
        assert progress.eta() == "ETA …"
        progress.result(BatchResult("a", "What is a?", "done", report=report, elapsed_s=4.0))
        # b has run about 0 s of its 4, c waits for the first free slot: about 4 s more.
        assert progress.eta() in ("ETA 4s", "ETA 3s")
        progress.result(BatchResult("b", "What is b?", "failed", error="boom", elapsed_s=2.0))
    finally:
        progress.close()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "[1/3] done a (4.0 s, 0 sources): What is a?" in plain
    assert "[2/3] failed b: boom" in plain
