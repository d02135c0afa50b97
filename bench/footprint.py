"""The ``footprint`` part of ``python -m bench``: ``sleuth --help`` start and peak RSS.

``sleuth --help`` start (median of 5 fresh processes after one warm-up) and the peak
RSS (the ``VmHWM`` a fresh ``sleuth`` CLI process reads of itself at exit: ``wait4``'s
``ru_maxrss`` would carry over the bench process's own size across ``execve``) of a
depth-2, 5-source run against the world, both pipelines. It measures the program, not a
split: the question is always the corpus topic it has been measured on (stadia).
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.client import WorldProcess
from bench.parts import Context, Figures
from bench.world import REPO

__all__ = [
    "HWM_WRAPPER",
    "Measured",
    "footprint_table",
    "help_time",
    "part",
    "peak_rss",
    "run_measured",
]


def _sleuth_command() -> list[str]:
    script = Path(sys.executable).with_name("sleuth")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sleuth"]


def help_time(repeat: int = 5) -> float:
    """Median seconds of ``sleuth --help`` in a fresh process (after one warm-up)."""
    times = []
    for n in range(repeat + 1):
        start = time.perf_counter()
        subprocess.run(
            [*_sleuth_command(), "--help"], check=True, stdout=subprocess.DEVNULL, cwd=REPO
        )
        if n:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


# ``ru_maxrss`` of a child survives execve on Linux: a child of this (large) process would
# report at least our own size. VmHWM belongs to the new address space, so the child reads
# its own high-water mark at exit.
HWM_WRAPPER = """
import atexit, sys
out = sys.argv.pop(1)
def hwm():
    with open('/proc/self/status') as status, open(out, 'w') as sink:
        sink.write(next(line for line in status if line.startswith('VmHWM')))
atexit.register(hwm)
sys.argv[0] = 'sleuth'
from sleuth.cli import main
main()
"""


@dataclass
class Measured:
    """One CLI run in a fresh process: exit code (negative: killed), wall s, peak RSS MB
    (None when it could not be read), stdout, stderr."""

    code: int
    seconds: float
    peak_mb: float | None
    stdout: str
    stderr: str


def _hwm_mb(pid: int) -> float | None:
    """The VmHWM of a running process, MB (None once it has exited)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            line = next((x for x in status if x.startswith("VmHWM")), None)
    except OSError:
        return None
    return int(line.split()[1]) / 1024 if line else None


def run_measured(
    args: list[str],
    limit_s: float,
    *,
    memory_gb: float | None = None,
    feed: bytes | None = None,
    close_stdin: bool = True,
    stdin: int | None = None,
) -> Measured:
    """``sleuth ARGS`` in a fresh process, killed after ``limit_s``.

    ``memory_gb`` caps what the child may map (an endless reply read whole then fails as
    MemoryError instead of filling the machine). With ``feed``, stdin is a pipe that gets
    ``feed`` and is closed only if ``close_stdin``; else ``stdin`` (None: inherited). The
    peak RSS is the child's own VmHWM at exit, or the last reading of its
    ``/proc/PID/status`` when it was killed.
    """

    def cap_memory() -> None:
        if memory_gb is not None:
            size = int(memory_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (size, size))

    with (
        tempfile.NamedTemporaryFile("r", suffix=".hwm") as sink,
        tempfile.TemporaryFile("w+b") as out,
        tempfile.TemporaryFile("w+b") as err,
    ):
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", HWM_WRAPPER, sink.name, *args],
            cwd=REPO,
            stdin=subprocess.PIPE if feed is not None else stdin,
            stdout=out,
            stderr=err,
            preexec_fn=cap_memory,
        )
        polled: list[float] = []
        done = threading.Event()

        def poll() -> None:
            while not done.wait(0.1):  # sampling a high-water mark, not timing anything
                mb = _hwm_mb(proc.pid)
                if mb is not None:
                    polled.append(mb)

        sampler = threading.Thread(target=poll, daemon=True)
        sampler.start()
        if feed is not None:
            assert proc.stdin is not None
            proc.stdin.write(feed)
            proc.stdin.flush()
            if close_stdin:
                proc.stdin.close()
        try:
            code = proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        finally:
            if proc.stdin is not None and not proc.stdin.closed:
                proc.stdin.close()
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
        written = sink.read().split()
        peak = int(written[1]) / 1024 if len(written) > 1 else max(polled, default=None)
        out.seek(0)
        err.seek(0)
        text = [s.read().decode("utf-8", "replace") for s in (out, err)]
        return Measured(code, seconds, peak, text[0], text[1])


def peak_rss(w: WorldProcess, question: str, llm: bool) -> tuple[float, float]:
    """Peak RSS (MB, the child's own VmHWM) and wall (s) of one CLI run in a fresh process."""
    with tempfile.NamedTemporaryFile("r", suffix=".hwm") as sink:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", HWM_WRAPPER, sink.name, question, *w.cli_args(llm)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"the sleuth CLI run failed with exit code {proc.returncode}")
        kib = int(sink.read().split()[1])  # "VmHWM:   123456 kB"
    return kib / 1024, wall


def footprint_table(w: WorldProcess) -> tuple[str, dict[str, float]]:
    """The Markdown table and its figures."""
    from sleuth.testing._corpus import Corpus

    # The corpus topic the footprint has always been measured on, to compare with older figures.
    question = next(
        t.question
        for t in Corpus.load(REPO / "tests" / "data" / "corpus").topics
        if t.id == "stadia"
    )
    help_s = help_time()
    figures = {"help_s": help_s}
    lines = [
        "| measure | value | target |",
        "|---|---:|---:|",
        f"| `sleuth --help` start (median of 5) | {help_s:.3f} s | ≤ 0.3 s |",
    ]
    for llm in (False, True):
        rss, wall = peak_rss(w, question, llm)
        kind = "LLM" if llm else "no-LLM"
        figures[f"rss_mb_{kind}"] = rss
        lines.append(
            f"| peak RSS, depth 2, 5 sources, {kind} (CLI, {wall:.1f} s) | "
            f"{rss:.0f} MB | ≤ 150 MB |"
        )
    return "\n".join(lines), figures


def part(ctx: Context) -> Figures:
    """The footprint part (no split: the program's start and memory)."""
    assert ctx.world is not None
    print("start time and memory...", file=sys.stderr)
    table, figures = footprint_table(ctx.world)
    head = f"## Start time and memory (no split: the program; seed {ctx.seed})"
    return Figures(f"{head}\n\n{table}\n", figures)
