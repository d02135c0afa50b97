"""The ``deep`` part of ``python -m bench``: deep research against quick, in one world.

Three measures (see bench/README.md, "Deep research"):

1. **Evidence recall without a model** on the split's HotpotQA questions
   (:data:`bench.splits.HOTPOTQA`; tune is what the no-model second hop was developed
   on): the share of questions whose report cites every gold page, deep mode (its
   defaults: 20 sources, breadth 4, 2 levels) against quick mode (5 sources), bridge and
   comparison questions apart.
2. **Timing with the scripted model** (latency on): each of the split's first timing
   questions (``--deep-timing``) once per mode;
   wall time against the deep run's critical path (:func:`deep_path`), model calls,
   tokens per cited source, fetches and duplicate fetches, citations that do not
   resolve, and whether the fabricated citation and URL that the world's model plants in
   every section reply were removed.
3. **Memory**: the peak RSS of a CLI deep run reading 40 sources (scripted model), in a
   fresh process.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.client import WorldProcess, cited_ids, cited_urls, gold_shares, hotpot_split
from bench.parts import Context, Figures
from bench.splits import chosen
from bench.timing import measure
from bench.topics import split_questions
from bench.world import REPO

__all__ = [
    "DeepRow",
    "Recall",
    "deep_path",
    "deep_rss",
    "part",
    "parts_table",
    "recall_table",
    "run_deep_recall",
    "run_deep_timing",
    "summary_line",
    "timing_table",
]

PLANTED = ("https://planted.invalid/", "[99]")  # sleuth.testing.researcher's plant


# -- recall --------------------------------------------------------------------------------
@dataclass
class Recall:
    """All-gold recall of one mode on one split, per question type."""

    mode: str
    split: str
    kind: str
    questions: int = 0
    all_gold: int = 0
    wall: float = 0.0

    @property
    def share(self) -> float:
        return self.all_gold / self.questions if self.questions else float("nan")


def run_deep_recall(
    w: WorldProcess, jobs: int, scale: float, split: str, questions: Sequence[dict[str, Any]]
) -> list[Recall]:
    """Quick then deep, no model, over ``questions`` (of ``split``)."""
    rows: list[Recall] = []
    w.scale(scale)
    try:
        for mode in ("quick", "deep"):

            def options(mode: str = mode) -> dict[str, Any]:
                opts = w.options(False)
                if mode == "deep":
                    opts.pop("max_sources")  # deep mode's default, 20
                    opts["mode"] = "deep"
                return opts

            shares, wall = gold_shares(w, questions, options, jobs)
            hits = [share == 1.0 for share in shares]
            for q, hit in zip(questions, hits, strict=True):
                for kind in (q["type"], "all"):
                    row = next(
                        (r for r in rows if (r.mode, r.split, r.kind) == (mode, split, kind)), None
                    )
                    if row is None:
                        row = Recall(mode, split, kind, wall=wall)
                        rows.append(row)
                    row.questions += 1
                    row.all_gold += hit
            print(
                f"  recall {mode}: {sum(hits)}/{len(hits)} ({wall:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
            w.log()
    finally:
        w.scale(1.0)
    return rows


def recall_table(rows: Sequence[Recall]) -> str:
    lines = [
        "| split | questions | kind | quick (5 sources) | deep (20 sources) |",
        "|---|---:|---|---:|---:|",
    ]
    for split in dict.fromkeys(r.split for r in rows):
        for kind in ("bridge", "comparison", "all"):
            pair = {r.mode: r for r in rows if (r.split, r.kind) == (split, kind)}
            if "quick" not in pair or "deep" not in pair:
                continue
            q, d = pair["quick"], pair["deep"]
            bold = "**" if kind == "all" else ""
            lines.append(
                f"| {split} | {q.questions} | {kind} | {q.all_gold} ({q.share:.0%}) "
                f"| {bold}{d.all_gold} ({d.share:.0%}){bold} |"
            )
    return "\n".join(lines)


# -- the critical path of a deep run -------------------------------------------------------
def _dur(entry: dict[str, Any]) -> float:
    return float(entry["end"]) - float(entry["start"])


def deep_path(log: list[dict[str, Any]], report: Any) -> tuple[float, dict[str, float]]:
    """The shortest time in which the world could have produced this deep report.

    The sub-questions call; then, level by level, the slowest branch's chain: its
    search (the slowest of its queries), its select call, its slowest page (the fetch,
    then that page's summary calls), its learn call; then the outline call and the
    slowest of the section calls and the introduction/conclusion call. Client-side CPU
    is not on it. Returns the total and its parts.
    """
    llm = [e for e in log if e["kind"] == "llm"]

    def durations(stage: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for e in llm:
            if e["stage"] == stage:
                out[e["key"]] = max(out.get(e["key"], 0.0), _dur(e))
        return out

    searches: dict[str, float] = {}
    for e in log:
        if e["kind"] == "search" and not e.get("left"):
            searches.setdefault(e["key"], _dur(e))
    fetches: dict[str, float] = {}
    for e in log:
        if e["kind"] == "page" and not e.get("left"):
            fetches.setdefault(e["key"], _dur(e))
    selects: dict[str, float] = {}
    for e in llm:
        if e["stage"] == "select":
            for query in e["key"].splitlines():
                selects[query] = max(selects.get(query, 0.0), _dur(e))
    summaries, learns = durations("summarize"), durations("learn")
    merges: dict[str, float] = {}
    for e in llm:
        if e["stage"] == "merge":
            merges[e["key"]] = merges.get(e["key"], 0.0) + _dur(e)
    urls = {s.id: s.url for s in report.sources}
    parts: dict[str, float] = {"subquestions": max(durations("subquestions").values(), default=0.0)}
    for node in report.tree or []:
        if node.status == "skipped":
            continue
        search = max((searches.get(q, 0.0) for q in node.queries), default=0.0)
        select = max((selects.get(q, 0.0) for q in node.queries), default=0.0)
        read = max(
            (
                fetches.get(urls[n], 0.0) + summaries.get(urls[n], 0.0) + merges.get(urls[n], 0.0)
                for n in node.sources
                if n in urls
            ),
            default=0.0,
        )
        chain = search + select + read + learns.get(node.question, 0.0)
        key = f"level {node.level}"
        parts[key] = max(parts.get(key, 0.0), chain)
    parts["outline"] = max(durations("outline").values(), default=0.0)
    parts["sections"] = max(
        [*durations("section").values(), *durations("frame").values()], default=0.0
    )
    return sum(parts.values()), parts


# -- timing --------------------------------------------------------------------------------
@dataclass
class DeepRow:
    """One run of one timing question in one mode (scripted model)."""

    name: str
    mode: str
    wall: float
    crit: float
    llm_calls: int
    tokens: int
    sources: int
    cited: int
    fetches: int
    duplicates: int  # pages fetched whole more than once
    unresolved: int  # [n] in the body that is no source
    planted_left: bool
    nodes: int = 0
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.wall / self.crit if self.crit else float("nan")

    @property
    def per_cited(self) -> float:
        return self.tokens / self.cited if self.cited else float("nan")


def _row(
    name: str, mode: str, report: Any, wall: float, log: list[dict[str, Any]], sizes: dict[str, int]
) -> DeepRow:
    whole = Counter(e["key"] for e in log if e["kind"] == "page" and not e.get("left"))
    stats = report.stats
    ids = {s.id for s in report.sources}
    if mode == "deep":
        crit, parts = deep_path(log, report)
    else:
        quick = measure(name, "LLM", report, wall, log, sizes)
        crit, parts = quick.crit, quick.parts
    body = report.markdown.split("\n## Sources", 1)[0]
    return DeepRow(
        name=name,
        mode=mode,
        wall=wall,
        crit=crit,
        llm_calls=stats.llm_calls,
        tokens=stats.prompt_tokens + stats.completion_tokens,
        sources=len(report.sources),
        cited=len(cited_urls(report)),
        fetches=sum(1 for e in log if e["kind"] == "page"),
        duplicates=sum(n - 1 for n in whole.values()),
        unresolved=len(cited_ids(report.markdown) - ids),
        planted_left=any(p in body for p in PLANTED),
        nodes=len(report.tree or []),
        parts=parts,
    )


def run_deep_timing(w: WorldProcess, questions: Sequence[tuple[str, str]]) -> list[DeepRow]:
    """Each ``(label, question)`` in quick then deep mode, scripted model, full latency."""
    import sleuth

    rows = []
    w.scale(0.1)  # one untimed run first: lazy imports are not what is compared
    sleuth.research_sync(questions[0][1], **w.options(True, max_sources=2))
    w.scale(1.0)
    for mode in ("quick", "deep"):
        for label, question in questions:
            opts = w.options(True)
            if mode == "deep":
                opts.pop("max_sources")
                opts["mode"] = "deep"
            w.log()
            start = time.monotonic()
            report = sleuth.research_sync(question, **opts)
            wall = time.monotonic() - start
            time.sleep(0.2)  # the world logs the responses that were cut off
            rows.append(_row(label, mode, report, wall, w.log(), w.sizes))
            r = rows[-1]
            print(
                f"  {mode:5} {label:14} wall {r.wall:6.2f} s, path {r.crit:6.2f} s, "
                f"{r.sources} sources, {r.duplicates} duplicate fetches",
                file=sys.stderr,
                flush=True,
            )
    return rows


def _f(value: float, digits: int = 2) -> str:
    return "–" if value != value else f"{value:.{digits}f}"


def timing_table(rows: Sequence[DeepRow]) -> str:
    lines = [
        "| run | mode | wall s | critical path s | wall / path | tree nodes | LLM calls "
        "| tokens | sources (cited) | tok / cited source | fetches | duplicate "
        "| unresolved [n] | planted citation left |",
        "|---|---|" + "---:|" * 12,
    ]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.mode} | {_f(r.wall)} | {_f(r.crit)} | {_f(r.ratio)} | "
            f"{r.nodes or '–'} | {r.llm_calls} | {r.tokens} | {r.sources} "
            f"({r.cited}) | {_f(r.per_cited, 0)} | {r.fetches} | {r.duplicates} | "
            f"{r.unresolved} | {'yes' if r.planted_left else 'no'} |"
        )
    for mode in ("quick", "deep"):
        group = [r for r in rows if r.mode == mode]
        if not group:
            continue
        wall, crit = sum(r.wall for r in group), sum(r.crit for r in group)
        tokens, cited = sum(r.tokens for r in group), sum(r.cited for r in group)
        lines.append(
            f"| **all** | {mode} | {_f(wall)} | {_f(crit)} | **{_f(wall / crit)}** "
            f"| | {sum(r.llm_calls for r in group)} | {tokens} | "
            f"{sum(r.sources for r in group)} ({cited}) | "
            f"**{_f(tokens / cited if cited else float('nan'), 0)}** | "
            f"{sum(r.fetches for r in group)} | "
            f"**{sum(r.duplicates for r in group)}** | "
            f"{sum(r.unresolved for r in group)} | "
            f"{sum(r.planted_left for r in group)} |"
        )
    return "\n".join(lines)


def parts_table(rows: Sequence[DeepRow]) -> str:
    keys = list(dict.fromkeys(k for r in rows if r.mode == "deep" for k in r.parts))
    lines = ["| run | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for r in rows:
        if r.mode == "deep":
            lines.append(
                f"| {r.name} | " + " | ".join(_f(r.parts.get(k, 0.0)) for k in keys) + " |"
            )
    return "\n".join(lines)


# -- memory --------------------------------------------------------------------------------
def deep_rss(w: WorldProcess, question: str, sources: int = 40) -> tuple[float, float, int]:
    """Peak RSS (MB, the child's own VmHWM), wall (s) and sources read of one CLI deep run
    reading ``sources`` sources with the scripted model, in a fresh process."""
    from bench.footprint import HWM_WRAPPER

    args = list(w.cli_args(True))
    at = args.index("--max-sources")
    args[at + 1] = str(sources)
    args += ["--mode", "deep", "--breadth", "6", "--levels", "2"]
    with (
        tempfile.NamedTemporaryFile("r", suffix=".hwm") as sink,
        tempfile.NamedTemporaryFile("r", suffix=".json") as out,
    ):
        start = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                HWM_WRAPPER,
                sink.name,
                question,
                *args,
                "-o",
                out.name,
                "--quiet",
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(
                f"the deep CLI run failed ({proc.returncode}): "
                f"{proc.stderr.decode(errors='replace')[-300:]}"
            )
        kib = int(sink.read().split()[1])
        # sleuth writes -o by a rename: read the path, not the handle opened before it.
        text = Path(out.name).read_text(encoding="utf-8")
        read = len(json.loads(text or "{}").get("sources", []))
    return kib / 1024, wall, read


def summary_line(rows: Sequence[DeepRow]) -> str:
    """Medians of wall / path per mode, for the log."""
    out = []
    for mode in ("quick", "deep"):
        ratios = [r.ratio for r in rows if r.mode == mode and r.crit]
        if ratios:
            out.append(f"{mode} median wall/path {statistics.median(ratios):.2f}")
    return "; ".join(out)


def part(ctx: Context) -> Figures:
    """The deep part on ``ctx.split``: recall on its HotpotQA questions, timing on its
    first ``--deep-timing`` timing questions, memory on its first."""
    (split,) = chosen([ctx.split], ctx.final)
    w, args = ctx.world, ctx.args
    assert w is not None
    print("deep: HotpotQA recall without a model, quick then deep...", file=sys.stderr)
    questions = hotpot_split(split, ctx.limit)
    recall = run_deep_recall(w, args.deep_jobs, args.deep_scale, split, questions)
    timing = ctx.cut(split_questions(split)[: args.deep_timing])
    print("deep: timing with the scripted model...", file=sys.stderr)
    rows = run_deep_timing(w, timing)
    print("deep: memory of a 40-source run...", file=sys.stderr)
    from bench.footprint import peak_rss

    question = timing[0][1]
    rss, wall, read = deep_rss(w, question)
    quick_rss, quick_wall = peak_rss(w, question, True)
    out = [
        ctx.heading(
            "Deep research: HotpotQA all-gold recall, no model",
            f"latency ×{args.deep_scale:g}",
            f"{args.deep_jobs} at once",
        ),
        f"\n{recall_table(recall)}\n",
        ctx.heading("Deep research: timing with the scripted model", "full latency"),
        f"\n{timing_table(rows)}\n\nDeep critical path, its parts (s):\n\n{parts_table(rows)}\n",
        ctx.heading("Deep research: memory", timing[0][0]),
        "\n| measure | value | target |\n|---|---:|---:|",
        f"| peak RSS, deep, 40 sources wanted ({read} read), scripted model (CLI, "
        f"{wall:.1f} s) | {rss:.0f} MB | ≤ 250 MB |",
        f"| peak RSS, quick, 5 sources, same question and model (CLI, {quick_wall:.1f} s) "
        f"| {quick_rss:.0f} MB | |\n",
    ]
    data = {
        "recall": [vars(r) for r in recall],
        "timing": [vars(r) for r in rows],
        "rss_mb": rss,
        "rss_sources": read,
        "quick_rss_mb": quick_rss,
    }
    settings = {"scale": args.deep_scale, "jobs": args.deep_jobs, "questions": len(questions)}
    return Figures("\n".join(out), data, settings)
