"""``sleuth eval``: a question set researched as a batch, each answer graded.

It **is** a batch (:func:`~sleuth.pipeline.batch.research_many` over one output folder,
:class:`~sleuth.pipeline.batch.outdir.OutDir`): the same ``results.jsonl`` and
``reports/``, ``jobs`` at a time, Ray if asked, resumable after a kill. Each finished
question is graded (:mod:`~sleuth.pipeline.eval.grade`) before its line is written, and
the line carries the grade under ``eval``: a line means a graded question, and a rerun
grades only what is not yet in the folder.

:func:`summarise` reads the folder's lines for the set's questions (this run's and the
earlier runs') into an :class:`EvalSummary`: accuracy, not attempted, mean time, tokens
and cost.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError
from sleuth.llm.run import open_llm_client
from sleuth.pipeline.batch import BatchQuestion, BatchResult, research_many
from sleuth.pipeline.batch.outdir import RESULTS, OutDir
from sleuth.pipeline.eval.grade import GRADES, Grade, judge, match, response_of
from sleuth.pipeline.eval.sets import EvalQuestion, QuestionSet
from sleuth.progress import ProgressCallback, no_progress
from sleuth.settings import Settings

__all__ = ["EvalSummary", "QuestionGrade", "grade_result", "run_eval", "summarise"]


@dataclass(frozen=True)
class QuestionGrade:
    """One recorded question: its id, batch status, grade, what graded it, time, tokens
    and cost (the research's and the judge's together)."""

    id: str
    status: str
    grade: str
    graded_by: str
    elapsed_s: float
    tokens: int
    cost_usd: float | None


@dataclass
class EvalSummary:
    """A set's grades so far: ``questions`` in the set, the ``graded`` ones, and the
    counts, time, tokens and cost over them (``cost_usd`` None when no price is known)."""

    name: str
    outdir: Path
    questions: int
    graded: list[QuestionGrade] = field(default_factory=list)

    def count(self, grade: str) -> int:
        """How many graded questions have ``grade``."""
        return sum(1 for g in self.graded if g.grade == grade)

    @property
    def accuracy(self) -> float | None:
        """Correct answers over graded questions (None before any is graded)."""
        return self.count("correct") / len(self.graded) if self.graded else None

    @property
    def correct_given_attempted(self) -> float | None:
        """Correct answers over the questions answered (correct or incorrect)."""
        attempted = self.count("correct") + self.count("incorrect")
        return self.count("correct") / attempted if attempted else None

    @property
    def mean_time_s(self) -> float | None:
        """The mean research time of a graded question."""
        return statistics.fmean(g.elapsed_s for g in self.graded) if self.graded else None

    @property
    def tokens(self) -> int:
        """Model tokens of the research and the judge, all graded questions."""
        return sum(g.tokens for g in self.graded)

    @property
    def cost_usd(self) -> float | None:
        """Estimated model cost, where a price is known; None when none is."""
        known = [g.cost_usd for g in self.graded if g.cost_usd is not None]
        return sum(known) if known else None

    def to_json_dict(self) -> dict[str, Any]:
        """The ``--format json`` object."""
        by = {
            name: sum(1 for g in self.graded if g.graded_by == name) for name in ("match", "judge")
        }
        return {
            "set": self.name,
            "outdir": str(self.outdir),
            "questions": self.questions,
            "graded": len(self.graded),
            **{grade: self.count(grade) for grade in GRADES},
            "failed": sum(1 for g in self.graded if g.status == "failed"),
            "accuracy": self.accuracy,
            "correct_given_attempted": self.correct_given_attempted,
            "mean_time_s": self.mean_time_s,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "graded_by": by,
            "per_question": [
                {"id": g.id, "status": g.status, "grade": g.grade, "graded_by": g.graded_by}
                for g in self.graded
            ],
        }


async def grade_result(
    result: BatchResult,
    question: EvalQuestion,
    client: Any | None,
    judge_model: str | None = None,
) -> Grade:
    """The grade of one finished question: by the judge when ``client`` (an
    :class:`~sleuth.llm.client.LLMClient`) is given, else by match."""
    response = response_of(result.report)
    if client is None:
        matched = match(response, question.answer, question.aliases)
        return Grade(matched, "match", matched, response)
    return await judge(
        client, question.question, question.answer, question.aliases, response, model=judge_model
    )


def _line_grade(entry: dict[str, Any]) -> QuestionGrade | None:
    graded = entry.get("eval")
    if not isinstance(graded, dict) or graded.get("grade") not in GRADES:
        return None
    judged = graded.get("judge") if isinstance(graded.get("judge"), dict) else {}
    cost = entry.get("cost_usd")
    judge_cost = judged.get("cost_usd") if judged else None
    if judge_cost is not None:
        cost = (cost or 0.0) + judge_cost
    return QuestionGrade(
        id=str(entry["id"]),
        status=str(entry.get("status")),
        grade=str(graded["grade"]),
        graded_by=str(graded.get("graded_by")),
        elapsed_s=float(entry.get("elapsed_s") or 0.0),
        tokens=int(entry.get("tokens") or 0) + int((judged or {}).get("tokens") or 0),
        cost_usd=cost,
    )


def summarise(found: QuestionSet, outdir: Path) -> EvalSummary:
    """The grades recorded in ``outdir`` for the questions of ``found``, in set order."""
    lines: dict[str, QuestionGrade] = {}
    path = outdir / RESULTS
    text = path.read_text("utf-8") if path.exists() else ""
    for raw in text.splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            grade = _line_grade(entry)
            if grade is not None:
                lines[grade.id] = grade  # the last line of an id wins (a retried one)
    summary = EvalSummary(found.name, outdir, len(found.questions))
    summary.graded = [lines[q.id] for q in found.questions if q.id in lines]
    return summary


def _ungraded_done(found: QuestionSet, out: OutDir, outdir: Path) -> set[str]:
    """Ids a plain ``sleuth batch`` recorded in this folder without a grade."""
    graded = {g.id for g in summarise(found, outdir).graded}
    return {q.id for q in found.questions if q.id in out.done and q.id not in graded}


async def run_eval(
    found: QuestionSet,
    outdir: Path,
    settings: Settings,
    *,
    jobs: int,
    use_judge: bool = True,
    judge_model: str | None = None,
    retry_failed: bool = False,
    on_event: ProgressCallback = no_progress,
    on_result: Callable[[BatchResult, Grade], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    **batch: Any,
) -> EvalSummary:
    """Research and grade the questions of ``found`` not yet graded in ``outdir``; the
    summary of all of them. ``use_judge``: grade by the model when one is configured
    (``judge_model``: another model of the same server). ``on_start(todo, before)`` is
    told how many questions run now and how many were graded before; ``on_result``
    each graded question. ``batch``: :func:`research_many`'s ``max_cost``, ``max_time``,
    ``ray``, ``ray_address``, ``ray_workers``.
    """
    out = OutDir.open(outdir, fmt=settings.format, retry_failed=retry_failed)
    try:
        stale = _ungraded_done(found, out, outdir)
        if stale:
            raise ConfigError(
                f"{outdir} holds reports of a batch, not an eval ({len(stale)} questions "
                "without a grade): use another folder"
            )
        by_id = {q.id: q for q in found.questions}
        todo = [
            BatchQuestion(q.id, q.question, line=q.line)
            for q in found.questions
            if q.id not in out.done and q.id not in out.failed
        ]
        if on_start is not None:
            on_start(len(todo), len(found.questions) - len(todo))
        if todo:
            async with AsyncExitStack() as stack:
                client = None
                if use_judge:
                    client = await stack.enter_async_context(
                        open_llm_client(settings, emit=on_event)
                    )
                async for result, grade in _graded(
                    todo, by_id, settings, client, judge_model, jobs, on_event, batch
                ):
                    out.write(result, extra={"eval": grade.to_json_dict()})
                    if on_result is not None:
                        on_result(result, grade)
    finally:
        out.close()
    return summarise(found, outdir)


async def _graded(
    todo: list[BatchQuestion],
    by_id: dict[str, EvalQuestion],
    settings: Settings,
    client: Any | None,
    judge_model: str | None,
    jobs: int,
    on_event: ProgressCallback,
    batch: dict[str, Any],
) -> AsyncIterator[tuple[BatchResult, Grade]]:
    results = research_many(todo, settings=settings, on_event=on_event, jobs=jobs, **batch)
    try:
        async for result in results:
            if result.status == "skipped":  # a batch budget: not recorded, a rerun runs it
                yield result, Grade("not_attempted", "match", "not_attempted")
                continue
            yield result, await grade_result(result, by_id[result.id], client, judge_model)
    finally:
        await results.aclose()
