"""However sleuth ends (kill -9, SIGTERM), the extraction workers leave nothing to warn
about: no "leaked semaphore objects" from multiprocessing's resource tracker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from sleuth.store import Store
from sleuth.testing import OfflineWeb

WAIT_S = 60.0

pytestmark = pytest.mark.slow


def offline_args(web: OfflineWeb, home: Path) -> list[str]:
    return [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--no-llm",
        "--home",
        str(home),
    ]


def stderr_to_the_end(proc: subprocess.Popen[bytes]) -> str:
    """Everything written to the process's stderr, by it and by what outlives it (the
    resource tracker writes its warning as it exits, after its parent is gone)."""
    assert proc.stderr is not None
    return proc.stderr.read().decode("utf-8", "replace")


def test_kill_9_of_a_deep_run_leaves_no_leaked_semaphore_warning(
    web: OfflineWeb, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sleuth",
            "deep",
            *offline_args(web, home),
            "-q",
            web.topics[1].question,
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + WAIT_S
        fetched = False
        while not fetched and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            if (home / "sleuth.db").exists():
                with Store(home) as store:
                    runs = store.list_runs()
                    fetched = bool(runs and store.stages(runs[0].id, "fetched"))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert fetched, "the run ended before it had extracted a page"
    err = stderr_to_the_end(proc)
    assert "leaked semaphore" not in err and "Traceback" not in err, err


def test_sigterm_to_sleuth_serve_ends_it_cleanly(web: OfflineWeb, tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "serve", "--port", "0", *offline_args(web, home)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline().decode()
        assert "serving on http://" in first, first
        base = first.split("serving on ", 1)[1].split()[0].rstrip("/")
        with httpx.Client(base_url=base, timeout=WAIT_S) as client:
            made = client.post("/api/runs", json={"question": web.topics[0].question})
            assert made.status_code == 201, made.text
            events = made.json()["events"]
            with client.stream("GET", events) as stream:
                kinds = [
                    line.removeprefix("event: ")
                    for line in stream.iter_lines()
                    if line.startswith("event: ")
                ]
        assert "report" in kinds, kinds  # a research ran: the extraction workers started
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    err = stderr_to_the_end(proc)
    assert "leaked semaphore" not in err and "Traceback" not in err, err
    assert json.dumps(err).count("\\n") <= 2, err  # at most one line besides the URL
