"""Relevance: does sleuth cite what is about the question, and cite the relevant pages it read?

A closed world where every page belongs to one question: each question's own relevant
pages are fewer than ``--max-sources`` (5), and every other question's pages are served
and searchable beside them as distractors. Two sets of questions:

* **corpus**: the seven topics of the tests' corpus (``tests/data/corpus``, real saved
  news articles). Topic *i* (manifest order) keeps the first 2, 3, 4, 2, 3, 4, 2 of its
  expected documents (``2 + i % 3``); the rest of them are not served, so each topic has
  fewer relevant pages than sources wanted. The twelve documents no topic expects (an
  Xbox review, a Rosetta comet piece, …) are served as distractors for all. Besides the
  topics: "held-out 2" (:data:`bench.splits.HELD_OUT_2`, a question per such document,
  which is its only relevant and only on-topic page) and the test questions
  (:data:`bench.splits.RELEVANCE_TEST`, a question per AEB article, the page served
  beside the corpus for every split).
* **hotpotqa**: the 100 questions of ``hotpotqa_train.json`` over their 994 paragraphs.
  Relevant: the question's two gold pages (``supporting_facts`` titles). **On-topic**:
  a gold page or one of the question's own eight other context paragraphs (HotpotQA
  picked them as close to the question: a careful researcher would call a page about
  the question's subject on-topic even when it does not answer it). **Off-topic**: a
  page of another question's context, or a corpus article. (No paragraph is in two
  questions' contexts.)

The world (:mod:`bench.world`, ``--kinds hotpotqa,corpus`` and the test questions' AEB
articles; each page on its real site's host) serves both sets at once, so each
question's distractors are the other questions' pages of both sets.

Per part, split and pipeline (no model; the world's scripted model, which picks the
first results it is shown and cites every note it is given, so the LLM rows measure
what sleuth hands a model, not a model's judgement):

* **on-topic share of cited sources** (target ≥ 95%), and the stricter share that are
  relevant pages;
* **relevant pages read**: share of the relevant pages that sleuth read (a source of
  the report, cited or not, or a page it read and left out as off-topic: the gate's
  own mistakes count against read → cited; before 2026-11-26 they went unseen), and
  **read → cited** (target ≥ 90%): of those, the share it cited;
* **cited per question**, and **every relevant page cited** (HotpotQA: all-gold) with
  the mean share of relevant pages cited (evidence recall): whether a gate costs recall.

**Splits** (:mod:`bench.splits`): corpus tune = stadia, moons, trade-war, firefox;
dev = hong-kong, wework, meth and held-out 2; test = the twenty AEB questions. HotpotQA
tune = questions 0–49, dev = 50–74, test = 75–99. Only ``python -m bench --final`` runs
test.

Latency: the world's, scaled by ``--scale`` (default 0.25: a run at full latency takes
about four times as long; the 3 s wait for the best-ranked page does not scale, so
scaled runs read that page more often than full-latency ones).

    python -m bench.relevance                        # both parts, tune and dev, both pipelines
    python -m bench --only relevance --split dev
    python -m bench.relevance --part hotpotqa --split dev --pipeline no-llm
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.client import WorldProcess, cited_urls, hotpot_questions, world
from bench.hosts import HOST_MODES
from bench.parts import Context, Figures
from bench.splits import (
    HELD_OUT_2,
    HOTPOTQA,
    RELEVANCE_CORPUS,
    RELEVANCE_TEST,
    SPLITS,
    TestSplitRefused,
    chosen,
)
from bench.world import REPO, data_dir
from sleuth.stages.read import NOT_RELEVANT
from sleuth.stages.relevance import OFF_TOPIC
from sleuth.testing._corpus import Corpus

__all__ = ["Question", "Score", "part", "questions", "run_relevance", "score", "table"]

PARTS = ("corpus", "hotpotqa")


@dataclass(frozen=True)
class Question:
    """A question with its relevant pages and the pages that are about it (``kind:key``)."""

    part: str
    id: str
    question: str
    split: str
    relevant: frozenset[str]
    on_topic: frozenset[str]


def _corpus() -> Corpus:
    return Corpus.load(REPO / "tests" / "data" / "corpus")


def corpus_plan() -> tuple[list[Question], list[str]]:
    """The corpus part's questions and the ``kind:key`` of the expected documents not served."""
    out, drop = [], []
    split_of = {q: split for split, ids in RELEVANCE_CORPUS.items() for q in ids}
    for i, topic in enumerate(_corpus().topics):
        keep = 2 + i % 3
        kept = frozenset(f"corpus:{d}" for d in topic.expected[:keep])
        drop += [f"corpus:{d}" for d in topic.expected[keep:]]
        out.append(Question("corpus", topic.id, topic.question, split_of[topic.id], kept, kept))
    for key, question, split in [
        *((f"corpus:{doc}", q, "dev") for doc, q in HELD_OUT_2),
        *((f"aeb:{aeb}", q, "test") for aeb, q in RELEVANCE_TEST),
    ]:
        only = frozenset([key])
        out.append(Question("corpus", key.partition(":")[2], question, split, only, only))
    return out, drop


