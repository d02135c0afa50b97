"""The whole benchmark suite: ``python -m bench`` (or ``python bench/run.py``).

Parts, each printed as a Markdown table (see bench/README.md for what every column means):

1. ``timing``: depth-2, 5-source runs, no-LLM and LLM, against the benchmark world
   (:mod:`bench.world`) at real latencies: wall time against the run's critical path,
   model calls and tokens, searches, fetches (duplicate, wasted).
2. ``recall``: HotpotQA questions, both pipelines: the share of questions whose
   report cites every gold evidence page, at the world's full latencies by default
   (``--recall-scale``: the wait for the best-ranked page, 3 s, does not scale with
   them, so scaled runs flatter it) with several questions at once (``--recall-jobs``).
3. ``footprint``: ``sleuth --help`` start time and the peak RSS of a depth-2, 5-source
   run (LLM pipeline), each in a fresh subprocess.
4. ``extraction``: :mod:`bench.extraction` on a sample of the WCXB held-out split plus
   AEB by default (``--extraction full`` for all of it, ~2 min; ``none`` to skip).

The critical path of a run is computed from what the world logged (server-side start
and end of every search, page and model call) and the sources the report cites; see
:func:`critical_path`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # python bench/run.py
    sys.path.insert(0, str(REPO))

from bench.data import DataMismatch, verify  # noqa: E402
from bench.world import MODEL, data_dir  # noqa: E402

#: The corpus topics the timing runs research (real saved news articles).
TIMING_TOPICS = ("stadia", "moons", "trade-war")
RESULTS_PER_QUERY = 8  # sleuth's default: the hits of a search it looks at


# -- the world, in its own process ---------------------------------------------------------
class WorldProcess:
    """``python -m bench.world`` in a subprocess; stopped by closing its stdin."""

    def __init__(self, seed: int, scale: float = 1.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.world", "--seed", str(seed), "--scale", str(scale)],
            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the benchmark world did not start")
        info = json.loads(line)
        self.base_url: str = info["base_url"]
        self.llm_url: str = info["llm_url"]
        self.http = httpx.Client(base_url=self.base_url, trust_env=False, timeout=30)
        self.pages: list[dict[str, str]] = self.http.get("/_bench/pages").json()

    def log(self, clear: bool = True) -> list[dict[str, Any]]:
        """The world's request log (emptied by default)."""
        return list(self.http.get("/_bench/log", params={"clear": "1"} if clear else {}).json())

    def scale(self, value: float) -> None:
        self.http.post("/_bench/scale", params={"value": str(value)})

    def close(self) -> None:
        self.http.close()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def options(self, llm: bool, **extra: Any) -> dict[str, Any]:
        """research() keywords for a depth-2, 5-source run against this world."""
        opts: dict[str, Any] = {
            "search": "searxng", "searxng_url": self.base_url, "allow_private_urls": True,
            "no_store": True, "depth": 2, "max_sources": 5}
        if llm:
            opts.update(base_url=self.llm_url, model=MODEL, context_window=32768)
        else:
            opts["no_llm"] = True
        return {**opts, **extra}

    def cli_args(self, llm: bool) -> list[str]:
        args = ["--search", "searxng", "--searxng-url", self.base_url, "--allow-private-urls",
                "--no-store", "--depth", "2", "--max-sources", "5", "--format", "json"]
        if llm:
            return [*args, "--base-url", self.llm_url, "--model", MODEL,
                    "--context-window", "32768"]
        return [*args, "--no-llm"]


@contextmanager
def world(seed: int, scale: float = 1.0) -> Iterator[WorldProcess]:
    process = WorldProcess(seed, scale)
    try:
        yield process
    finally:
        process.close()


# -- what a report cites --------------------------------------------------------------------
def cited_ids(markdown: str) -> set[int]:
    """The source numbers cited as ``[n]`` in the report before its Sources section."""
    body = re.split(r"^## (?:Sources|来源)\b", markdown, maxsplit=1, flags=re.MULTILINE)[0]
    return {int(n) for n in re.findall(r"\[(\d+)\]", body)}


