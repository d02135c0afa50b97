"""A ``sleuth`` command started in a subprocess and killed part-way, for the tests that
check a rerun finishes what a killed batch or eval left (SIGKILL: nothing is cleaned up)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: How long the command may take to write the lines waited for.
WAIT_S = 90.0


def kill_after_lines(args: list[str], results: Path, count: int, cwd: Path) -> None:
    """Run ``python -m sleuth *args`` in ``cwd`` until ``results`` holds ``count`` lines,
    then SIGKILL it; AssertionError if it ends first or takes over :data:`WAIT_S`."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for_lines(results, count, proc, args[0])
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()


def _wait_for_lines(path: Path, count: int, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else b""
            raise AssertionError(f"the {what} ended before {count} questions: {err!r}")
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for the {what}")
