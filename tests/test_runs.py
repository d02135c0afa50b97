"""The run store end to end, against the offline web: reruns that cost nothing, a run
killed mid-fetch and resumed, concurrent runs on one home, budgets, and the
``runs`` / ``show`` / ``resume`` / ``cache clear`` commands.

Every run uses its own ``--home`` under ``tmp_path``. "Mid-fetch" is detected by
polling the store for fetched pages, never by sleeping a fixed time.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import sleuth
from sleuth.cli import run
from sleuth.models import Report
from sleuth.pipeline.quick import research
from sleuth.progress import Event
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM

PAGE_TIMEOUT = 2.0
POLL_S = 0.02  # how often the store is polled while waiting for a subprocess
WAIT_S = 90.0  # the longest any wait may take before the test fails


def web_args(web: OfflineWeb, home: Path, *extra: str) -> list[str]:
    return [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        str(PAGE_TIMEOUT),
        "--home",
        str(home),
        "--quiet",
        *extra,
    ]


def web_options(web: OfflineWeb, home: Path, **extra: Any) -> dict[str, Any]:
    return {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": PAGE_TIMEOUT,
        "home": str(home),
        **extra,
    }


def searches(web: OfflineWeb) -> list[str]:
    return [r.query for r in web.requests if r.path == "/search"]


def page_requests(web: OfflineWeb) -> list[str]:
    main = urlsplit(web.base_url).netloc
    return [f"http://{r.host}{r.path}" for r in web.requests if r.host != main]


def answer(body: dict[str, Any]) -> str:
    """A deterministic model for every LLM stage (same prompt, same answer)."""
    messages = body.get("messages") or [{"content": ""}]
    system, user = str(messages[0]["content"]), str(messages[-1]["content"])
    if "You plan web searches" in system:
        question = user.split("<<<QUESTION\n", 1)[1].split("\nQUESTION>>>", 1)[0]
        return json.dumps([question, f"{question} explained"])
    if "You plan follow-up" in system:
        return "[]"
    if "You choose which search results" in system:
        return "1, 2, 3"
    if "You read web pages" in system:
        return "The page reports what happened and why it matters for the question."
    if "You write research reports" in system:
        return "## Findings\n\nThe sources report what happened [1]."
    return "Nothing to add."


@pytest.fixture
def llm(web: OfflineWeb) -> Iterator[ScriptedLLM]:
    """A fresh scripted model on the offline web, answering every stage."""
    previous, web.llm = web.llm, ScriptedLLM()
    web.llm.add(answer, times=None)
    try:
        yield web.llm
    finally:
        web.llm = previous


def read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


# ---------------------------------------------------------------- reruns


@pytest.mark.slow
@pytest.mark.usefixtures("every_model_call")  # the summaries are cached too
def test_a_second_identical_run_makes_no_request_and_no_model_call(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    # More sources wanted than there are pages: every summary asked is answered, none is
    # cut in flight once enough pages are read (the server would count it, sleuth not).
    args = web_args(
        web,
        home,
        "--base-url",
        web.llm_url,
        "--model",
        "scripted-model",
        "--max-sources",
        "20",
        "--format",
        "json",
        "-o",
    )
    question = web.topics[3].question
    web.reset_log()
    assert run([*args, str(tmp_path / "first.json"), question]) == 0
    first = read_json(tmp_path / "first.json")
    calls = len(llm.requests)
    assert searches(web) and page_requests(web) and calls == first["stats"]["llm_calls"] > 0

    web.reset_log()
    assert run([*args, str(tmp_path / "second.json"), question]) == 0
    second = read_json(tmp_path / "second.json")
    assert web.requests == [], "the rerun reached the network"
    assert len(llm.requests) == calls, "the rerun asked the model"
    stats = second["stats"]
    assert stats["llm_calls"] == 0 and stats["prompt_tokens"] == 0
    # Every reply the rerun used came from the store (a summary of a page that arrived
    # while the first run's report was written may not be needed again).
    assert 0 < stats["cached_llm_calls"] <= calls
    assert stats["cached_searches"] == stats["searches"] > 0
    assert stats["cached_fetches"] == stats["fetches"] > 0
    assert [s["url"] for s in second["sources"]] == [s["url"] for s in first["sources"]]
    assert second["run_id"] and second["run_id"] != first["run_id"]
    with Store(home) as store:
        summaries = [r.payload for r in store.stages(first["run_id"], "summary")]
    kept = {s["url"] for s in summaries if s["kept"] and s["summary"]}
    assert len(kept) >= len(first["sources"]), "summaries were not recorded as they were made"

    capsys.readouterr()
    assert run(["runs", "--home", str(home)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["ID", "STATUS", "STARTED", "TOOK", "SOURCES", "TOKENS", "QUESTION"]
    newest, oldest = table[1].split(), table[2].split()
    tokens = first["stats"]["prompt_tokens"] + first["stats"]["completion_tokens"]
    assert newest[0] == second["run_id"] and oldest[0] == first["run_id"]
    assert newest[1] == oldest[1] == "done"
    assert oldest[5:7] == [str(len(first["sources"])), str(tokens)]
    assert newest[6] == "0"  # tokens spent by the rerun
    assert question[:20] in table[1]


def test_refresh_asks_again_and_keeps_what_it_learns(web: OfflineWeb, tmp_path: Path) -> None:
    home = tmp_path / "home"
    question = web.topics[2].question
    sleuth.research_sync(question, **web_options(web, home, no_llm=True, depth=1))
    web.reset_log()
    refreshed = sleuth.research_sync(
        question, **web_options(web, home, no_llm=True, depth=1, refresh=True)
    )
    assert searches(web) and page_requests(web)
    assert refreshed.stats.cached_searches == refreshed.stats.cached_fetches == 0
    web.reset_log()
    sleuth.research_sync(question, **web_options(web, home, no_llm=True, depth=1))
    assert web.requests == []


def test_no_store_keeps_nothing(web: OfflineWeb, tmp_path: Path) -> None:
    home = tmp_path / "home"
    report = sleuth.research_sync(
        web.topics[3].question, **web_options(web, home, no_llm=True, depth=1, no_store=True)
    )
    assert report.sources and report.run_id is None
    assert not home.exists() or not any(home.iterdir())


# ---------------------------------------------------------------- interrupted runs


def _subprocess_env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def _wait_for(check: Any, what: str, proc: subprocess.Popen[bytes] | None = None) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else b""
            raise AssertionError(f"the run ended before {what}: {err!r}")
        time.sleep(POLL_S)
    raise AssertionError(f"timed out waiting for {what}")


class Watcher:
    """Reads another process's run from the store, opening it once it exists."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.store: Store | None = None

    def fetched_so_far(self) -> tuple[str, list[str]] | None:
        """(run id, URLs of the pages the store says were fetched) once two are in."""
        if self.store is None:
            if not (self.home / "sleuth.db").exists():
                return None
            self.store = Store(self.home)
        runs = self.store.list_runs()
        if not runs:
            return None
        done = [rec.payload["url"] for rec in self.store.stages(runs[0].id, "fetched")]
        return (runs[0].id, done) if len(done) >= 2 else None

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def _signal_mid_fetch(
    web: OfflineWeb, home: Path, tmp_path: Path, sig: signal.Signals
) -> tuple[int, str, str]:
    """Start a no-model run of topic 3 in a subprocess, one slow page at a time (so it
    spends seconds mid-fetch), and send it ``sig`` once two pages are fetched:
    (exit code, run id, stderr)."""
    args = web_args(
        web,
        home,
        "--no-llm",
        "--concurrency",
        "1",
        "--max-sources",
        "5",
        "--timeout",
        "10",
        web.topics[3].question,
    )
    web.latency = 0.4
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sleuth", *args],
            cwd=tmp_path,
            env=_subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        watcher = Watcher(home)
        try:
            run_id, _ = _wait_for(watcher.fetched_so_far, "two fetched pages", proc)
        finally:
            watcher.close()
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
    finally:
        web.latency = 0.0
    return proc.returncode, run_id, err.decode()


