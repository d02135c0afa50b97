"""The timing part of ``python -m bench``: wall time against the critical path.

Each timing question is researched once per pipeline (depth 2, 5 sources) against the
benchmark world at its full latencies; :func:`critical_path` computes from the world's
log the shortest time in which that world could have produced the report, and every
row counts model calls and tokens, searches, fetches and the heavy pages read; each
run's chain and waste (:mod:`bench.chain`) are computed from the same log.
:func:`page_times` then times sleuth's extractor and trafilatura on every page the runs
fetched (:mod:`bench.pagetime`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.chain import PATH_PARTS, Events, chain, waste
from bench.chain import path as page_path
from bench.client import WorldProcess, cited_urls
from bench.pagetime import PageTime
from bench.pagetime import measure as measure_pages
from bench.pagetime import table as pagetime_table
from bench.parts import Context, Figures
from bench.splits import chosen
from bench.topics import HEAVY, split_questions
from bench.world import REPO
from sleuth.testing._corpus import Corpus

__all__ = [
    "Row",
    "chain_table",
    "critical_path",
    "measure",
    "page_times",
    "part",
    "parts_table",
    "path_table",
    "run_timing",
    "timing_table",
]

RESULTS_PER_QUERY = 8  # sleuth's default: the hits of a search it looks at


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
    first_round = [e for e in searches.values() if refine is None or e["start"] < refine["start"]]
    follow_wait = (
        (max((_dur(e) for e in first_round), default=0.0) + _dur(refine)) if refine else 0.0
    )
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
            options.append(
                (wait + search + select, {"refine": wait, "search": search, "select": select})
            )
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
    #: distinct pages over 500 KB fetched whole, and those read (a source of the report)
    heavy_fetched: int = 0
    heavy_read: int = 0
    fetched_mb: float = 0.0  # HTML of the distinct pages fetched whole
    fetched_urls: list[str] = field(default_factory=list)
    chain: float = 0.0  # bench.chain: what the run could not have done without
    chain_parts: dict[str, float] = field(default_factory=dict)
    waste: float = 0.0  # bench.chain: waiting for pages then not cited
    #: bench.chain.path: the wall time along the last cited page's path, in parts
    path: dict[str, float] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.wall / self.crit if self.crit else float("nan")

    @property
    def tokens_per_cited(self) -> float:
        total = self.prompt_tokens + self.completion_tokens
        return total / self.cited if self.cited else float("nan")


def measure(
    name: str,
    pipeline: str,
    report: Any,
    wall: float,
    log: list[dict[str, Any]],
    sizes: dict[str, int] | None = None,
    times: tuple[float, float] | None = None,
    events: Events = (),
) -> Row:
    """One run's row from its report, wall time and the world's log (``sizes``: page
    URL -> bytes, for the heavy-page columns; ``times``: when the run was called and
    when it had read its sources, on the world's clock, for the chain and the waste;
    ``events``: the run's progress events with their ``time.time()``, for its path)."""
    cited = cited_urls(report)
    pages = [e for e in log if e["kind"] == "page"]
    urls = [e["key"] for e in pages]
    whole = list(dict.fromkeys(e["key"] for e in pages if not e.get("left")))
    used = {s.url for s in report.sources}
    path = critical_path(log, cited)
    stats = report.stats
    size = (sizes or {}).get
    started, read_at = times if times is not None else (0.0, 0.0)
    run_chain = chain(log, cited, started) if times is not None else None
    return Row(
        name=name,
        pipeline=pipeline,
        wall=wall,
        crit=path.total,
        llm_calls=stats.llm_calls,
        prompt_tokens=stats.prompt_tokens,
        completion_tokens=stats.completion_tokens,
        searches=sum(1 for e in log if e["kind"] == "search"),
        fetches=len(urls),
        duplicates=len(urls) - len(set(urls)),
        wasted=len(set(urls) - used),
        sources=len(report.sources),
        cited=len(cited),
        parts=path.parts,
        heavy_fetched=sum(size(u, 0) > HEAVY for u in whole),
        heavy_read=sum(size(u, 0) > HEAVY for u in used),
        fetched_mb=sum(size(u, 0) for u in whole) / 1e6,
        fetched_urls=whole,
        chain=run_chain.total if run_chain else 0.0,
        chain_parts=run_chain.parts if run_chain else {},
        waste=waste(log, cited, read_at) if times is not None else 0.0,
        path=(page_path(log, events, cited, started, started + wall) or {}) if events else {},
    )


def timed_run(w: WorldProcess, question: str, llm: bool, name: str) -> Row:
    import sleuth

    read_at: list[float] = []
    events: list[tuple[float, str, dict[str, Any]]] = []

    def on_event(event: Any) -> None:
        events.append((time.time(), event.kind, dict(event.data or {})))
        if event.kind == "read" and not read_at:  # the sources are read: gathering is over
            read_at.append(time.time())

    w.log()
    started = time.time()  # the world logs on this clock (same machine)
    start = time.monotonic()
    report = sleuth.research_sync(question, on_event=on_event, **w.options(llm))
    wall = time.monotonic() - start
    ended = time.time()
    time.sleep(0.2)  # let the world log the responses that were cut off
    times = (started, read_at[0] if read_at else ended)
    pipeline = "LLM" if llm else "no-LLM"
    return measure(name, pipeline, report, wall, w.log(), w.sizes, times, events)


def _f(value: float, digits: int = 2) -> str:
    return "–" if value != value else f"{value:.{digits}f}"  # NaN → dash


def timing_table(rows: list[Row]) -> str:
    """One line per run and a total per pipeline (see bench/README.md for the columns)."""
    head = (
        "| run | pipeline | wall s | critical path s | wall / path | LLM calls | "
        "prompt tok | completion tok | tok / cited source | searches | fetches | "
        "duplicate | wasted | sources (cited) | >500 KB fetched (read) | MB fetched |"
    )
    lines = [head, "|" + "---|" * 2 + "---:|" * 14]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.pipeline} | {_f(r.wall)} | {_f(r.crit)} | {_f(r.ratio)} | "
            f"{r.llm_calls} | {r.prompt_tokens} | {r.completion_tokens} | "
            f"{_f(r.tokens_per_cited, 0)} | {r.searches} | {r.fetches} | {r.duplicates} | "
            f"{r.wasted} | {r.sources} ({r.cited}) | {r.heavy_fetched} ({r.heavy_read}) | "
            f"{r.fetched_mb:.1f} |"
        )
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
            f"{sum(r.sources for r in group)} ({cited}) | "
            f"{sum(r.heavy_fetched for r in group)} ({sum(r.heavy_read for r in group)}) | "
            f"{sum(r.fetched_mb for r in group):.1f} |"
        )
    return "\n".join(lines)