def cited_urls(report: Any) -> list[str]:
    ids = cited_ids(report.markdown)
    return [s.url for s in report.sources if s.id in ids]


# -- the critical path ----------------------------------------------------------------------
def _dur(entry: dict[str, Any]) -> float:
    return float(entry["end"]) - float(entry["start"])


@dataclass
class Path_:
    """A run's critical path and what it is made of (seconds)."""

    total: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)


def critical_path(log: list[dict[str, Any]], cited: Sequence[str]) -> Path_:
    """The shortest time in which this run's world could have produced this report.

    For every cited page *s*, the chain of requests it needed, each timed by the world
    (server side, request arrival to response end):

        plan call                                       (LLM pipeline; 0 without a model)
        + [slowest first-round search + refine call]    (only if *s* was found by a follow-up query)
        + search of the query that found *s*            (the quickest such chain if several did)
        + that query's select call                      (LLM pipeline: ranking its round's
                                                          hits, so after the slowest search
                                                          of the queries it ranks)
        + the fetch of *s*                              (the first complete request for it)
        + the summary of *s*                            (slowest chunk call + its merge calls)

    The critical path is the longest such chain plus the report call (and the slowest
    verify call, with ``--verify llm``). Client-side CPU (parsing, extraction, ranking)
    is not on it: it is what sleuth adds. A report that cites nothing has a path of
    plan + report calls only.
    """
    llm = [e for e in log if e["kind"] == "llm"]
    first = lambda stage: next((e for e in llm if e["stage"] == stage), None)  # noqa: E731
    plan, refine, report = first("plan"), first("refine"), first("report")
    plan_s = _dur(plan) if plan else 0.0
    searches: dict[str, dict[str, Any]] = {}
    for entry in log:
        if entry["kind"] == "search" and not entry.get("left"):
            searches.setdefault(entry["key"], entry)
    first_round = [e for e in searches.values()
                   if refine is None or e["start"] < refine["start"]]
    follow_wait = ((max((_dur(e) for e in first_round), default=0.0) + _dur(refine))
                   if refine else 0.0)
    # One select call ranks a round's queries (its key lists them, one per line), so it
    # waits for the slowest of their searches: query -> (that search, the select call).
    selects: dict[str, tuple[float, float]] = {}
    for e in llm:
        if e["stage"] == "select":
            queries = e["key"].splitlines()
            slowest = max((_dur(searches[q]) for q in queries if q in searches), default=0.0)
            selects.update({q: (slowest, _dur(e)) for q in queries})
    fetches: dict[str, float] = {}
    for entry in log:
        if entry["kind"] == "page" and not entry.get("left"):
            fetches.setdefault(entry["key"], _dur(entry))
    worst: tuple[float, dict[str, float]] = (0.0, {})
    for url in cited:
        options = []
        for query, entry in searches.items():
            if url not in entry.get("urls", [])[:RESULTS_PER_QUERY]:
                continue
            wait = follow_wait if refine is not None and entry["start"] >= refine["start"] else 0
            search, select = selects.get(query, (0.0, 0.0))
            search = max(search, _dur(entry))
            options.append((wait + search + select,
                            {"refine": wait, "search": search, "select": select}))
        found, parts = min(options, key=lambda o: o[0]) if options else (0.0, {})
        summaries = [_dur(e) for e in llm if e["stage"] == "summarize" and e["key"] == url]
        merges = [_dur(e) for e in llm if e["stage"] == "merge" and e["key"] == url]
        summary = max(summaries, default=0.0) + sum(merges)
        fetch = fetches.get(url, 0.0)
        chain = found + fetch + summary
        if chain >= worst[0]:
            worst = (chain, {**parts, "fetch": fetch, "summary": summary})
    verify = max((_dur(e) for e in llm if e["stage"] == "verify"), default=0.0)
    report_s = _dur(report) if report else 0.0
    parts = {"plan": plan_s, **worst[1], "report": report_s + verify}
    return Path_(plan_s + worst[0] + report_s + verify, parts)


