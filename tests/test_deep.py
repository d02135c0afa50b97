"""Deep research end to end (``sleuth deep``, ``research(..., mode="deep")``).

Runs against the offline web (real pages, SearXNG-like search) and its scripted model
(``ScriptedResearcher``: sub-questions, learnings with follow-ups, an outline, sections,
an introduction and a conclusion); the no-model second hop runs over a folder of
documents (``--docs``) written here, a two-hop question whose bridge page shares no
word with the question. Nothing of sleuth's own is mocked.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from records import BRIDGE_DOCS, BRIDGE_QUESTION

import sleuth
from sleuth.cli import run
from sleuth.models import Report
from sleuth.progress import Event
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import (
    MARKERS,
    PLANTED_CITATION,
    PLANTED_URL,
    ScriptedResearcher,
)
from sleuth.urls import canonicalize

PAGE_TIMEOUT = 5.0
MODEL = "scripted-model"
WAIT_S = 90.0


@pytest.fixture
def llm(web: OfflineWeb) -> Iterator[ScriptedLLM]:
    previous, web.llm = web.llm, ScriptedLLM(models=[MODEL])
    try:
        yield web.llm
    finally:
        web.llm = previous


def options(web: OfflineWeb, model: bool = True, **extra: Any) -> dict[str, Any]:
    opts: dict[str, Any] = {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": PAGE_TIMEOUT,
        "mode": "deep",
    }
    if model:
        opts.update(base_url=web.llm_url, model=MODEL)
    else:
        opts["no_llm"] = True
    return {**opts, **extra}


def page_requests(web: OfflineWeb) -> Counter[str]:
    main = urlsplit(web.base_url).netloc
    return Counter(
        f"http://{r.host}{r.path}" for r in web.requests if r.method == "GET" and r.host != main
    )


def searched(web: OfflineWeb) -> Counter[str]:
    return Counter(
        " ".join(str(r.query).lower().split()) for r in web.requests if r.path == "/search"
    )


def queries(web: OfflineWeb) -> set[str]:
    """The search terms the offline web was asked for, normalised."""
    asked = (parse_qs(r.query).get("q", [""])[0] for r in web.requests if r.path == "/search")
    return {" ".join(q.lower().split()) for q in asked}


def finished(home: Path) -> tuple[set[str], set[str]]:
    """The pages and search terms a stopped run had stored: what it finished. A download or
    search still under way when the run stopped is not finished, and may rightly be done again."""
    with sqlite3.connect(home / "sleuth.db") as db:
        pages = {url for (url,) in db.execute("SELECT canonical_url FROM pages")}
        terms = {" ".join(q.lower().split()) for (q,) in db.execute("SELECT query FROM searches")}
    return pages, terms


def cited(markdown: str) -> set[int]:
    body = markdown.split("\n## Sources", 1)[0]
    return {int(n) for n in re.findall(r"\[(\d+)\]", body)}


# -- the tree, the report, the JSON --------------------------------------------------------


@pytest.mark.slow
def test_deep_cli_json_has_the_tree_contents_and_checked_sections(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    ScriptedResearcher(plant=True).install(llm)
    web.reset_log()
    out = tmp_path / "deep.json"
    code = run(
        [
            "deep",
            "--search",
            "searxng",
            "--searxng-url",
            web.searxng_url,
            "--allow-private-urls",
            "--timeout",
            str(PAGE_TIMEOUT),
            "--base-url",
            web.llm_url,
            "--model",
            MODEL,
            "--breadth",
            "3",
            "--levels",
            "2",
            "--max-sources",
            "12",
            "--quiet",
            "--format",
            "json",
            "-o",
            str(out),
            web.topics[1].question,
        ]
    )
    assert code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["mode"] == "deep" and report["writer"] == "llm"
    tree = report["tree"]
    ids = {node["id"]: node for node in tree}
    first = [n for n in tree if n["level"] == 1]
    second = [n for n in tree if n["level"] == 2]
    # The shape: --breadth sub-questions, then narrower follow-ups under a level-1 node.
    assert 2 <= len(first) <= 3 and second
    for node in second:
        assert node["parent"] in ids and ids[node["parent"]]["level"] == 1
        assert node["id"].startswith(node["parent"] + ".")
    per_parent = Counter(n["parent"] for n in second)
    assert max(per_parent.values()) <= math.ceil(3 / 2)
    assert all(n["status"] in ("done", "empty", "failed", "skipped") for n in tree)
    assert all(n["queries"] for n in tree)
    # Every source belongs to a node, every node's ids are report sources.
    numbers = [s["id"] for s in report["sources"]]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) <= 12
    assert {n for node in tree for n in node["sources"]} == set(numbers)

    # No page fetched twice and no query searched twice in the whole tree.
    fetched = page_requests(web)
    assert fetched and max(fetched.values()) == 1
    queries = searched(web)
    assert queries and max(queries.values()) == 1

    # The Markdown: a table of contents linking every section, an introduction and a
    # conclusion, one numbering, every [n] a source read in this run.
    markdown = report["markdown"]
    contents = markdown.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    entries = re.findall(r"^\d+\. \[(.+)\]\(#[\w-]+\)$", contents, re.M)
    assert entries[0] == "Introduction" and entries[-1] == "Conclusion"
    assert len(entries) == len(report["sections"]) + 2 >= 3
    for title in entries:
        assert f"\n## {title}\n" in markdown
    assert cited(markdown) and cited(markdown) <= set(numbers)
    # The fabricated citation and URL planted in every section reply are gone.
    assert PLANTED_URL not in markdown and PLANTED_CITATION not in markdown
    check = report["citations"]
    assert check["unknown_citations_removed"] >= len(report["sections"])
    assert check["invented_urls_removed"] >= len(report["sections"])
    stages = Counter(
        name for r in llm.requests for name, marker in MARKERS.items() if marker in r.last_user
    )
    assert stages["subquestions"] == 1 and stages["outline"] == 1 and stages["frame"] == 1
    assert stages["section"] == len(report["sections"])
    assert stages["report"] == 0 and stages["plan"] == 0  # quick mode's prompts are not used


#: What the model puts into its outline's titles: a Markdown renderer would make each a link.
TITLE_URLS = (
    " see https://heading.invalid/a",
    " ([the study](https://heading.invalid/b))",
    " <https://heading.invalid/c>",
    " on www.heading.invalid",
)


@pytest.mark.slow
def test_urls_in_the_models_section_titles_never_reach_headings_or_contents(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    researcher = ScriptedResearcher()

    def outline(body: dict[str, Any]) -> str:
        plan = json.loads(researcher.outline(body))
        for n, item in enumerate(plan):
            item["title"] += TITLE_URLS[n % len(TITLE_URLS)]
        plan.append({"title": "https://heading.invalid/d", "sources": plan[0]["sources"]})
        return json.dumps(plan)

    llm.add(outline, contains=MARKERS["outline"], times=None)
    researcher.install(llm)
    report = sleuth.research_sync(
        web.topics[1].question, **options(web, breadth=2, levels=1, max_sources=6)
    )
    assert report.writer == "llm" and report.sections
    markdown = report.markdown
    assert "heading.invalid" not in markdown
    assert all("heading.invalid" not in s.title and s.title.strip() for s in report.sections)
    contents = markdown.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    entries = re.findall(r"^\d+\. \[(.+)\]\(#[\w-]+\)$", contents, re.M)
    assert len(entries) == len(report.sections) + 2  # the introduction and conclusion
    assert any("the study" in title for title in entries)  # a link keeps its text
    assert report.citations is not None and report.citations.invented_urls_removed >= 4


def test_one_level_stops_after_the_sub_questions(web: OfflineWeb, llm: ScriptedLLM) -> None:
    ScriptedResearcher().install(llm)
    report = sleuth.research_sync(
        web.topics[3].question, **options(web, breadth=2, levels=1, max_sources=4)
    )
    assert report.tree is not None
    assert {n.level for n in report.tree} == {1} and len(report.tree) <= 2
    # The model was asked for learnings and follow-ups; no follow-up was explored.
    assert any(MARKERS["learn"] in r.last_user for r in llm.requests)


def test_follow_ups_that_repeat_the_question_end_the_tree(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    question = web.topics[3].question
    llm.add(
        json.dumps({"learnings": [], "follow_ups": [question, question.upper()]}),
        contains=MARKERS["learn"],
        times=None,
    )
    ScriptedResearcher().install(llm)
    events: list[Event] = []
    report = sleuth.research_sync(
        question, on_event=events.append, **options(web, breadth=2, levels=3, max_sources=6)
    )
    assert report.tree is not None and {n.level for n in report.tree} == {1}
    assert any("repeat what is known" in e.message for e in events if e.kind == "info")


@pytest.mark.slow
def test_a_failing_branch_is_in_the_gaps_and_the_others_go_on(web: OfflineWeb) -> None:
    question = web.topics[0].question
    web.search_failures = 1  # the first search of the tree answers 500
    try:
        report = sleuth.research_sync(
            question, **options(web, model=False, breadth=3, levels=1, max_sources=6)
        )
    finally:
        web.search_failures = 0
    assert report.tree is not None
    failed = [n for n in report.tree if n.status == "failed"]
    assert len(failed) == 1 and failed[0].note
    assert any(
        failed[0].question in f.reason and "could not be researched" in f.reason
        for f in report.failures
    )
    gaps = report.markdown.split("## Gaps", 1)[1]
    assert "could not be researched" in gaps
    assert [n for n in report.tree if n.status == "done"] and report.sources


def test_a_budget_cuts_the_tree_and_says_so(web: OfflineWeb) -> None:
    report = sleuth.research_sync(
        web.topics[4].question, **options(web, model=False, breadth=2, levels=3, max_fetches=2)
    )
    assert report.tree is not None
    assert report.stopped_by is not None and "--max-fetches 2" in report.stopped_by
    assert not [n for n in report.tree if n.level == 3 and n.status != "skipped"]
    assert report.stats.fetches <= 2 + 2  # pages already on their way finish
    assert "fetch budget reached" in report.markdown.split("## Gaps", 1)[1]


@pytest.mark.slow
def test_without_a_model_the_report_is_grouped_by_sub_question(web: OfflineWeb) -> None:
    web.reset_log()
    report = sleuth.research_sync(
        web.topics[1].question, **options(web, model=False, breadth=3, levels=2)
    )
    assert report.writer == "template" and report.tree is not None and report.sources
    assert len(report.sources) <= 20  # deep mode's default
    firsts = [n for n in report.tree if n.level == 1 and n.sources]
    markdown = report.markdown
    assert "## Contents" in markdown and "## Introduction" in markdown
    for node in firsts:
        assert (
            f"\n## {node.question}\n" in markdown
            or f"\n## {node.question.rstrip('?')}" in markdown
            or node.question in markdown
        )
    assert cited(markdown) == {s.id for s in report.sources}
    assert max(page_requests(web).values()) == 1


# -- the second hop without a model ------------------------------------------------------


def test_no_model_second_hop_finds_the_bridge_page(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in BRIDGE_DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    # The best-ranked page is waited for, as by default (the suite sets --top-wait 0): a
    # branch that reads one page reads its best, not the first to arrive.
    common = {"docs": str(folder), "no_llm": True, "top_wait": 3.0}
    quick = sleuth.research_sync(BRIDGE_QUESTION, max_sources=3, **common)
    assert not [s for s in quick.sources if s.title == "Ilsa Varenne"], (
        "the fixture is wrong: one hop already finds the bridge page"
    )
    deep = sleuth.research_sync(
        BRIDGE_QUESTION, mode="deep", breadth=2, levels=2, max_sources=6, **common
    )
    assert deep.tree is not None
    hop = [n for n in deep.tree if n.level == 2 and n.question == "Ilsa Varenne"]
    assert hop and hop[0].status == "done" and hop[0].sources
    bridge = [s for s in deep.sources if s.title == "Ilsa Varenne"]
    assert bridge and bridge[0].id in hop[0].sources
    assert f"[{bridge[0].id}]" in deep.markdown.split("## Sources", 1)[0]
    assert "Brackwater" in deep.markdown


# -- resume ------------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_deep_run_stopped_mid_tree_resumes_without_asking_anything_again(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    ScriptedResearcher().install(llm)
    home = tmp_path / "home"
    question = web.topics[2].question
    second_level = asyncio.Event()

    def on_event(event: Event) -> None:
        if event.kind == "branch" and event.data.get("level") == 2:
            second_level.set()

    opts = options(web, home=str(home), breadth=2, levels=2, max_sources=6, concurrency=1)
    web.reset_log()
    web.latency = 0.3
    try:
        task = asyncio.create_task(sleuth.research(question, on_event=on_event, **opts))
        await asyncio.wait_for(second_level.wait(), WAIT_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        web.latency = 0.0
    done_pages, done_searches = finished(home)
    assert done_pages and done_searches
    before_calls = len(llm.requests)
    with Store(home) as store:
        [summary] = store.list_runs()
        assert summary.status == "interrupted"
    web.reset_log()
    report: Report = await sleuth.research(question, resume_id=summary.id, **opts)
    assert report.run_id == summary.id and report.sources and report.tree is not None
    assert {n.level for n in report.tree} == {1, 2}
    again = {canonicalize(url) for url in page_requests(web)} & done_pages
    assert not again, f"pages fetched again after the resume: {again}"
    assert not queries(web) & done_searches, "searches were repeated"
    # Every model call made before the stop was answered from the store.
    asked_before = {json.dumps(r.messages, sort_keys=True) for r in llm.requests[:before_calls]}
    asked_after = [json.dumps(r.messages, sort_keys=True) for r in llm.requests[before_calls:]]
    assert not asked_before & set(asked_after), "a model call was made twice"
    with Store(home) as store:
        assert store.get_run(summary.id).status == "done"


# -- the web page ------------------------------------------------------------------------


def test_the_web_page_runs_a_deep_research_and_streams_the_tree(
    web: OfflineWeb, tmp_path: Path
) -> None:
    from starlette.testclient import TestClient

    from sleuth.settings import load_settings
    from sleuth.web.app import create_app

    settings = load_settings(
        {
            "search": "searxng",
            "searxng_url": web.searxng_url,
            "allow_private_urls": True,
            "timeout": 2,
            "top_wait": 0,
            "no_llm": True,
            "home": str(tmp_path),
            "breadth": 2,
        },
        env={},
    )
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8000") as client:
        page = client.get("/").text
        assert '<option value="deep">Deep</option>' in page and 'id="ui-tree"' in page
        assert client.get("/api/config").json()["mode"] == "quick"
        started = client.post(
            "/api/runs",
            json={"question": web.topics[3].question, "mode": "deep", "max_sources": "4"},
        )
        assert started.status_code == 201
        body = client.get(started.json()["events"]).text
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    branches = [e["data"] for e in events if e.get("kind") == "branch"]
    assert branches and {b["node"] for b in branches} >= {"1", "2"}
    assert all({"level", "status", "read", "wanted", "question"} <= set(b) for b in branches)
    report = next(e for e in events if "html" in e)
    assert "Contents" in report["html"] and report["sources"] <= 4


# -- options -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-sources", "55", "q"], "--max-sources: must be at most 50 (60 with --mode deep)"),
        (["deep", "--max-sources", "61", "q"], "invalid value for --max-sources"),
        (["deep", "--levels", "5", "q"], "invalid value for --levels"),
        (["--mode", "deeper", "q"], "invalid value for --mode"),
    ],
)
def test_bad_deep_options_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run([*args[:-1], "--no-store", args[-1]]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_deep_defaults_apply_only_where_the_user_set_nothing() -> None:
    from sleuth.settings import load_settings, mode_defaults

    deep = mode_defaults(load_settings({"mode": "deep"}, env={}))
    assert (deep.max_sources, deep.words) == (20, 3000)
    mine = mode_defaults(load_settings({"mode": "deep", "max_sources": 7}, env={}))
    assert (mine.max_sources, mine.words) == (7, 3000)
    quick = mode_defaults(load_settings({}, env={}))
    assert (quick.max_sources, quick.words) == (5, 1000)


@pytest.mark.slow
def test_a_deep_run_killed_mid_tree_resumes_without_fetching_or_searching_again(
    web: OfflineWeb, tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    home = tmp_path / "home"
    question = web.topics[4].question
    args = [
        "deep",
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        "10",
        "--home",
        str(home),
        "--quiet",
        "--no-llm",
        "--concurrency",
        "1",
        "--breadth",
        "2",
        "--levels",
        "2",
        "--max-sources",
        "6",
        question,
    ]

    def level_one_done() -> str | None:
        if not (home / "sleuth.db").exists():
            return None
        with Store(home) as store:
            runs = store.list_runs()
            if runs and store.stages(runs[0].id, "node"):
                return runs[0].id
        return None

    web.reset_log()
    web.latency = 0.4  # slow pages: the second level is still being fetched when killed
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sleuth", *args],
            cwd=tmp_path,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline, run_id = time.monotonic() + WAIT_S, None
            while run_id is None and time.monotonic() < deadline and proc.poll() is None:
                run_id = level_one_done()
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    finally:
        web.latency = 0.0
    assert run_id is not None, "the run ended (or hung) before its first level was recorded"
    with Store(home) as store:
        # The pages the killed run had read whole (a download cut by the kill is not one).
        fetched = {rec.payload["url"] for rec in store.stages(run_id, "fetched")}
        assert store.get_run(run_id).status == "running"  # the dead process could not say
    _, done_searches = finished(home)
    assert fetched and fetched <= set(page_requests(web)) and done_searches
    web.reset_log()
    out = tmp_path / "report.json"
    assert (
        run(["resume", run_id, "--home", str(home), "--quiet", "--format", "json", "-o", str(out)])
        == 0
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["mode"] == "deep" and report["run_id"] == run_id and report["sources"]
    again = set(page_requests(web)) & fetched
    assert not again, f"pages fetched again after the resume: {again}"
    assert not queries(web) & done_searches, "searches were repeated"
    assert report["stats"]["cached_fetches"] >= 1
    # The resumed run walked the whole tree: the second level too.
    assert {node["level"] for node in report["tree"]} == {1, 2}
    with Store(home) as store:
        assert store.get_run(run_id).status == "done"
