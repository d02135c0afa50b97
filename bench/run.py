"""The whole benchmark suite: ``python -m bench`` (or ``python bench/run.py``).

Parts, each printed as a Markdown table (see bench/README.md for what every column means):

1. ``timing`` (:mod:`bench.timing`): depth-2, 5-source runs of the timing questions
   (:mod:`bench.topics`), no-LLM and LLM, against the benchmark world
   (:mod:`bench.world`) at real latencies: wall time against the run's critical path,
   model calls and tokens, searches, fetches (duplicate, wasted, over 500 KB); then the
   extraction time of every page they fetched, sleuth's against trafilatura's
   (:mod:`bench.pagetime`).
2. ``recall``: HotpotQA questions, both pipelines: the share of questions whose
   report cites every gold evidence page, at the world's full latencies by default
   (``--recall-scale``: the wait for the best-ranked page, 3 s, does not scale with
   them, so scaled runs flatter it) with several questions at once (``--recall-jobs``).
3. ``footprint``: ``sleuth --help`` start time and the peak RSS of a depth-2, 5-source
   run (LLM pipeline), each in a fresh subprocess.
4. ``extraction``: :mod:`bench.extraction` on a sample of the WCXB held-out split plus
   AEB by default (``--extraction full`` for all of it, ~2 min; ``none`` to skip).
5. ``deep`` (only with ``--only deep``): :mod:`bench.deep`, deep research against quick:
   HotpotQA all-gold recall without a model (tune and held-out splits, bridge and
   comparison apart), the scripted model's wall time against the deep run's critical
   path with duplicate fetches and tokens per cited source, and the peak RSS of a deep
   run reading 40 sources.
6. ``startup`` (:mod:`bench.startup`): process start to the first search (no model) or
   model call, with and without the store, in fresh ``sleuth`` processes against the
   world; and an empty question's refusal.
7. ``docs`` (:mod:`bench.docs_scale`): documents mode at ``--docs-files`` files (50,000):
   what every run pays to bring the index of an unchanged folder up to date.
8. ``relevance`` (only with ``--only relevance``): :mod:`bench.relevance`, in a world of
   its own: the share of cited sources that are on-topic, of relevant pages read that
   are cited, and HotpotQA all-gold recall, when each question has fewer relevant pages
   than sources wanted.
9. ``batch`` (only with ``--only batch``): :mod:`bench.batch`, ``sleuth batch`` against
   sequential runs, its memory, manners and resuming after a kill.

The critical path of a run is computed from what the world logged (server-side start
and end of every search, page and model call) and the sources the report cites; see
:func:`bench.timing.critical_path`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # python bench/run.py
    sys.path.insert(0, str(REPO))

from bench.client import WorldProcess, gold_shares, hotpot_questions, world  # noqa: E402
from bench.data import DataMismatch, verify  # noqa: E402
from bench.docs_scale import measure as measure_docs  # noqa: E402
from bench.docs_scale import table as docs_table  # noqa: E402
from bench.pagetime import table as pagetime_table  # noqa: E402
from bench.relevance import run_relevance  # noqa: E402
from bench.relevance import table as relevance_table  # noqa: E402
from bench.startup import measure as measure_startup  # noqa: E402
from bench.startup import table as startup_table  # noqa: E402
from bench.timing import page_times, parts_table, run_timing, timing_table  # noqa: E402
from bench.topics import TIMING_SETS, timing_questions  # noqa: E402
from bench.world import data_dir  # noqa: E402


# -- HotpotQA evidence recall ---------------------------------------------------------------
@dataclass
class Recall:
    pipeline: str
    questions: int
    all_gold: int
    gold_share: float
    wall: float


def run_recall(
    w: WorldProcess, n: int, jobs: int, scale: float, pipelines: Sequence[bool]
) -> list[Recall]:
    questions = hotpot_questions(n)
    w.scale(scale)
    out = []
    try:
        for llm in pipelines:
            shares, wall = gold_shares(w, questions, lambda llm=llm: w.options(llm), jobs)
            out.append(
                Recall(
                    "LLM" if llm else "no-LLM",
                    len(shares),
                    sum(1 for s in shares if s == 1.0),
                    statistics.fmean(shares) if shares else 0.0,
                    wall,
                )
            )
            print(
                f"  recall {out[-1].pipeline}: {out[-1].all_gold}/{out[-1].questions} "
                f"({wall:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
            w.log()
    finally:
        w.scale(1.0)
    return out


def recall_table(rows: list[Recall], scale: float, jobs: int) -> str:
    lines = [
        "| pipeline | questions | cite every gold page | evidence recall | "
        f"suite wall s (latency ×{scale:g}, {jobs} at once) |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.pipeline} | {r.questions} | {r.all_gold} "
            f"({r.all_gold / r.questions:.0%}) | {r.gold_share:.2f} | {r.wall:.0f} |"
        )
    return "\n".join(lines)


# -- start time and memory -------------------------------------------------------------------
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
    import tempfile

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


def footprint_table(w: WorldProcess) -> str:
    from sleuth.testing._corpus import Corpus

    # The corpus topic the footprint has always been measured on, to compare with older figures.
    question = next(
        t.question
        for t in Corpus.load(REPO / "tests" / "data" / "corpus").topics
        if t.id == "stadia"
    )
    help_s = help_time()
    lines = [
        "| measure | value | target |",
        "|---|---:|---:|",
        f"| `sleuth --help` start (median of 5) | {help_s:.3f} s | ≤ 0.3 s |",
    ]
    for llm in (False, True):
        rss, wall = peak_rss(w, question, llm)
        kind = "LLM" if llm else "no-LLM"
        lines.append(
            f"| peak RSS, depth 2, 5 sources, {kind} (CLI, {wall:.1f} s) | "
            f"{rss:.0f} MB | ≤ 150 MB |"
        )
    return "\n".join(lines)


# -- extraction -----------------------------------------------------------------------------
def run_extraction(mode: str, sample: int) -> str:
    args = [sys.executable, "-m", "bench.extraction"]
    if mode == "sample":
        args += ["--split", "heldout", "--sample", str(sample)]
    result = subprocess.run(args, cwd=REPO, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return f"(bench.extraction failed: {result.stderr.strip()[-500:]})"
    return result.stdout.strip()


# -- documents mode ---------------------------------------------------------------------------
def docs_part(files: int) -> dict[str, Any]:
    """Print the documents-mode table (:mod:`bench.docs_scale`: needs no data, no world)."""
    print(f"documents mode at {files} files...", file=sys.stderr)
    docs = measure_docs(files)
    print(f"## Documents mode, {files:,} files\n\n{docs_table(docs)}\n", flush=True)
    return vars(docs)


# -- deep research ----------------------------------------------------------------------------
#: What SECURITY.md says a deep run over the largest pages may hold (the CLI's own peak).
DEEP_BIG_TARGET = "≤ 450 MB"


def run_deep_part(w: WorldProcess, args: argparse.Namespace) -> dict[str, Any]:
    """The ``deep`` part (:mod:`bench.deep`): recall, timing, memory; prints its tables."""
    from bench import deep

    print("deep: HotpotQA recall without a model, quick then deep...", file=sys.stderr)
    recall = deep.run_deep_recall(w, args.deep_jobs, args.deep_scale, args.deep_questions)
    print(
        f"## Deep research: HotpotQA all-gold recall, no model (latency ×"
        f"{args.deep_scale:g}, {args.deep_jobs} at once)\n\n{deep.recall_table(recall)}\n",
        flush=True,
    )
    print("deep: timing with the scripted model...", file=sys.stderr)
    rows = deep.run_deep_timing(w, timing_questions("heavy")[: args.deep_timing])
    print(
        f"## Deep research: timing with the scripted model (full latency)\n\n"
        f"{deep.timing_table(rows)}\n\nDeep critical path, its parts (s):\n\n"
        f"{deep.parts_table(rows)}\n",
        flush=True,
    )
    print("deep: memory of a 40-source run...", file=sys.stderr)
    question = timing_questions("heavy")[0][1]
    rss, wall, read = deep.deep_rss(w, question)
    quick_rss, quick_wall = peak_rss(w, question, True)
    print("deep: memory of a run over 80 pages of 4.5 MB...", file=sys.stderr)
    big = deep.big_deep_rss()
    print(
        f"## Deep research: memory\n\n| measure | value | target |\n|---|---:|---:|\n"
        f"| peak RSS, deep, 40 sources wanted ({read} read), scripted model (CLI, "
        f"{wall:.1f} s) | {rss:.0f} MB | ≤ 250 MB |\n"
        f"| peak RSS, quick, 5 sources, same question and model (CLI, {quick_wall:.1f} s) "
        f"| {quick_rss:.0f} MB | |\n"
        f"| peak RSS, deep, {big.sources} sources wanted ({big.read} read) among 80 pages of "
        f"4.5 MB, scripted model (CLI, {big.wall:.1f} s, exit {big.exit_code}) "
        f"| {big.cli_mb:.0f} MB | {DEEP_BIG_TARGET} |\n"
        f"| the same run: most any extraction worker took | {big.worker_mb:.0f} MB | "
        f"≤ 440 MB (limit) |\n",
        flush=True,
    )
    return {
        "recall": [vars(r) for r in recall],
        "timing": [vars(r) for r in rows],
        "rss_mb": rss,
        "rss_sources": read,
        "quick_rss_mb": quick_rss,
        "big": vars(big),
    }


# -- main -----------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seed", type=int, default=8, help="the world's latency seed")
    parser.add_argument(
        "--kinds",
        default=None,
        help="the world's page sets (bench.world --kinds; default: all of "
        "them, the heavy world; hotpotqa,corpus is the light one)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=(
            "timing",
            "recall",
            "footprint",
            "extraction",
            "relevance",
            "deep",
            "startup",
            "docs",
            "batch",
        ),
        help="run only these parts (repeatable; relevance, deep and batch run "
        "only when named: ~1.5, ~15 and ~10 min; batch is also "
        "python -m bench.batch, with its own options)",
    )
    parser.add_argument("--pipeline", choices=("both", "llm", "no-llm"), default="both")
    parser.add_argument(
        "--timing-set",
        choices=tuple(TIMING_SETS),
        default="heavy",
        help="the timing questions (bench/topics.py): heavy (default), "
        "heldout (judge now and then, never tune on it), corpus (the "
        "three corpus topics of the figures before 2026-11-25's heavy "
        "world)",
    )
    parser.add_argument(
        "--page-repeat",
        type=int,
        default=2,
        help="times each fetched page is extracted for its timing (quickest "
        "kept); 0 skips the per-page extraction table",
    )
    parser.add_argument("--recall-questions", type=int, default=30)
    parser.add_argument("--recall-jobs", type=int, default=5)
    parser.add_argument("--recall-scale", type=float, default=1.0)
    parser.add_argument(
        "--extraction",
        choices=("sample", "full", "none"),
        default="sample",
        help="sample: WCXB held-out sample + AEB (~15 s); full: ~2 min",
    )
    parser.add_argument("--extraction-sample", type=int, default=150)
    parser.add_argument("--relevance-scale", type=float, default=0.25)
    parser.add_argument("--relevance-jobs", type=int, default=5)
    parser.add_argument(
        "--deep-scale",
        type=float,
        default=0.25,
        help="latency scale of the deep part's recall runs",
    )
    parser.add_argument("--deep-jobs", type=int, default=4)
    parser.add_argument(
        "--deep-questions",
        type=int,
        default=100,
        help="HotpotQA questions of the deep recall (50 tune + 50 held out)",
    )
    parser.add_argument(
        "--deep-timing",
        type=int,
        default=3,
        help="timing questions (heavy set) of the deep part's timing",
    )
    parser.add_argument(
        "--startup-repeat",
        type=int,
        default=7,
        help="fresh processes timed per start-up set-up (median reported)",
    )
    parser.add_argument(
        "--docs-files", type=int, default=50_000, help="files in the generated documents folder"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.only and set(args.only) == {"docs"}:
        docs_part(args.docs_files)
        return 0
    if not (data_dir() / "hotpotqa").is_dir():
        print(f"no benchmark data at {data_dir()} (see bench/README.md); nothing to do")
        return 0
    try:  # what the world serves (bench/world.py), as far as it is there
        verify(
            [
                name
                for name in ("hotpotqa", "aeb", "wcxb-dev", "readability", "postlight")
                if (data_dir() / name).is_dir()
            ]
        )
    except DataMismatch as mismatch:
        print(mismatch, file=sys.stderr)
        return 1
    parts = set(args.only or ("timing", "recall", "footprint", "startup", "docs", "extraction"))
    if args.extraction == "none":
        parts.discard("extraction")
    pipelines = {"both": (False, True), "llm": (True,), "no-llm": (False,)}[args.pipeline]
    began = time.monotonic()
    out: dict[str, Any] = {}
    with world(args.seed, args=["--kinds", args.kinds] if args.kinds else ()) as w:
        if "timing" in parts:
            print("timing runs (depth 2, 5 sources, real latencies)...", file=sys.stderr)
            rows = run_timing(w, pipelines, timing_questions(args.timing_set))
            out["timing"] = [vars(r) for r in rows]
            print(
                f"\n## Timing (depth 2, 5 sources; {args.timing_set} questions, seed "
                f"{args.seed})\n\n{timing_table(rows)}\n"
            )
            print(
                f"Critical path, the slowest chain's parts (s):\n\n{parts_table(rows)}\n",
                flush=True,
            )
            if args.page_repeat > 0:
                print("extraction time of the pages fetched...", file=sys.stderr)
                times = page_times(w, rows, args.page_repeat)
                out["page_times"] = [vars(t) for t in times]
                print(
                    "Extraction time per page fetched whole by the runs above (each page "
                    f"once, the quickest of {args.page_repeat}):\n\n{pagetime_table(times)}\n",
                    flush=True,
                )
        if "recall" in parts:
            print("HotpotQA recall...", file=sys.stderr)
            recall = run_recall(
                w, args.recall_questions, args.recall_jobs, args.recall_scale, pipelines
            )
            out["recall"] = [vars(r) for r in recall]
            print(
                f"## HotpotQA evidence recall\n\n"
                f"{recall_table(recall, args.recall_scale, args.recall_jobs)}\n",
                flush=True,
            )
        if "footprint" in parts:
            print("start time and memory...", file=sys.stderr)
            table = footprint_table(w)
            out["footprint"] = table
            print(f"## Start time and memory\n\n{table}\n", flush=True)
        if "deep" in parts:
            out["deep"] = run_deep_part(w, args)
        if "startup" in parts:
            print("start-up to the first request...", file=sys.stderr)
            starts = measure_startup(w, args.startup_repeat)
            out["startup"] = [{"label": r.label, "times": r.times} for r in starts]
            print(
                f"## Start-up (fresh process to the world's first request, median of "
                f"{args.startup_repeat})\n\n{startup_table(starts)}\n",
                flush=True,
            )
    if "docs" in parts:
        out["docs"] = docs_part(args.docs_files)
    if "relevance" in parts:
        print("relevance (its own world)...", file=sys.stderr)
        scores, _ = run_relevance(args.seed, args.relevance_scale, args.relevance_jobs, pipelines)
        out["relevance"] = [vars(s) for s in scores]
        print(
            f"## Relevance (latency ×{args.relevance_scale:g}, {args.relevance_jobs} at "
            f"once, 5 sources)\n\n{relevance_table(scores)}\n",
            flush=True,
        )
    if "batch" in parts:
        from bench.batch import main as batch_main

        print("sleuth batch (its own worlds)...", file=sys.stderr)
        batch_main(["--seed", str(args.seed)])
    if "extraction" in parts:
        which = (
            f"WCXB held-out sample of {args.extraction_sample} + AEB"
            if args.extraction == "sample"
            else "all"
        )
        print(f"extraction ({which})...", file=sys.stderr)
        table = run_extraction(args.extraction, args.extraction_sample)
        out["extraction"] = table
        print(f"## Extraction ({which})\n\n{table}\n", flush=True)
    total = time.monotonic() - began
    print(f"suite: {total:.0f} s")
    if args.json is not None:
        args.json.write_text(json.dumps({**out, "suite_s": total}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
