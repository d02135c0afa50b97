"""``sleuth batch`` on the benchmark world: ``python -m bench.batch`` (or ``python -m bench
--only batch``).

What it measures (issue 25's targets), each with the CLI in a fresh subprocess against
the latency world (:mod:`bench.world`, full latency, depth 2, 5 sources, store on in a
fresh home):

* **speed-up**: ``sleuth batch --jobs 32`` over N questions of a split (default 200 of
  the tune split: see :func:`batch_questions`), against N
  sequential ``sleuth`` runs, one process each. The sequential time is extrapolated from
  a sample (``--sample`` questions evenly spaced through the list, run one after the
  other sharing one home like a shell loop would): N × their mean wall. No model, then
  the scripted model (``--llm-questions``, ``--llm-sample``: model runs are slow).
* **memory**: the batch's peak RSS at 50, 100 and 200 questions: the main process's own
  high-water mark (VmHWM, exact) and the largest sum of the PSS of it and its children
  (the extraction workers), sampled every 0.2 s.
* **manners**: duplicate page fetches across the batch (same URL twice in the world's
  log; target 0) and the smallest gap between two request starts to one host.
* **Ray** (with ``--ray``, needs the ``ray`` extra): the same questions on a local Ray
  with 2 workers; the number of questions whose sources equal the in-process batch's.
* **kill -9**: a batch killed once a random number of questions are in results.jsonl,
  then rerun: every question exactly once, all done, no torn line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.batch_log import manners, tree_pss_kib  # noqa: E402
from bench.client import WorldProcess, hotpot_split, world  # noqa: E402
from bench.footprint import HWM_WRAPPER  # noqa: E402  (the child reports its own VmHWM)
from bench.hosts import HOST_MODES  # noqa: E402
from bench.parts import Context, Figures  # noqa: E402
from bench.splits import SPLITS, TestSplitRefused, chosen  # noqa: E402
from bench.topics import split_questions  # noqa: E402
from bench.world import MODEL, data_dir  # noqa: E402


def batch_questions(n: int, split: str = "tune") -> list[str]:
    """``n`` questions of ``split``: its timing questions (:mod:`bench.topics`), its
    HotpotQA questions, then one question on the subject of each paragraph of those
    questions' contexts ("What is known about Demon Dice?"), in question order."""
    topics = [q for _, q in split_questions(split)]
    hotpot = hotpot_split(split)
    titles = dict.fromkeys(title for q in hotpot for title, _ in q["context"])
    subjects = [f"What is known about {title}?" for title in titles]
    return (topics + [q["question"] for q in hotpot] + subjects)[:n]


def run_args(w: WorldProcess, llm: bool, home: Path) -> list[str]:
    args = [
        "--search",
        "searxng",
        "--searxng-url",
        w.base_url,
        "--allow-private-urls",
        "--depth",
        "2",
        "--max-sources",
        "5",
        "--home",
        str(home),
    ]
    if llm:
        return [*args, "--base-url", w.llm_url, "--model", MODEL, "--context-window", "32768"]
    return [*args, "--no-llm"]


@dataclass
class Batch:
    questions: int
    jobs: int
    wall: float
    code: int
    hwm_mb: float
    tree_mb: float
    cpu_s: float
    lines: list[dict[str, Any]] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)


