"""A run's timeline: one span per request the run made, told live and kept in its record,
with the critical path computed from the run's own record."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import sleuth
from sleuth import timeline
from sleuth.critical import cited_urls, critical_path
from sleuth.models import Report, Span
from sleuth.progress import Event
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import MARKERS, ScriptedResearcher

MODEL = "scripted-model"


def options(web: OfflineWeb, home: Path, **extra: Any) -> dict[str, Any]:
    return {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 5,
        "home": str(home),
        **extra,
    }


def stored_spans(home: Path, run_id: str) -> list[Span]:
    with Store(home) as store:
        records = store.stages(run_id, "spans")
    return [Span.model_validate(item) for record in records for item in record.payload]


def requested_pages(web: OfflineWeb) -> set[str]:
    main = urlsplit(web.base_url).netloc
    return {f"http://{r.host}{r.path}" for r in web.requests if r.host != main}


def test_a_run_times_every_search_and_page_it_asked_for(web: OfflineWeb, tmp_path: Path) -> None:
    """No model: each search request and each page the run tried is one span, in the
    report, on the progress stream (as it starts and as it ends) and in the run record."""
    web.reset_log()
    events: list[Event] = []
    home = tmp_path / "home"
    report = sleuth.research_sync(
        web.topics[3].question, on_event=events.append, no_llm=True, **options(web, home)
    )
    line = report.timeline
    assert line is not None and report.run_id is not None
    spans = line.spans
    searches = [r for r in web.requests if r.path == "/search"]
    assert Counter(s.kind for s in spans)["search"] == len(searches) >= 1
    with Store(home) as store:
        tried = [
            r.payload["url"] for r in store.stages(report.run_id) if r.stage.startswith("fetch")
        ]
    downloads = [s for s in spans if s.kind == "download"]
    # One download per page tried; those the run did not wait for ("not waited for" in
    # the Gaps) end cut, in their download or in their extraction.
    cut = {f.url for f in report.failures if f.reason.startswith("not waited for")}
    assert sorted(s.name for s in downloads if s.name not in cut) == sorted(tried)
    assert {s.name for s in spans if s.outcome == "cut"} == cut
    assert {s.name for s in downloads if s.status is not None} <= requested_pages(web)
    # Every page downloaded whole was extracted after its download ended.
    ended = {s.name: s.end for s in downloads if s.outcome == "ok"}
    extracted = [s for s in spans if s.kind == "extract"]
    assert {s.name for s in extracted} == set(ended)
    assert all(s.start >= (ended[s.name] or 0) - 0.01 for s in extracted)
    assert all(s.end is not None and s.start <= s.end <= line.wall_s + 0.01 for s in spans)
    # Told live: each span as it starts (no end yet; again once a slot is free for a
    # download that queued) and as it ends.
    told: dict[int, list[dict[str, Any]]] = {}
    for event in events:
        if event.kind == "span":
            told.setdefault(event.data["id"], []).append(event.data)
    assert set(told) == {s.id for s in spans}
    assert all("end" not in said[0] and said[-1]["end"] is not None for said in told.values())
    assert all("end" not in d for said in told.values() for d in said[:-1])
    # Kept in the run's record, whatever became of the report.
    assert sorted(stored_spans(home, report.run_id), key=lambda s: s.id) == sorted(
        spans, key=lambda s: s.id
    )


def test_the_critical_path_is_the_chain_the_slowest_cited_source_needed(
    web: OfflineWeb, tmp_path: Path
) -> None:
    report = sleuth.research_sync(web.topics[3].question, no_llm=True, **options(web, tmp_path))
    line = report.timeline
    assert line is not None and line.critical
    by_id = {s.id: s for s in line.spans}
    path = [by_id[i] for i in line.critical]
    # Without a model: the search that found a cited page, its download, its extraction.
    assert [s.kind for s in path] == ["search", "download", "extract"]
    search, download, extract = path
    assert download.name == extract.name
    assert download.name in cited_urls(report) or download.final_url in cited_urls(report)
    assert search.end is not None and search.end <= download.start + 0.01
    assert line.critical_s == pytest.approx(sum((s.end or 0) - s.start for s in path), abs=0.005)
    assert 0 < line.critical_s <= line.wall_s


@pytest.mark.usefixtures("every_model_call")  # a summary per page, tied to it
def test_a_model_run_times_each_call_and_ties_summaries_to_their_page(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    ScriptedResearcher().install(llm)
    report = sleuth.research_sync(
        web.topics[3].question,
        base_url=web.llm_url,
        model=MODEL,
        max_sources=3,
        **options(web, tmp_path),
    )
    line = report.timeline
    assert line is not None
    calls = [s for s in line.spans if s.kind == "llm"]
    asked = Counter(
        next((stage for stage, marker in MARKERS.items() if marker in r.last_user), "other")
        for r in llm.requests
    )
    # Every call the model answered is timed; a call the run cut (a summary of a page set
    # aside while it was being written) may or may not have reached the server first.
    done = Counter(s.stage for s in calls if s.outcome == "ok")
    cut = Counter(s.stage for s in calls if s.outcome == "cut")
    for stage in set(asked) | set(done):
        assert done[stage] <= asked[stage] <= done[stage] + cut[stage], (stage, asked, done, cut)
    pages = {s.name for s in line.spans if s.kind == "download"}
    summaries = [s for s in calls if s.stage == "summarize"]
    assert summaries and all(s.subject in pages for s in summaries)
    selects = [s for s in calls if s.stage == "select"]
    assert selects and all(s.subject for s in selects)
    path = [s for s in line.spans if s.id in set(line.critical)]
    stages = [s.stage if s.kind == "llm" else s.kind for s in path]
    # Planned, searched, ranked, fetched, read and summarised, then written.
    assert stages[0] in ("plan", "search") and stages[-1] == "report"
    assert {"plan", "select", "download", "extract", "summarize"} <= set(stages)


async def test_a_span_outside_a_run_records_nothing() -> None:
    with timeline.span("search", "search", "a query") as opened:
        timeline.note(size=3)
        timeline.started()
    assert opened is None
    timing = timeline.Timing()
    told: list[Span] = []
    timing.listener = told.append
    with timing.activate():

        async def cut() -> None:
            with timeline.span("download", "fetch", "http://example.com/"):
                await asyncio.sleep(3600)

        task = asyncio.ensure_future(cut())  # a task of the run: it sees the run's timing
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(ValueError), timeline.span("llm", "plan", "m"):
            raise ValueError("no")
    assert [(s.kind, s.outcome) for s in timing.spans] == [("download", "cut"), ("llm", "failed")]
    assert timing.spans[1].detail == "ValueError: no"
    assert [s.end is None for s in told] == [True, False, True, False]


def test_critical_path_of_spans() -> None:
    """The chain is the cited page's: its search, the select call of its round (after the
    round's slowest search), its download, extraction and summary; then the report."""

    def at(i: int, kind: str, stage: str, name: str, start: float, end: float, **kw: Any) -> Span:
        times = {"queued": start, "start": start, "end": end}
        return Span.model_validate(
            {"id": i, "kind": kind, "stage": stage, "name": name, **times, **kw}
        )

    spans = [
        at(1, "llm", "plan", MODEL, 0.0, 1.0),
        at(2, "search", "search", "q1", 1.0, 1.5),
        at(3, "search", "search", "q2", 1.0, 2.5),  # the round's slowest
        at(4, "llm", "select", MODEL, 2.5, 3.0, subject="q1\nq2"),
        at(5, "download", "fetch", "http://a.test/1", 3.0, 4.0),
        at(6, "download", "fetch", "http://a.test/2", 3.0, 3.2),
        at(7, "extract", "fetch", "http://a.test/1", 4.0, 4.5),
        at(8, "extract", "fetch", "http://a.test/2", 3.2, 3.3),
        at(9, "llm", "summarize", MODEL, 4.5, 5.5, subject="http://a.test/1"),
        at(10, "llm", "report", MODEL, 6.0, 7.0),
    ]
    hits = {"q1": ["http://a.test/1", "http://a.test/2"], "q2": []}
    path = critical_path(spans, hits, ["http://a.test/1", "http://a.test/2"])
    assert path.ids == [1, 3, 4, 5, 7, 9, 10]
    assert path.seconds == pytest.approx(1 + 1.5 + 0.5 + 1 + 0.5 + 1 + 1)
    # The report that cites nothing: the planning and writing calls alone.
    assert critical_path(spans, hits, []).ids == [1, 10]


