"""``sleuth agent`` on the command line, and resuming a search whose process was killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_agent import MODEL, Script, round_starts

from sleuth.cli import run
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("SLEUTH_", "OPENAI_")):
            monkeypatch.delenv(name)


@pytest.fixture
def llm() -> Any:
    with ScriptedLLM.serve(models=[MODEL, "slow-model", "fast-model"]) as server:
        yield server


def cli_args(web: OfflineWeb, llm: ScriptedLLM, home: Path, *extra: str) -> list[str]:
    return [
        "agent",
        "--home",
        str(home),
        "--base-url",
        llm.base_url,
        "--model",
        MODEL,
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        "5",
        *extra,
    ]


def test_cli_prints_status_result_and_dashboard(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Script(llm).calls(
        ("update_dashboard", {"content": "status: in progress\nFound: FACT-1"})
    ).calls(("all_finished", {"result": "The answer is FACT-1."}))
    code = run(cli_args(web, llm, tmp_path / "home", "--max-rounds", "3", "Titan?"))
    out, err = capsys.readouterr()
    assert code == 0
    assert out.startswith("# Agent search: Titan?")
    assert "**Status:** finished — the agent called all_finished in round 1" in out
    assert "## Result\n\nThe answer is FACT-1." in out and "Found: FACT-1" in out
    assert "Round 1 of at most 3" in llm.requests[0].last_user
    for line in ("round 1/3", "round 1 · update_dashboard", "finished: the agent called"):
        assert line in err


def test_cli_json_and_stopped_exit_code(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Script(llm).calls(("search", {"query": "titan"})).say("next")
    out_file = tmp_path / "result.json"
    code = run(
        cli_args(
            web,
            llm,
            tmp_path / "home",
            "--max-rounds",
            "1",
            "--format",
            "json",
            "-o",
            str(out_file),
            "-q",
            "Titan?",
        )
    )
    assert code == 1  # stopped by a limit: the dashboard is still written
    data = json.loads(out_file.read_text(encoding="utf-8"))
    assert data["status"] == "max_rounds" and data["rounds"] == 1 and data["tool_calls"] == 1
    assert data["tokens"] == data["prompt_tokens"] + data["completion_tokens"]
    assert Path(data["workspace"], "dashboard.md").is_file()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent"], "give a GOAL"),
        (["agent", "--resume", "/nonexistent/ws"], "cannot resume"),
        (["agent", "--resume", "/x", "--session", "s"], "--session names a new search"),
        (["agent", "--resume", "/x", "a goal"], "do not give a GOAL"),
        (["agent", "--max-rounds", "0", "q"], "invalid value for --max-rounds"),
        (["agent", "--round-minutes", "soon", "q"], "invalid value for --round-minutes"),
        (["agent", "--agent-protocol", "xml", "q"], "invalid value for --agent-protocol"),
        (["agent", "--no-llm", "q"], "agent mode needs a model"),
    ],
)
def test_cli_bad_input_exits_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run([*args, "--home", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sleuth: error: ") and message in err and err.count("\n") == 1


def _wait_for_round_end(home: Path, proc: subprocess.Popen[bytes], round_no: int) -> Path:
    """The workspace, once its history records the end of round ``round_no``."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        for path in (home / "workspaces" / "default" / "web_search").glob("*/history.jsonl"):
            for line in path.read_text(encoding="utf-8").splitlines():
                if '"round_end"' in line and json.loads(line)["round"] == round_no:
                    return path.parent
        time.sleep(0.02)  # polling the file, not timing anything
    raise AssertionError("round 1 never ended")


@pytest.mark.slow
def test_resume_after_the_process_is_killed_between_rounds(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    # The first process: round 1 records a finding and ends; round 2's model call hangs.
    first = Script(llm, model="slow-model")
    first.calls(("search", {"query": "europa plumes"})).calls(
        ("update_dashboard", {"content": "status: in progress\nFINDING-KILL-1"})
    ).say("end of round 1")
    llm.add("never answered in time", model="slow-model", delay=60, times=None)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEUTH_", "OPENAI_"))}
    args = cli_args(web, llm, home, "--max-rounds", "4", "-q", "What is on Europa?")
    args[args.index(MODEL)] = "slow-model"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        workspace = _wait_for_round_end(home, proc, 1)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    # The second process resumes from the dashboard and the history (settings recorded,
    # the model named again to pick the second script).
    Script(llm, model="fast-model").calls(("all_finished", {"result": "Europa has plumes."}))
    code = run(
        ["agent", "--resume", str(workspace), "--model", "fast-model", "-q", "--format", "json"]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["status"] == "finished" and data["result"] == "Europa has plumes."
    assert data["workspace"] == str(workspace)
    resumed = [r for r in round_starts(llm) if r.model == "fast-model"]
    assert len(resumed) == 1
    # The round count continues, and round 1's finding reached the resumed round.
    assert "Round 2 of at most 4" in resumed[0].last_user
    assert "FINDING-KILL-1" in resumed[0].last_user
    assert data["rounds"] == 2 and data["tool_calls"] == 3 and data["queries"] == ["europa plumes"]
    records = [
        json.loads(line)
        for line in (workspace / "history.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [r["type"] for r in records].count("start") == 1
    assert "resume" in [r["type"] for r in records]
    assert data["tokens"] == sum(
        r.get("prompt_tokens", 0) + r.get("completion_tokens", 0)
        for r in records
        if r["type"] == "llm"
    )


def test_an_unreachable_model_server_ends_the_search_at_once_in_one_line(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Connection refused is not a 503: no retries with backoff, no second and third round;
    the search fails after one round, and says the server cannot be reached."""
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = [
        "agent",
        "--home",
        str(tmp_path / "home"),
        "--base-url",
        f"http://127.0.0.1:{port}/v1",
        "--model",
        MODEL,
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--format",
        "json",
        "What is WAL mode?",
    ]
    assert run(args) == 1
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["status"] == "failed" and data["rounds"] == 1
    assert f"cannot reach the LLM server at http://127.0.0.1:{port}/v1" in data["reason"]
    assert "retry" not in captured.err
