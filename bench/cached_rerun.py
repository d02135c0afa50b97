"""What a cached rerun costs: ``elapsed_s`` and CPU time of a research answered by the store.

Against the offline web (``tests/data/corpus``, no model), each of the first three
questions is researched ``--runs`` times (default 4) in a fresh home: the first run fills
the cache, the others are answered by it. Two ways:

* in one Python process, repeating ``sleuth.research_sync`` (the CPU time is the
  research's own);
* from the command line, a new ``sleuth`` process each time (the CPU time is the whole
  process's, its start-up and imports included).

    python -m bench.cached_rerun            # a Markdown table of the reruns (not the first)

The figures depend on the box: say its load with them (printed at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpus"


def _options(searxng_url: str, home: str) -> dict[str, object]:
    return {
        "search": "searxng",
        "searxng_url": searxng_url,
        "allow_private_urls": True,
        "timeout": 5,
        "no_llm": True,
        "home": home,
    }


def in_process(searxng_url: str, question: str, runs: int) -> list[tuple[float, float, int]]:
    """``(elapsed_s, cpu_s, cached_fetches)`` of each run after the first."""
    import sleuth

    options = _options(searxng_url, tempfile.mkdtemp(prefix="sleuth-rerun-"))
    rows = []
    for n in range(runs):
        cpu = time.process_time()
        report = sleuth.research_sync(question, **options)
        if n:
            rows.append(
                (report.stats.elapsed_s, time.process_time() - cpu, report.stats.cached_fetches)
            )
    return rows


def from_the_cli(searxng_url: str, question: str, runs: int) -> list[tuple[float, float, int]]:
    """``(elapsed_s, cpu_s of the whole process, cached_fetches)`` of each run after the first."""
    home = tempfile.mkdtemp(prefix="sleuth-rerun-")
    command = [sys.executable, "-m", "sleuth", "--format", "json", "-q", "--home", home]
    for name, value in _options(searxng_url, home).items():
        if name == "home":
            continue
        flag = "--" + name.replace("_", "-")
        command += [flag] if value is True else [flag, str(value)]
    rows = []
    for n in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([*command, question], capture_output=True, text=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        stats = json.loads(done.stdout)["stats"]
        if n:
            rows.append((stats["elapsed_s"], cpu, stats["cached_fetches"]))
    return rows


def _span(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="runs per question (the first fills)")
    args = parser.parse_args(argv)
    from sleuth.testing import OfflineWeb

    table = ["| how | `elapsed_s` | CPU time | pages from the cache |", "|---|---:|---:|---:|"]
    with OfflineWeb(CORPUS) as web:
        questions = [topic.question for topic in web.topics[:3]]
        for how, measure in (("in one process", in_process), ("a new process", from_the_cli)):
            rows = [row for q in questions for row in measure(web.searxng_url, q, args.runs)]
            elapsed, cpu, cached = zip(*rows, strict=True)
            table.append(
                f"| {how} | {_span(list(elapsed))} | {_span(list(cpu))} | "
                f"{min(cached)}–{max(cached)} |"
            )
    print("\n".join(table))
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