# -- one timed run ---------------------------------------------------------------------------
@dataclass
class Row:
    """One run's measurements."""

    name: str
    pipeline: str
    wall: float
    crit: float
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    searches: int
    fetches: int
    duplicates: int
    wasted: int
    sources: int
    cited: int
    parts: dict[str, float]

    @property
    def ratio(self) -> float:
        return self.wall / self.crit if self.crit else float("nan")

    @property
    def tokens_per_cited(self) -> float:
        total = self.prompt_tokens + self.completion_tokens
        return total / self.cited if self.cited else float("nan")


def measure(name: str, pipeline: str, report: Any, wall: float,
            log: list[dict[str, Any]]) -> Row:
    cited = cited_urls(report)
    pages = [e for e in log if e["kind"] == "page"]
    urls = [e["key"] for e in pages]
    used = {s.url for s in report.sources}
    path = critical_path(log, cited)
    stats = report.stats
    return Row(name=name, pipeline=pipeline, wall=wall, crit=path.total,
               llm_calls=stats.llm_calls, prompt_tokens=stats.prompt_tokens,
               completion_tokens=stats.completion_tokens,
               searches=sum(1 for e in log if e["kind"] == "search"), fetches=len(urls),
               duplicates=len(urls) - len(set(urls)), wasted=len(set(urls) - used),
               sources=len(report.sources), cited=len(cited), parts=path.parts)


def timed_run(w: WorldProcess, question: str, llm: bool, name: str) -> Row:
    import sleuth

    w.log()
    start = time.monotonic()
    report = sleuth.research_sync(question, **w.options(llm))
    wall = time.monotonic() - start
    time.sleep(0.2)  # let the world log the responses that were cut off
    return measure(name, "LLM" if llm else "no-LLM", report, wall, w.log())


def _f(value: float, digits: int = 2) -> str:
    return "–" if value != value else f"{value:.{digits}f}"  # NaN → dash


def timing_table(rows: list[Row]) -> str:
    head = ("| run | pipeline | wall s | critical path s | wall / path | LLM calls | "
            "prompt tok | completion tok | tok / cited source | searches | fetches | "
            "duplicate | wasted | sources (cited) |")
    lines = [head, "|" + "---|" * 2 + "---:|" * 12]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.pipeline} | {_f(r.wall)} | {_f(r.crit)} | {_f(r.ratio)} | "
            f"{r.llm_calls} | {r.prompt_tokens} | {r.completion_tokens} | "
            f"{_f(r.tokens_per_cited, 0)} | {r.searches} | {r.fetches} | {r.duplicates} | "
            f"{r.wasted} | {r.sources} ({r.cited}) |")
    for pipeline in dict.fromkeys(r.pipeline for r in rows):
        group = [r for r in rows if r.pipeline == pipeline]
        wall, crit = sum(r.wall for r in group), sum(r.crit for r in group)
        tokens = sum(r.prompt_tokens + r.completion_tokens for r in group)
        cited = sum(r.cited for r in group)
        lines.append(
            f"| **all** | {pipeline} | {_f(wall)} | {_f(crit)} | **{_f(wall / crit)}** | "
            f"{sum(r.llm_calls for r in group)} | {sum(r.prompt_tokens for r in group)} | "
            f"{sum(r.completion_tokens for r in group)} | "
            f"{_f(tokens / cited if cited else float('nan'), 0)} | "
            f"{sum(r.searches for r in group)} | {sum(r.fetches for r in group)} | "
            f"{sum(r.duplicates for r in group)} | {sum(r.wasted for r in group)} | "
            f"{sum(r.sources for r in group)} ({cited}) |")
    return "\n".join(lines)