@pytest.mark.slow
def test_a_run_killed_mid_fetch_resumes_without_fetching_anything_twice(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    web.reset_log()
    code, run_id, _ = _signal_mid_fetch(web, home, tmp_path, signal.SIGKILL)
    assert code == -signal.SIGKILL
    with Store(home) as store:
        fetched = [rec.payload["url"] for rec in store.stages(run_id, "fetched")]
        assert store.get_run(run_id).status == "running"  # the dead process could not say
    before = page_requests(web)
    assert set(fetched) <= set(before) and len(fetched) < 5

    capsys.readouterr()
    assert run(["runs", "--home", str(home)]) == 0
    assert f"{run_id}  interrupted" in capsys.readouterr().out

    web.reset_log()
    out = tmp_path / "report.json"
    assert (
        run(
            [
                "resume",
                run_id[:8],
                "--home",
                str(home),
                "--quiet",
                "--format",
                "json",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    after = page_requests(web)
    assert not set(after) & set(fetched), "a page fetched before the kill was fetched again"
    assert searches(web) == [], "searches done before the kill were repeated"
    report = read_json(out)
    assert report["run_id"] == run_id
    assert len(report["sources"]) == 5, "the resumed run did not finish its report"
    # Every source was fetched once, before the kill or after. A page fetched before it
    # (from the question's own results) may be outranked by one that the resumed run,
    # which knows every query's hits at once, waits for (sleuth.pipeline.gather's grace).
    assert {s["url"] for s in report["sources"]} <= set(fetched) | set(after)
    assert report["stats"]["cached_fetches"] >= len(fetched)
    assert "## Sources" in report["markdown"] and "[5]" in report["markdown"]
    with Store(home) as store:
        info = store.get_run(run_id)
        assert info.status == "done" and info.report["run_id"] == run_id
        assert [r.stage for r in store.stages(run_id, "resumed")] == ["resumed"]
        assert store.integrity_check() == "ok"
    capsys.readouterr()
    assert run(["show", run_id, "--home", str(home)]) == 0
    assert capsys.readouterr().out == report["markdown"]


@pytest.mark.slow
def test_ctrl_c_says_how_to_resume_the_run(web: OfflineWeb, tmp_path: Path) -> None:
    """After Ctrl-C the user is told the command that finishes the run (it printed only
    'sleuth: error: interrupted')."""
    home = tmp_path / "my home"
    code, run_id, err = _signal_mid_fetch(web, home, tmp_path, signal.SIGINT)
    assert code == 130
    lines = err.strip().splitlines()
    assert lines[-2:] == [
        "sleuth: error: interrupted",
        f"resume with: sleuth resume {run_id} --home '{home}'",
    ]
    with Store(home) as store:
        assert store.get_run(run_id).status == "interrupted"


async def test_a_cancelled_run_is_marked_interrupted_and_can_be_resumed(
    web: OfflineWeb, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    question = web.topics[4].question
    fetched = asyncio.Event()

    def on_event(event: Event) -> None:
        if event.kind == "fetched":
            fetched.set()

    web.latency = 0.3
    try:
        task = asyncio.create_task(
            research(
                question,
                on_event=on_event,
                **web_options(web, home, no_llm=True, depth=1, concurrency=1, timeout=10),
            )
        )
        await asyncio.wait_for(fetched.wait(), WAIT_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        web.latency = 0.0
    with Store(home) as store:
        [summary] = store.list_runs()
        assert summary.status == "interrupted"
        assert store.stages(summary.id, "fetched")
    resumed = await research(
        question, resume_id=summary.id, **web_options(web, home, no_llm=True, depth=1)
    )
    assert resumed.run_id == summary.id and resumed.sources
    with Store(home) as store:
        assert store.get_run(summary.id).status == "done"


@pytest.mark.slow
def test_concurrent_runs_share_one_home(web: OfflineWeb, tmp_path: Path) -> None:
    home = tmp_path / "home"
    questions = [web.topics[3].question, web.topics[5].question]
    web.latency = 0.5  # long enough that the two runs surely overlap
    try:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "sleuth",
                    *web_args(web, home, "--no-llm", "--concurrency", "2", "--format", "json"),
                    q,
                ],
                cwd=tmp_path,
                env=_subprocess_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for q in questions
        ]
        outputs = [proc.communicate(timeout=WAIT_S) for proc in procs]
    finally:
        web.latency = 0.0
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()
    reports = [json.loads(out) for out, _ in outputs]
    with Store(home) as store:
        assert store.integrity_check() == "ok"
        runs = {r.id: r for r in store.list_runs()}
        assert set(runs) == {r["run_id"] for r in reports}
        assert {r.status for r in runs.values()} == {"done"}
        for report in reports:
            info = store.get_run(report["run_id"])
            assert info.report["markdown"] == report["markdown"]
            assert len(store.stages(info.id, "fetched")) >= len(report["sources"]) > 0
        first, second = sorted(runs.values(), key=lambda r: r.created_at)
        assert second.created_at < first.updated_at, "the two runs did not overlap"
        counts = store.cache_counts()
        assert counts["runs"] == 2 and counts["pages"] >= sum(len(r["sources"]) for r in reports)


# ---------------------------------------------------------------- budgets


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("max_tokens", 200, "token budget reached (--max-tokens 200)"),
        ("max_cost", 0.00001, "cost budget reached (--max-cost $1e-05)"),
    ],
)
def test_model_budgets_stop_the_run_and_still_yield_a_report(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path, option: str, value: float, reason: str
) -> None:
    # gpt-4o-mini has a known price, so its calls have a cost to count.
    report = sleuth.research_sync(
        web.topics[0].question,
        **web_options(
            web, tmp_path / "home", base_url=web.llm_url, model="gpt-4o-mini", **{option: value}
        ),
    )
    assert report.stopped_by == reason
    assert reason in report.markdown.split("## Gaps", 1)[1]
    assert report.markdown.startswith("# Research") and report.run_id
    assert 0 < len(llm.requests) < 5, "the model was asked after the budget was spent"
    with Store(tmp_path / "home") as store:
        info = store.get_run(report.run_id)
        assert info.status == "done" and info.report["stopped_by"] == reason


# ---------------------------------------------------------------- the commands


def test_show_resume_and_cache_clear(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    report = sleuth.research_sync(
        web.topics[2].question, **web_options(web, home, no_llm=True, depth=1)
    )
    assert report.run_id
    capsys.readouterr()
    assert run(["show", report.run_id[:6], "--home", str(home), "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == json.loads(json.dumps(report.to_json_dict()))
    assert run(["runs", "--home", str(home), "--format", "json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["id"] == report.run_id and listed["sources"] == len(report.sources)

    web.reset_log()
    assert run(["resume", report.run_id, "--home", str(home)]) == 0
    captured = capsys.readouterr()
    assert captured.out == report.markdown and "already done" in captured.err
    assert web.requests == []

    assert run(["cache", "clear", "--older-than", "7d", "--home", str(home)]) == 0
    assert capsys.readouterr().out.startswith("removed 0 searches, 0 pages and 0 model replies")
    assert run(["cache", "clear", "--home", str(home)]) == 0
    assert "removed 0 searches" not in capsys.readouterr().out
    with Store(home) as store:
        assert store.cache_counts() == {"searches": 0, "pages": 0, "llm_calls": 0, "runs": 1}
    assert run(["show", report.run_id, "--home", str(home)]) == 0  # runs are kept


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    Store(home).close()
    for argv, words in [
        (["show", "nosuchrun"], "no run with id 'nosuchrun'"),
        (["resume", "nosuchrun"], "no run with id 'nosuchrun'"),
        (["cache", "clear", "--older-than", "soon"], "invalid duration 'soon'"),
    ]:
        assert run([*argv, "--home", str(home)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err and "Traceback" not in err

    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x", encoding="utf-8")
    for argv in (
        ["runs", "--home", str(not_a_folder)],
        ["--home", str(not_a_folder / "sub"), "--no-llm", "what is WAL?"],
    ):
        assert run(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("sleuth: error: ") and err.count("\n") == 1


def test_a_read_only_home_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o500)
    if os.access(home, os.W_OK):  # root: chmod cannot lock it out, so the check is told
        real = os.access
        monkeypatch.setattr(
            os,
            "access",
            lambda path, mode, **kw: (
                False if Path(path) == home and mode & os.W_OK else real(path, mode, **kw)
            ),
        )
    try:
        assert run(["--home", str(home), "--no-llm", "what is WAL?"]) == 2
        err = capsys.readouterr().err
        assert run(["runs", "--home", str(home)]) == 0  # listing only reads
    finally:
        home.chmod(0o700)
    assert capsys.readouterr().out == "no runs yet\n"
    assert err.count("sleuth: error: cannot write to sleuth home") == 1


def test_show_of_an_unfinished_run_says_how_to_finish_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    with Store(home) as store:
        run_id = store.create_run("what is WAL?", {})
        store.finish_run(run_id, "interrupted")
    assert run(["show", run_id, "--home", str(home)]) == 1
    assert f"'sleuth resume {run_id}' finishes it" in capsys.readouterr().err


def test_stored_report_round_trips(web: OfflineWeb, tmp_path: Path) -> None:
    """What ``show`` prints is the report the run returned, field for field."""
    home = tmp_path / "home"
    report = sleuth.research_sync(
        web.topics[3].question, **web_options(web, home, no_llm=True, depth=1)
    )
    with Store(home) as store:
        info = store.get_run(report.run_id or "")
        stages = [rec.stage for rec in store.stages(info.id)]
    assert Report.model_validate(info.report) == report
    assert info.options["depth"] == 1 and "home" not in info.options
    assert stages[:2] == ["plan", "hits"] and "ranking" in stages and "fetched" in stages
    assert stages.index("ranking") < stages.index("fetched") < stages.index("sources")