def chain_table(rows: list[Row]) -> str:
    """Each run's chain, its parts and its waste (bench.chain), and what wall adds."""
    keys = ["start-up", "plan", "search", "page", "reading", "report"]
    lines = [
        "| run | pipeline | wall s | chain s | "
        + " | ".join(keys)
        + " | waste s | wall / chain | (wall − waste) / chain (≤ 1.2) |",
        "|---|---|" + "---:|" * (len(keys) + 5),
    ]
    for r in rows:
        ratio = r.wall / r.chain if r.chain else float("nan")
        tight = (r.wall - r.waste) / r.chain if r.chain else float("nan")
        lines.append(
            f"| {r.name} | {r.pipeline} | {_f(r.wall)} | {_f(r.chain)} | "
            + " | ".join(_f(r.chain_parts.get(k, 0.0)) for k in keys)
            + f" | {_f(r.waste)} | {_f(ratio)} | {_f(tight)} |"
        )
    for pipeline in dict.fromkeys(r.pipeline for r in rows):
        group = [r for r in rows if r.pipeline == pipeline]
        wall, total = sum(r.wall for r in group), sum(r.chain for r in group)
        mean = sum(r.waste for r in group) / len(group)
        worst = max(((r.wall - r.waste) / r.chain for r in group if r.chain), default=float("nan"))
        lines.append(
            f"| **all** | {pipeline} | {_f(wall)} | {_f(total)} | "
            + " | " * len(keys)
            + f"mean **{_f(mean)}** | {_f(wall / total if total else float('nan'))} | "
            f"worst **{_f(worst)}** |"
        )
    return "\n".join(lines)