def parts_table(rows: list[Row]) -> str:
    keys = ["plan", "refine", "search", "select", "fetch", "summary", "report"]
    lines = ["| run | pipeline | " + " | ".join(keys) + " |", "|---|---|" + "---:|" * len(keys)]
    for r in rows:
        lines.append(f"| {r.name} | {r.pipeline} | "
                     + " | ".join(_f(r.parts.get(k, 0.0)) for k in keys) + " |")
    return "\n".join(lines)


def run_timing(w: WorldProcess, pipelines: Sequence[bool]) -> list[Row]:
    from sleuth.testing._corpus import Corpus

    topics = {t.id: t for t in Corpus.load(REPO / "tests" / "data" / "corpus").topics}
    rows = []
    for llm in pipelines:
        # One untimed run first, at a tenth of the latencies: the rows then compare runs,
        # not the one-time lazy imports of the first (the footprint part times a cold start).
        import sleuth

        w.scale(0.1)
        sleuth.research_sync(topics["firefox"].question, **w.options(llm))
        w.scale(1.0)
        w.log()
        for topic_id in TIMING_TOPICS:
            rows.append(timed_run(w, topics[topic_id].question, llm, topic_id))
            print(f"  {rows[-1].pipeline:6} {topic_id:10} wall {rows[-1].wall:6.2f} s, "
                  f"critical path {rows[-1].crit:6.2f} s", file=sys.stderr, flush=True)
    return rows


# -- HotpotQA evidence recall ---------------------------------------------------------------
@dataclass
class Recall:
    pipeline: str
    questions: int
    all_gold: int
    gold_share: float
    wall: float


def hotpot_questions(n: int) -> list[dict[str, Any]]:
    data = json.loads((data_dir() / "hotpotqa" / "hotpotqa_train.json").read_text("utf-8"))
    return list(data[:n])


def run_recall(w: WorldProcess, n: int, jobs: int, scale: float,
               pipelines: Sequence[bool]) -> list[Recall]:
    import sleuth

    by_title = {p["key"]: p["url"] for p in w.pages if p["kind"] == "hotpotqa"}
    questions = hotpot_questions(n)
    w.scale(scale)
    out = []
    try:
        for llm in pipelines:
            async def one(q: dict[str, Any], gate: asyncio.Semaphore, llm: bool) -> float:
                async with gate:
                    report = await sleuth.research(q["question"], **w.options(llm))
                gold = {by_title[t] for t, _ in q["supporting_facts"]}
                return len(gold & set(cited_urls(report))) / len(gold)

            async def every(llm: bool) -> list[float]:
                gate = asyncio.Semaphore(jobs)
                return list(await asyncio.gather(*(one(q, gate, llm) for q in questions)))

            start = time.monotonic()
            shares = asyncio.run(every(llm))
            wall = time.monotonic() - start
            out.append(Recall("LLM" if llm else "no-LLM", len(shares),
                              sum(1 for s in shares if s == 1.0),
                              statistics.fmean(shares) if shares else 0.0, wall))
            print(f"  recall {out[-1].pipeline}: {out[-1].all_gold}/{out[-1].questions} "
                  f"({wall:.0f} s)", file=sys.stderr, flush=True)
            w.log()
    finally:
        w.scale(1.0)
    return out


def recall_table(rows: list[Recall], scale: float, jobs: int) -> str:
    lines = ["| pipeline | questions | cite every gold page | evidence recall | "
             f"suite wall s (latency ×{scale:g}, {jobs} at once) |",
             "|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.pipeline} | {r.questions} | {r.all_gold} "
                     f"({r.all_gold / r.questions:.0%}) | {r.gold_share:.2f} | {r.wall:.0f} |")
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
        subprocess.run([*_sleuth_command(), "--help"], check=True, stdout=subprocess.DEVNULL,
                       cwd=REPO)
        if n:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


