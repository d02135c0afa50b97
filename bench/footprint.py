"""The ``footprint`` part of ``python -m bench``: ``sleuth --help`` start and peak RSS.

``sleuth --help`` start (median of 5 fresh processes after one warm-up) and the peak
RSS (the ``VmHWM`` a fresh ``sleuth`` CLI process reads of itself at exit: ``wait4``'s
``ru_maxrss`` would carry over the bench process's own size across ``execve``) of a
depth-2, 5-source run against the world, both pipelines. It measures the program, not a
split: the question is always the corpus topic it has been measured on (stadia).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.client import WorldProcess
from bench.parts import Context, Figures
from bench.world import REPO

__all__ = ["HWM_WRAPPER", "footprint_table", "help_time", "part", "peak_rss"]


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