def test_a_report_without_a_timeline_stays_as_it_was(web: OfflineWeb, tmp_path: Path) -> None:
    report = sleuth.research_sync(web.topics[3].question, no_llm=True, **options(web, tmp_path))
    data = report.to_json_dict()
    old = {k: v for k, v in data.items() if k != "timeline"}
    again = Report.model_validate({**old, "sources": report.model_dump()["sources"]})
    assert again.timeline is None and "timeline" not in again.to_json_dict()


# -- sleuth show ID --timeline ------------------------------------------------------------


def test_show_timeline_draws_a_stored_run(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    from sleuth.cli import run

    monkeypatch.setenv("COLUMNS", "160")
    home = tmp_path / "home"
    report = sleuth.research_sync(web.topics[3].question, no_llm=True, **options(web, home))
    assert report.timeline is not None and report.run_id is not None
    capsys.readouterr()
    assert run(["show", report.run_id[:6], "--home", str(home), "--timeline"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"run {report.run_id}: {report.topic}"
    assert f"{len(report.timeline.spans)} requests in" in lines[1]
    # A row per query and per page, each page with what became of it.
    for source in report.sources:
        row = next(line for line in lines if f"source {source.id} " in line)
        assert source.url.split("://", 1)[1][:20] in row
    marked = [line for line in lines if line.startswith("◆")]
    assert len(marked) == len({s.id for s in report.timeline.spans} & set(report.timeline.critical))
    assert "◆ critical path (3 requests): search" in out


def test_show_timeline_of_a_run_that_predates_timings(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run stored before sleuth kept timings: its report and records hold none."""
    from sleuth.cli import run

    home = tmp_path / "home"
    report = sleuth.research_sync(
        web.topics[3].question, no_llm=True, **options(web, home, no_store=True)
    )
    old = {k: v for k, v in report.model_dump(mode="json").items() if k != "timeline"}
    with Store(home) as store:
        run_id = store.create_run(report.topic, {})
        store.record_stage(run_id, "plan", {"question": report.topic, "queries": ["q"]})
        store.finish_run(run_id, "done", old)
    capsys.readouterr()
    assert run(["show", run_id, "--home", str(home), "--timeline"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"run {run_id} predates timings") and out.count("\n") <= 2


def test_show_timeline_of_an_interrupted_run_draws_what_it_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    from sleuth.cli import run

    monkeypatch.setenv("COLUMNS", "140")
    home = tmp_path / "home"
    spans = [
        {
            "id": 1,
            "kind": "search",
            "stage": "search",
            "name": "q",
            "queued": 0,
            "start": 0,
            "end": 0.4,
            "size": 8,
        },
        {
            "id": 2,
            "kind": "download",
            "stage": "fetch",
            "name": "http://a.test/page",
            "queued": 0.5,
            "start": 0.5,
            "end": 1.5,
            "outcome": "cut",
        },
    ]
    with Store(home) as store:
        run_id = store.create_run("a question", {})
        store.record_stage(run_id, "spans", spans)
        store.finish_run(run_id, "interrupted")
    capsys.readouterr()
    assert run(["show", run_id, "--home", str(home), "--timeline"]) == 0
    out = capsys.readouterr().out
    assert "2 requests in" in out and "a.test/page" in out and "╌" in out


@pytest.mark.slow
def test_a_deep_research_times_each_branch_and_its_path_goes_level_by_level(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    ScriptedResearcher().install(llm)
    report = sleuth.research_sync(
        web.topics[3].question,
        base_url=web.llm_url,
        model=MODEL,
        mode="deep",
        breadth=2,
        levels=2,
        max_sources=6,
        **options(web, tmp_path),
    )
    line, tree = report.timeline, report.tree
    assert line is not None and tree is not None
    nodes = {node.id: node for node in tree}
    # Each branch's searches and pages are told as its own.
    for node in tree:
        searched = {s.name for s in line.spans if s.kind == "search" and s.branch == node.id}
        assert searched <= set(node.queries), node
    assert {s.branch for s in line.spans if s.kind == "download"} <= set(nodes)
    by_id = {s.id: s for s in line.spans}
    path = [by_id[i] for i in line.critical]
    assert path[0].stage == "subquestions" and path[-1].stage in ("section", "frame")
    levels = [nodes[s.branch].level for s in path if s.branch]
    assert levels and levels == sorted(levels) and set(levels) == {1, 2}
    assert line.critical_s <= line.wall_s