# ``ru_maxrss`` of a child survives execve on Linux: a child of this (large) process would
# report at least our own size. VmHWM belongs to the new address space, so the child reads
# its own high-water mark at exit.
_HWM_WRAPPER = """
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
        proc = subprocess.run([sys.executable, "-c", _HWM_WRAPPER, sink.name, question,
                               *w.cli_args(llm)], cwd=REPO, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=False)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"the sleuth CLI run failed with exit code {proc.returncode}")
        kib = int(sink.read().split()[1])  # "VmHWM:   123456 kB"
    return kib / 1024, wall


def footprint_table(w: WorldProcess) -> str:
    from sleuth.testing._corpus import Corpus

    question = next(t.question for t in Corpus.load(REPO / "tests" / "data" / "corpus").topics
                    if t.id == TIMING_TOPICS[0])
    help_s = help_time()
    lines = ["| measure | value | target |", "|---|---:|---:|",
             f"| `sleuth --help` start (median of 5) | {help_s:.3f} s | ≤ 0.3 s |"]
    for llm in (False, True):
        rss, wall = peak_rss(w, question, llm)
        kind = "LLM" if llm else "no-LLM"
        lines.append(f"| peak RSS, depth 2, 5 sources, {kind} (CLI, {wall:.1f} s) | "
                     f"{rss:.0f} MB | ≤ 150 MB |")
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


# -- main -----------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=8, help="the world's latency seed")
    parser.add_argument("--only", action="append",
                        choices=("timing", "recall", "footprint", "extraction"),
                        help="run only these parts (repeatable)")
    parser.add_argument("--pipeline", choices=("both", "llm", "no-llm"), default="both")
    parser.add_argument("--recall-questions", type=int, default=30)
    parser.add_argument("--recall-jobs", type=int, default=5)
    parser.add_argument("--recall-scale", type=float, default=1.0)
    parser.add_argument("--extraction", choices=("sample", "full", "none"), default="sample",
                        help="sample: WCXB held-out sample + AEB (~15 s); full: ~2 min")
    parser.add_argument("--extraction-sample", type=int, default=150)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not (data_dir() / "hotpotqa").is_dir():
        print(f"no benchmark data at {data_dir()} (see bench/README.md); nothing to do")
        return 0
    try:
        verify(["hotpotqa", "aeb"])  # what the world serves (bench/world.py)
    except DataMismatch as mismatch:
        print(mismatch, file=sys.stderr)
        return 1
    parts = set(args.only or ("timing", "recall", "footprint", "extraction"))
    if args.extraction == "none":
        parts.discard("extraction")
    pipelines = {"both": (False, True), "llm": (True,), "no-llm": (False,)}[args.pipeline]
    began = time.monotonic()
    out: dict[str, Any] = {}
    with world(args.seed) as w:
        if "timing" in parts:
            print("timing runs (depth 2, 5 sources, real latencies)...", file=sys.stderr)
            rows = run_timing(w, pipelines)
            out["timing"] = [vars(r) for r in rows]
            print("\n## Timing (depth 2, 5 sources; seed "
                  f"{args.seed})\n\n{timing_table(rows)}\n")
            print(f"Critical path, the slowest chain's parts (s):\n\n{parts_table(rows)}\n",
                  flush=True)
        if "recall" in parts:
            print("HotpotQA recall...", file=sys.stderr)
            recall = run_recall(w, args.recall_questions, args.recall_jobs, args.recall_scale,
                                pipelines)
            out["recall"] = [vars(r) for r in recall]
            print(f"## HotpotQA evidence recall\n\n"
                  f"{recall_table(recall, args.recall_scale, args.recall_jobs)}\n", flush=True)
        if "footprint" in parts:
            print("start time and memory...", file=sys.stderr)
            table = footprint_table(w)
            out["footprint"] = table
            print(f"## Start time and memory\n\n{table}\n", flush=True)
    if "extraction" in parts:
        which = ("WCXB held-out sample of "
                 f"{args.extraction_sample} + AEB" if args.extraction == "sample" else "all")
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