def hotpot_plan() -> list[Question]:
    """The HotpotQA questions: gold pages relevant, the own context on-topic."""
    file = data_dir() / "hotpotqa" / "hotpotqa_train.json"
    if not file.is_file():
        return []
    out = []
    for n, q in enumerate(hotpot_questions()):
        gold = frozenset(f"hotpotqa:{t}" for t, _ in q["supporting_facts"])
        context = frozenset(f"hotpotqa:{t}" for t, _ in q["context"])
        out.append(
            Question(
                "hotpotqa",
                str(n),
                q["question"],
                next(s for s, indices in HOTPOTQA.items() if n in indices),
                gold,
                gold | context,
            )
        )
    return out


def questions() -> tuple[list[Question], list[str]]:
    """Every question of both parts, and the pages the world must leave out."""
    corpus, drop = corpus_plan()
    return corpus + hotpot_plan(), drop


@dataclass(frozen=True)
class Outcome:
    """What one research read and cited (``kind:key``), or the error it ended with."""

    question: Question
    pipeline: str
    read: tuple[str, ...]
    cited: tuple[str, ...]
    error: str = ""


async def _research(
    w: WorldProcess,
    q: Question,
    llm: bool,
    gate: asyncio.Semaphore,
    keys: dict[str, str],
    max_sources: int,
    mode: str = "quick",
) -> Outcome:
    import sleuth

    pipeline = "LLM" if llm else "no-LLM"
    async with gate:
        try:
            options = w.options(llm, max_sources=max_sources, mode=mode)
            report = await sleuth.research(q.question, **options)
        except Exception as exc:  # a run that fails is an outcome to count, not a crash
            return Outcome(q, pipeline, (), (), f"{type(exc).__name__}: {exc}")
    # Read: the report's sources and the pages it read and left out (as off-topic, or
    # "not relevant" by the model), so that read -> cited sees a relevant page the gate drops.
    left_out = [
        f.url for f in report.failures if f.reason.startswith(OFF_TOPIC) or f.reason == NOT_RELEVANT
    ]
    read = tuple(
        keys.get(u, u) for u in dict.fromkeys([*(s.url for s in report.sources), *left_out])
    )
    return Outcome(q, pipeline, read, tuple(keys.get(u, u) for u in cited_urls(report)))


def run_all(
    w: WorldProcess,
    qs: Sequence[Question],
    llm: bool,
    jobs: int,
    max_sources: int,
    mode: str = "quick",
) -> list[Outcome]:
    """Research every question, ``jobs`` at a time, in this process."""
    keys = {p["url"]: f"{p['kind']}:{p['key']}" for p in w.pages}

    async def every() -> list[Outcome]:
        gate = asyncio.Semaphore(jobs)
        return list(
            await asyncio.gather(*(_research(w, q, llm, gate, keys, max_sources, mode) for q in qs))
        )

    return asyncio.run(every())


@dataclass
class Score:
    """One part × split × pipeline."""

    part: str
    split: str
    pipeline: str
    questions: int
    cited: int
    cited_on_topic: int
    cited_relevant: int
    relevant: int
    relevant_read: int
    relevant_read_cited: int
    all_relevant: int
    recall: float
    errors: int
    wall: float


