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
    assert re.search(rf"\bplan {planned} queries\n", plain)  # each event keeps its line


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
