"""The ``recall`` part of ``python -m bench``: HotpotQA questions whose report cites
every gold evidence page.

Both pipelines, the split's questions (:data:`bench.splits.HOTPOTQA`), at the world's
full latencies by default (``--recall-scale``: the wait for the best-ranked page does
not scale with them, so scaled runs flatter it), several questions at once
(``--recall-jobs``): the share of questions whose report cites (``[n]`` in its body)
every gold page (``supporting_facts`` titles), and the mean share of gold pages cited.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.client import WorldProcess, gold_shares, hotpot_split
from bench.parts import Context, Figures
from bench.splits import chosen

__all__ = ["Recall", "part", "recall_table", "run_recall"]


@dataclass
class Recall:
    pipeline: str
    questions: int
    all_gold: int
    gold_share: float
    wall: float


def run_recall(
    w: WorldProcess,
    questions: Sequence[dict[str, Any]],
    jobs: int,
    scale: float,
    pipelines: Sequence[bool],
) -> list[Recall]:
    """Each question once per pipeline, ``jobs`` at once, latency scaled by ``scale``."""
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


def part(ctx: Context) -> Figures:
    """The recall part on ``ctx.split``'s HotpotQA questions."""
    (split,) = chosen([ctx.split], ctx.final)
    assert ctx.world is not None
    questions = hotpot_split(split, ctx.limit)
    scale, jobs = ctx.args.recall_scale, ctx.args.recall_jobs
    print(f"HotpotQA recall ({len(questions)} {split} questions)...", file=sys.stderr)
    rows = run_recall(ctx.world, questions, jobs, scale, ctx.pipelines)
    head = ctx.heading("HotpotQA evidence recall", f"latency ×{scale:g}", f"{jobs} at once")
    return Figures(
        f"{head}\n\n{recall_table(rows, scale, jobs)}\n",
        [vars(r) for r in rows],
        {"questions": len(questions), "scale": scale, "jobs": jobs},
    )