def score(outcomes: Sequence[Outcome], part: str, split: str, pipeline: str, wall: float) -> Score:
    """Pooled counts over the outcomes (shares are computed from them in :func:`table`)."""
    s = Score(
        part,
        split,
        pipeline,
        len(outcomes),
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0.0,
        sum(bool(o.error) for o in outcomes),
        wall,
    )
    shares = []
    for o in outcomes:
        cited, read, rel = set(o.cited), set(o.read), o.question.relevant
        s.cited += len(cited)
        s.cited_on_topic += len(cited & o.question.on_topic)
        s.cited_relevant += len(cited & rel)
        s.relevant += len(rel)
        s.relevant_read += len(read & rel)
        s.relevant_read_cited += len(read & rel & cited)
        s.all_relevant += rel <= cited
        shares.append(len(rel & cited) / len(rel) if rel else 1.0)
    s.recall = statistics.fmean(shares) if shares else 0.0
    return s


def _pct(a: int, b: int) -> str:
    return f"{a / b:.0%} ({a}/{b})" if b else "–"


def table(scores: Sequence[Score]) -> str:
    """The Markdown table of :func:`score` rows."""
    lines = [
        "| part | split | pipeline | questions | cited / question | on-topic share of "
        "cited (≥ 95%) | relevant share of cited | relevant read | read → cited "
        "(≥ 90%) | every relevant page cited | evidence recall | errors | wall s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in scores:
        lines.append(
            f"| {s.part} | {s.split} | {s.pipeline} | {s.questions} | "
            f"{s.cited / s.questions if s.questions else 0:.2f} | "
            f"{_pct(s.cited_on_topic, s.cited)} | {_pct(s.cited_relevant, s.cited)} | "
            f"{_pct(s.relevant_read, s.relevant)} | "
            f"{_pct(s.relevant_read_cited, s.relevant_read)} | "
            f"{_pct(s.all_relevant, s.questions)} | {s.recall:.2f} | {s.errors} | "
            f"{s.wall:.0f} |"
        )
    return "\n".join(lines)


def run_relevance(
    seed: int = 8,
    scale: float = 0.25,
    jobs: int = 5,
    pipelines: Sequence[bool] = (False, True),
    parts: Sequence[str] = PARTS,
    splits: Sequence[str] = ("tune", "dev"),
    max_sources: int = 5,
    *,
    final: bool = False,
    limit: int | None = None,
    hosts: str = "site",
    mode: str = "quick",
) -> tuple[list[Score], list[Outcome]]:
    """Run the benchmark; the scores (part × split × pipeline) and every outcome (the
    test split only when ``final``; ``limit``: at most that many questions per part and
    split)."""
    splits = chosen(splits, final)
    every, drop = questions()
    picked = [
        q
        for part in parts
        for split in splits
        for q in [q for q in every if (q.part, q.split) == (part, split)][: limit or None]
    ]
    # The test questions' pages are served for every split: one world for all of them.
    also = [f"--also=aeb:{aeb}" for aeb, _ in RELEVANCE_TEST]
    args = ["--kinds", "hotpotqa,corpus", "--hosts", hosts, *also, *(f"--drop={d}" for d in drop)]
    scores, outcomes = [], []
    with world(seed, scale, args) as w:
        for llm in pipelines:
            pipeline = "LLM" if llm else "no-LLM"
            start = time.monotonic()
            got = run_all(w, picked, llm, jobs, max_sources, mode)
            wall = time.monotonic() - start
            w.log()
            outcomes += got
            for part in parts:
                for split in splits:
                    mine = [o for o in got if o.question.part == part and o.question.split == split]
                    if mine:
                        scores.append(score(mine, part, split, pipeline, wall))
            print(
                f"  relevance {pipeline}: {len(got)} questions ({wall:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    return scores, outcomes


def _offenders(outcomes: Sequence[Outcome], limit: int) -> str:
    """The off-topic pages cited most often, to read what the gate let through."""
    from collections import Counter

    counts: Counter[str] = Counter()
    for o in outcomes:
        counts.update(c for c in o.cited if c not in o.question.on_topic)
    return "\n".join(f"  {n} × {key}" for key, n in counts.most_common(limit))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.relevance",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--scale", type=float, default=0.25)
    parser.add_argument("--jobs", type=int, default=5)
    parser.add_argument("--max-sources", type=int, default=5)
    parser.add_argument("--pipeline", choices=("both", "llm", "no-llm"), default="both")
    parser.add_argument("--part", choices=(*PARTS, "both"), default="both")
    parser.add_argument(
        "--split",
        action="append",
        choices=SPLITS,
        help="repeatable; default: tune and dev (test runs only through python -m bench --final)",
    )
    parser.add_argument("--hosts", choices=HOST_MODES, default="site", help="bench.world --hosts")
    parser.add_argument(
        "--offenders", type=int, default=0, help="also list the N off-topic pages cited most often"
    )
    parser.add_argument(
        "--mode", choices=("quick", "deep"), default="quick", help="the research mode run"
    )
    parser.add_argument("--json", default=None, help="write every outcome here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.relevance``: print the table (and ``--json`` every outcome)."""
    args = _parser().parse_args(argv)
    splits = args.split or ("tune", "dev")
    try:
        chosen(splits)
    except TestSplitRefused as refused:
        print(f"python -m bench.relevance: {refused}", file=sys.stderr)
        return 2
    if not (data_dir() / "hotpotqa").is_dir():
        print(f"no benchmark data at {data_dir()} (see bench/README.md); nothing to do")
        return 0
    pipelines = {"both": (False, True), "llm": (True,), "no-llm": (False,)}[args.pipeline]
    parts = PARTS if args.part == "both" else (args.part,)
    scores, outcomes = run_relevance(
        args.seed,
        args.scale,
        args.jobs,
        pipelines,
        parts,
        splits,
        args.max_sources,
        hosts=args.hosts,
        mode=args.mode,
    )
    print(
        f"## Relevance ({args.mode} mode, seed {args.seed}, latency ×{args.scale:g}, "
        f"{args.jobs} at once, "
        f"--max-sources {args.max_sources})\n\n{table(scores)}\n"
    )
    if args.offenders:
        print(f"Off-topic pages cited most often:\n{_offenders(outcomes, args.offenders)}\n")
    if args.json:
        rows: list[dict[str, Any]] = [
            {
                "part": o.question.part,
                "id": o.question.id,
                "split": o.question.split,
                "pipeline": o.pipeline,
                "read": o.read,
                "cited": o.cited,
                "error": o.error,
                "relevant": sorted(o.question.relevant),
            }
            for o in outcomes
        ]
        with open(args.json, "w", encoding="utf-8") as sink:
            json.dump({"scores": [vars(s) for s in scores], "outcomes": rows}, sink, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def part(ctx: Context) -> Figures:
    """The relevance part on ``ctx.split`` (both sets of questions, in a world of its own),
    in quick mode (5 sources) and in deep mode (10 sources): the on-topic target holds for
    both."""
    scale, jobs = ctx.args.relevance_scale, ctx.args.relevance_jobs
    print("relevance (its own world)...", file=sys.stderr)
    runs = [
        run_relevance(
            ctx.seed,
            scale,
            jobs,
            ctx.pipelines,
            splits=(ctx.split,),
            max_sources=sources,
            final=ctx.final,
            limit=ctx.limit,
            hosts=ctx.hosts,
            mode=mode,
        )[0]
        for mode, sources in (("quick", 5), ("deep", 10))
    ]
    quick, deep = runs
    head = ctx.heading("Relevance", f"latency ×{scale:g}", f"{jobs} at once", "5 sources")
    deep_head = ctx.heading(
        "Relevance, deep mode", f"latency ×{scale:g}", f"{jobs} at once", "10 sources"
    )
    data = [{**vars(s), "mode": "quick"} for s in quick] + [
        {**vars(s), "mode": "deep"} for s in deep
    ]
    return Figures(
        f"{head}\n\n{table(quick)}\n\n{deep_head}\n\n{table(deep)}\n",
        data,
        {"scale": scale, "jobs": jobs},
    )