def path_table(rows: list[Row]) -> str:
    """Each run's wall time along its last cited page's path (bench.chain.path), and what
    is neither chain nor waste ("other": wall − chain − waste)."""
    lines = [
        "| run | pipeline | wall s | "
        + " | ".join(PATH_PARTS)
        + " | chain s | waste s | other s |",
        "|---|---|" + "---:|" * (len(PATH_PARTS) + 4),
    ]
    for r in rows:
        parts = [_f(r.path[k]) if k in r.path else "–" for k in PATH_PARTS]
        lines.append(
            f"| {r.name} | {r.pipeline} | {_f(r.wall)} | "
            + " | ".join(parts)
            + f" | {_f(r.chain)} | {_f(r.waste)} | {_f(r.wall - r.chain - r.waste)} |"
        )
    for pipeline in dict.fromkeys(r.pipeline for r in rows):
        group = [r for r in rows if r.pipeline == pipeline]
        followed = [r for r in group if r.path]
        n = len(group)
        means = [
            _f(sum(r.path[k] for r in followed) / len(followed)) if followed else "–"
            for k in PATH_PARTS
        ]
        lines.append(
            f"| **mean** | {pipeline} | {_f(sum(r.wall for r in group) / n)} | "
            + " | ".join(means)
            + f" | {_f(sum(r.chain for r in group) / n)} | {_f(sum(r.waste for r in group) / n)}"
            f" | {_f(sum(r.wall - r.chain - r.waste for r in group) / n)} |"
        )
    return "\n".join(lines)


def parts_table(rows: list[Row]) -> str:
    keys = ["plan", "refine", "search", "select", "fetch", "summary", "report"]
    lines = ["| run | pipeline | " + " | ".join(keys) + " |", "|---|---|" + "---:|" * len(keys)]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.pipeline} | "
            + " | ".join(_f(r.parts.get(k, 0.0)) for k in keys)
            + " |"
        )
    return "\n".join(lines)


def run_timing(
    w: WorldProcess, pipelines: Sequence[bool], questions: Sequence[tuple[str, str]]
) -> list[Row]:
    """Each ``(label, question)`` once per pipeline, at full latency, one at a time."""
    import sleuth

    warm_up = next(
        t.question
        for t in Corpus.load(REPO / "tests" / "data" / "corpus").topics
        if t.id == "firefox"
    )
    rows = []
    for llm in pipelines:
        # One untimed run first, at a tenth of the latencies: the rows then compare runs,
        # not the one-time lazy imports of the first (the footprint part times a cold start).
        w.scale(0.1)
        sleuth.research_sync(warm_up, **w.options(llm))
        w.scale(1.0)
        w.log()
        for label, question in questions:
            rows.append(timed_run(w, question, llm, label))
            print(
                f"  {rows[-1].pipeline:6} {label:14} wall {rows[-1].wall:6.2f} s, "
                f"critical path {rows[-1].crit:6.2f} s, {rows[-1].heavy_fetched} pages "
                f"over 500 KB",
                file=sys.stderr,
                flush=True,
            )
    return rows


def page_times(w: WorldProcess, rows: Sequence[Row], repeat: int = 2) -> list[PageTime]:
    """Extraction time of every page the runs fetched whole, sleuth's and trafilatura's."""
    urls = dict.fromkeys(u for r in rows for u in r.fetched_urls)
    return measure_pages({u: w.body(u) for u in urls}, repeat)


def part(ctx: Context) -> Figures:
    """The timing part on ``ctx.split``'s timing questions (:mod:`bench.topics`), then
    the extraction time of every page the runs fetched whole."""
    (split,) = chosen([ctx.split], ctx.final)
    assert ctx.world is not None
    questions = ctx.cut(split_questions(split))
    print("timing runs (depth 2, 5 sources, real latencies)...", file=sys.stderr)
    rows = run_timing(ctx.world, ctx.pipelines, questions)
    out = [
        f"{ctx.heading('Timing', 'depth 2, 5 sources, full latency', f'{ctx.hosts} hosts')}\n",
        timing_table(rows) + "\n",
        f"Critical path, the slowest chain's parts (s):\n\n{parts_table(rows)}\n",
        f"Chain and waste (bench/chain.py; s):\n\n{chain_table(rows)}\n",
        "Where the wall time went, along each run's last cited page (bench.chain.path; "
        f"s):\n\n{path_table(rows)}\n",
    ]
    data: dict[str, Any] = {"rows": [vars(r) for r in rows]}
    repeat = ctx.args.page_repeat
    if repeat > 0:
        print("extraction time of the pages fetched...", file=sys.stderr)
        times = page_times(ctx.world, rows, repeat)
        data["page_times"] = [vars(t) for t in times]
        out.append(
            "Extraction time per page fetched whole by the runs above (each page once, "
            f"the quickest of {repeat}):\n\n{pagetime_table(times)}\n"
        )
    return Figures("\n".join(out), data, {"questions": [label for label, _ in questions]})
