"""A deep research's tree of questions as the user sees it: ``sleuth show ID --tree``, the
HTML report's question tree, and the live ``branch`` events the web page grows its tree
from. (The tree drawn in a real Chromium: tests/test_pictures.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_html import Parsed

import sleuth
from sleuth.models import Report
from sleuth.progress import Event
from sleuth.report.html import render_html
from sleuth.store import Store
from sleuth.testing import OfflineWeb

STATUS_WORDS = {"done": "done", "empty": "nothing new", "failed": "failed", "skipped": "skipped"}


def options(web: OfflineWeb, home: Path, **extra: Any) -> dict[str, Any]:
    return {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 5,
        "home": str(home),
        "no_llm": True,
        **extra,
    }


@pytest.fixture
def deep_run(web: OfflineWeb, tmp_path: Path) -> tuple[Report, list[Event]]:
    events: list[Event] = []
    report = sleuth.research_sync(
        web.topics[3].question,
        mode="deep",
        breadth=2,
        levels=2,
        max_sources=6,
        on_event=events.append,
        **options(web, tmp_path / "home"),
    )
    assert report.tree and len({n.level for n in report.tree}) == 2, "the fixture needs 2 levels"
    return report, events


def test_show_tree_draws_each_question_with_its_status_sources_and_section(
    deep_run: tuple[Report, list[Event]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: Any,
) -> None:
    from sleuth.cli import run

    monkeypatch.setenv("COLUMNS", "200")
    report, _ = deep_run
    assert report.tree is not None and report.run_id is not None
    capsys.readouterr()
    assert run(["show", report.run_id[:6], "--home", str(tmp_path / "home"), "--tree"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"run {report.run_id}: {len(report.tree)} questions: ")
    assert lines[1] == report.topic
    for node in report.tree:
        row = next(i for i, line in enumerate(lines) if f"{node.id}  {node.question}" in line)
        assert STATUS_WORDS[node.status] in lines[row]
        # A follow-up is drawn under its sub-question, one step further in.
        indent = lines[row].index(STATUS_WORDS[node.status])
        assert indent == 4 * node.level, lines[row]
        if node.sources:
            assert "sources " + ", ".join(f"[{n}]" for n in sorted(node.sources)) in lines[row + 1]
            assert "→ " in lines[row + 1]  # the section it fed


def test_show_tree_of_a_quick_run_says_it_has_none(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sleuth.cli import run

    home = tmp_path / "home"
    report = sleuth.research_sync(web.topics[3].question, **options(web, home))
    assert report.run_id is not None
    capsys.readouterr()
    assert run(["show", report.run_id, "--home", str(home), "--tree"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"run {report.run_id} has no question tree: it is a quick research")


def test_show_tree_of_an_interrupted_deep_run_draws_the_branches_it_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sleuth.cli import run

    home = tmp_path / "home"
    with Store(home) as store:
        run_id = store.create_run("a question", {"mode": "deep"})
        for node in (
            {"id": "1", "level": 1, "question": "first part", "status": "done", "sources": []},
            {"id": "2", "level": 1, "question": "second part", "status": "empty"},
            {"id": "1.1", "parent": "1", "level": 2, "question": "a follow-up", "status": "done"},
        ):
            store.record_stage(run_id, "node", node)
        store.finish_run(run_id, "interrupted")
        quick_id = store.create_run("another question", {})
        store.finish_run(quick_id, "interrupted")
    capsys.readouterr()
    assert run(["show", run_id, "--home", str(home), "--tree"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"run {run_id}: 3 questions: 2 done, 1 nothing new"
    follow_up = next(line for line in lines if "1.1  a follow-up" in line)
    assert follow_up.index("done") == 8  # under its sub-question
    assert run(["show", quick_id, "--home", str(home), "--tree"]) == 0
    assert "has no question tree" in capsys.readouterr().out


def test_the_report_draws_one_node_per_question_linked_to_its_sources_and_section(
    deep_run: tuple[Report, list[Event]],
) -> None:
    report, _ = deep_run
    assert report.tree is not None
    parsed = Parsed(render_html(report))
    nodes = {a["data-node"]: a["data-status"] for tag, a in parsed.tags if "data-node" in a}
    assert nodes == {node.id: node.status for node in report.tree}
    ids = parsed.ids()
    links = [a["href"] for tag, a in parsed.tags if tag == "a" and "href" in a]
    fed = [h for h in links if h.startswith("#") and not h.startswith("#source-")]
    assert all(h[1:] in ids for h in links if h.startswith("#")), "every link has its target"
    assert len(fed) >= sum(1 for node in report.tree if node.sources)


def test_every_branch_tells_its_end_as_it_comes(deep_run: tuple[Report, list[Event]]) -> None:
    """The live tree grows from the ``branch`` events: each question is told as it starts
    and its last event carries the status the report records."""
    report, events = deep_run
    assert report.tree is not None
    told: dict[str, list[str]] = {}
    for event in events:
        if event.kind == "branch":
            told.setdefault(event.data["node"], []).append(event.data["status"])
    assert {node: said[-1] for node, said in told.items()} == {
        node.id: node.status for node in report.tree
    }
    for node in report.tree:
        if node.status in ("done", "empty"):
            assert told[node.id][0] == "searching", told[node.id]
    # A branch's end is told once, when it comes, not again when its level ends.
    assert all(said.count(said[-1]) == 1 for said in told.values()), told


def test_show_takes_one_picture_at_a_time(tmp_path: Path, error_line: Any) -> None:
    from sleuth.cli import run

    assert run(["show", "last", "--home", str(tmp_path), "--tree", "--timeline"]) == 2
    assert "give --timeline or --tree, not both" in error_line()