def run_batch(
    w: WorldProcess, questions: Sequence[str], jobs: int, llm: bool, extra: Sequence[str] = ()
) -> Batch:
    """One ``sleuth batch`` in a fresh process and a fresh home; the world's log after."""
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        qfile, out = Path(tmp) / "q.txt", Path(tmp) / "out"
        qfile.write_text("\n".join(questions) + "\n", "utf-8")
        hwm = Path(tmp) / "hwm"
        w.log()
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                HWM_WRAPPER,
                str(hwm),
                "batch",
                str(qfile),
                "-o",
                str(out),
                "--jobs",
                str(jobs),
                "--quiet",
                *run_args(w, llm, Path(tmp) / "home"),
                *extra,
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
        )
        peak = 0
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stop.wait(0.2):
                peak = max(peak, tree_pss_kib(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, err = proc.communicate()
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (used.ru_utime + used.ru_stime)
        stop.set()
        sampler.join()
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"sleuth batch failed ({proc.returncode}): {err[-800:]}")
        text = (out / "results.jsonl").read_text("utf-8")
        lines = [json.loads(line) for line in text.splitlines()]
        hwm_kib = int(hwm.read_text().split()[1]) if hwm.exists() else 0
        return Batch(
            len(questions),
            jobs,
            wall,
            proc.returncode,
            hwm_kib / 1024,
            peak / 1024,
            cpu,
            lines,
            w.log(),
        )


def sequential(w: WorldProcess, questions: Sequence[str], sample: int, llm: bool) -> list[float]:
    """Walls of ``sample`` questions spread through ``questions``, each a fresh ``sleuth``
    process, one after the other, sharing one home (as a shell loop would)."""
    step = max(1, len(questions) // sample)
    chosen = list(questions[::step])[:sample]
    walls = []
    with tempfile.TemporaryDirectory(prefix="bench-seq-") as tmp:
        for question in chosen:
            start = time.monotonic()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "sleuth",
                    question,
                    "--quiet",
                    *run_args(w, llm, Path(tmp) / "home"),
                ],
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            walls.append(time.monotonic() - start)
            print(
                f"  sequential {'LLM' if llm else 'no-LLM'}: {walls[-1]:.1f} s",
                file=sys.stderr,
                flush=True,
            )
    return walls


def sources(lines: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {
        line["id"]: sorted(s["url"] for s in line["report"]["sources"])
        for line in lines
        if line["status"] == "done"
    }


def _say_differences(label: str, first: Batch, other: Batch) -> None:
    """On stderr: each question whose sources differ, what each side cited and why the
    other side's pages were not used (the failures its report records), to trace them."""
    mine, theirs = sources(first.lines), sources(other.lines)
    why = {
        line["id"]: line["report"].get("failures", [])
        for line in other.lines
        if line["status"] == "done"
    }
    for key, urls in mine.items():
        if theirs.get(key) == urls:
            continue
        print(
            f"{label}: {key}: only first {sorted(set(urls) - set(theirs.get(key, [])))}; "
            f"only {label} {sorted(set(theirs.get(key, [])) - set(urls))}",
            file=sys.stderr,
        )
        for failure in why.get(key, []):
            print(f"    {label} failure: {json.dumps(failure)[:300]}", file=sys.stderr)


def kill_and_rerun(
    w: WorldProcess, questions: Sequence[str], jobs: int, seed: int
) -> dict[str, Any]:
    """Kill -9 a batch once a random number of its questions are recorded; rerun it."""
    target = random.Random(seed).randint(1, max(1, len(questions) // 2))
    with tempfile.TemporaryDirectory(prefix="bench-kill-") as tmp:
        qfile, out = Path(tmp) / "q.txt", Path(tmp) / "out"
        qfile.write_text("\n".join(questions) + "\n", "utf-8")
        args = [
            sys.executable,
            "-m",
            "sleuth",
            "batch",
            str(qfile),
            "-o",
            str(out),
            "--jobs",
            str(jobs),
            "--quiet",
            *run_args(w, False, Path(tmp) / "home"),
        ]
        proc = subprocess.Popen(
            args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        results = out / "results.jsonl"
        while proc.poll() is None:
            if results.exists() and results.read_bytes().count(b"\n") >= target:
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = results.read_bytes()
        code = subprocess.run(
            args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        ).returncode
        text = results.read_text("utf-8")
        ids = Counter(json.loads(line)["id"] for line in text.splitlines())
        statuses = Counter(json.loads(line)["status"] for line in text.splitlines())
    return {
        "killed_after": before.count(b"\n"),
        "torn_tail": not before.endswith(b"\n") and bool(before),
        "rerun_exit": code,
        "questions": len(questions),
        "recorded": len(ids),
        "twice": sum(1 for n in ids.values() if n > 1),
        "done": statuses["done"],
    }


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.batch",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument(
        "--split",
        choices=SPLITS,
        default="tune",
        help="whose questions (test runs only through python -m bench --final)",
    )
    parser.add_argument("--hosts", choices=HOST_MODES, default="site", help="bench.world --hosts")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=32)
    parser.add_argument(
        "--sample",
        type=int,
        default=8,
        help="sequential no-LLM runs timed (evenly spaced questions)",
    )
    parser.add_argument("--llm-questions", type=int, default=64)
    parser.add_argument("--llm-sample", type=int, default=3)
    parser.add_argument(
        "--memory", default="50,100,200", help="batch sizes whose peak RSS is measured"
    )
    parser.add_argument("--ray", action="store_true", help="also the Ray comparison")
    parser.add_argument(
        "--again",
        action="store_true",
        help="a second in-process batch: how many questions get the same "
        "sources twice without Ray (what timing alone changes)",
    )
    parser.add_argument(
        "--llm-concurrency",
        type=int,
        default=None,
        help="--llm-concurrency for the batch with a model (default: sleuth's, 8)",
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=("llm", "memory", "kill", "sequential"),
        help="leave a measure out (sequential: the baselines of both speed-ups)",
    )
    return parser.parse_args(argv)


def _median_p90(lines: list[dict[str, Any]]) -> str:
    """Median and 90th percentile of the questions' own wall times (``elapsed_s``)."""
    walls = sorted(float(line.get("elapsed_s") or 0.0) for line in lines)
    if not walls:
        return "-"
    return f"{statistics.median(walls):.1f} / {walls[int(0.9 * (len(walls) - 1))]:.1f} s"


def _main_rows(w: WorldProcess, qs: list[str], run: Batch, args: argparse.Namespace) -> list[str]:
    """The no-model batch: wall, manners, memory, and the sequential baseline."""
    m = manners(run.log)
    done = sum(1 for line in run.lines if line["status"] == "done")
    rows = [
        f"| batch wall, {len(qs)} questions, no model | {run.wall:.0f} s "
        f"({done} done; {run.cpu_s:.0f} CPU-s) | |",
        f"| per question, in the batch: median / p90 wall | {_median_p90(run.lines)} | |",
        f"| page fetches / duplicates | {m.fetches} / {m.duplicates} | 0 duplicates |",
        f"| starts on one host closer than 0.2 s (--host-delay), as the world saw them | "
        f"{m.close} of {m.pairs}; smallest "
        f"{'–' if m.smallest is None else f'{m.smallest:.3f} s'} | 0 |",
        f"| the host asked most | {m.busiest[0]}: {m.busiest[1]} requests | |",
        f"| peak memory (main RSS / PSS with extraction workers) | "
        f"{run.hwm_mb:.0f} / {run.tree_mb:.0f} MB | ≤ 400 MB |",
    ]
    if "sequential" not in args.skip:
        walls = sequential(w, qs, args.sample, False)
        mean = statistics.fmean(walls)
        rows.append(
            f"| sequential, no model: {len(walls)} runs, mean {mean:.1f} s "
            f"(range {min(walls):.1f}-{max(walls):.1f}) × {len(qs)} | "
            f"{mean * len(qs):.0f} s | |"
        )
        rows.append(f"| speed-up, no model | {mean * len(qs) / run.wall:.1f}× | ≥ 15× |")
    return rows


def _llm_rows(w: WorldProcess, qs: list[str], args: argparse.Namespace) -> list[str]:
    """The batch with the scripted model against its sequential baseline."""
    lq = qs[: args.llm_questions]
    print("batch, scripted model...", file=sys.stderr, flush=True)
    more = [] if args.llm_concurrency is None else ["--llm-concurrency", str(args.llm_concurrency)]
    run = run_batch(w, lq, args.jobs, True, more)
    limit = f", --llm-concurrency {args.llm_concurrency}" if more else ""
    rows = [f"| batch wall, {len(lq)} questions, scripted model{limit} | {run.wall:.0f} s | |"]
    if "sequential" in args.skip:
        return rows
    walls = sequential(w, lq, args.llm_sample, True)
    extrapolated = statistics.fmean(walls) * len(lq)
    return [
        *rows,
        f"| sequential, scripted model: {len(walls)} runs, mean "
        f"{statistics.fmean(walls):.1f} s (range {min(walls):.1f}-{max(walls):.1f}) "
        f"× {len(lq)} | {extrapolated:.0f} s | |",
        f"| speed-up, scripted model | {extrapolated / run.wall:.1f}× | ≥ 10× |",
    ]


def _same_sources_rows(
    w: WorldProcess, qs: list[str], first: Batch, args: argparse.Namespace
) -> list[str]:
    """The batch again in-process (--again) and on a local Ray (--ray): same sources?"""
    rows = []
    mine = sources(first.lines)
    if args.again:
        print("batch, no model, again...", file=sys.stderr, flush=True)
        again = run_batch(w, qs, args.jobs, False)
        _say_differences("again", first, again)
        theirs = sources(again.lines)
        same = sum(1 for k, v in mine.items() if theirs.get(k) == v)
        rows.append(
            f"| in-process batch run twice: questions with the same sources | "
            f"{same} / {len(mine)} | |"
        )
    if args.ray:
        print("batch on local Ray, 2 workers...", file=sys.stderr, flush=True)
        ray_run = run_batch(w, qs, args.jobs // 2, False, ["--ray", "--ray-workers", "2"])
        _say_differences("ray", first, ray_run)
        theirs = sources(ray_run.lines)
        same = sum(1 for k, v in mine.items() if theirs.get(k) == v)
        rows.append(f"| Ray, 2 workers × {args.jobs // 2} jobs: wall | {ray_run.wall:.0f} s | |")
        rows.append(
            f"| Ray: questions with the in-process batch's sources | {same} / {len(mine)} | all |"
        )
    return rows


def _memory_rows(
    w: WorldProcess, qs: list[str], first: Batch, args: argparse.Namespace
) -> list[str]:
    rows = []
    for n in (int(x) for x in args.memory.split(",") if x):
        if n == len(qs):
            b = first
        else:
            print(f"batch of {n} (memory)...", file=sys.stderr, flush=True)
            b = run_batch(w, qs[:n], args.jobs, False)
        rows.append(
            f"| peak memory at {n} questions (main RSS / PSS with workers) | "
            f"{b.hwm_mb:.0f} / {b.tree_mb:.0f} MB | ≤ 400 MB, flat |"
        )
    return rows


def measure(args: argparse.Namespace, final: bool = False) -> str:
    """Every measure ``args`` asks for, as a Markdown table (the test split only when
    ``final``)."""
    (split,) = chosen([args.split], final)
    qs = batch_questions(args.questions, split)
    head = (
        f"({len(qs)} questions of the {split} split, --jobs {args.jobs}, seed {args.seed}, "
        f"{args.hosts} hosts, load {os.getloadavg()[0]:.1f} at start)"
    )
    rows = ["| measure | value | target |", "|---|---:|---:|"]
    with world(args.seed, args=["--hosts", args.hosts]) as w:
        print("batch, no model...", file=sys.stderr, flush=True)
        first = run_batch(w, qs, args.jobs, False)
        rows += _main_rows(w, qs, first, args)
        if "llm" not in args.skip:
            rows += _llm_rows(w, qs, args)
        rows += _same_sources_rows(w, qs, first, args)
        if "memory" not in args.skip:
            rows += _memory_rows(w, qs, first, args)
        if "kill" not in args.skip:
            print("kill -9 and rerun...", file=sys.stderr, flush=True)
            k = kill_and_rerun(w, qs[:60], args.jobs, args.seed)
            rows.append(
                f"| kill -9 after {k['killed_after']} lines (torn tail: "
                f"{k['torn_tail']}), rerun exit {k['rerun_exit']} | "
                f"{k['recorded']}/{k['questions']} recorded, {k['twice']} twice, "
                f"{k['done']} done | each once |"
            )
    rows.append(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    return head + "\n\n" + "\n".join(rows)


def part(ctx: Context) -> Figures:
    """The batch part on ``ctx.split``'s questions (its own worlds; no Ray)."""
    argv = ["--seed", str(ctx.seed), "--split", ctx.split, "--hosts", ctx.hosts]
    if ctx.limit:
        argv += ["--questions", str(ctx.limit), "--llm-questions", str(ctx.limit)]
        argv += ["--memory", str(ctx.limit), "--sample", "2", "--llm-sample", "1"]
    print("sleuth batch (its own worlds)...", file=sys.stderr)
    text = measure(_parse(argv), ctx.final)
    return Figures(f"## Batch {text}\n", text, {"argv": argv})


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    try:
        chosen([args.split])
    except TestSplitRefused as refused:
        print(f"python -m bench.batch: {refused}", file=sys.stderr)
        return 2
    if not (data_dir() / "hotpotqa").is_dir():
        print(f"no benchmark data at {data_dir()}; nothing to do")
        return 0
    print(f"## Batch {measure(args)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
