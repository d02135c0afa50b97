"""``sleuth eval``: a question set with answers, researched as a batch and graded.

:mod:`~sleuth.pipeline.eval.sets` reads the sets (SimpleQA's CSV, HotpotQA and MuSiQue
JSON, plain JSONL) and finds the shipped samples; :mod:`~sleuth.pipeline.eval.grade`
grades one answer (a normalised match, or a judge model); :mod:`~sleuth.pipeline.eval.run`
runs the batch, grades each question as it finishes and sums the grades up.
"""

from __future__ import annotations

from sleuth.pipeline.eval.grade import GRADES, Grade, gold_forms, holds, match, normalise
from sleuth.pipeline.eval.run import EvalSummary, QuestionGrade, run_eval, summarise
from sleuth.pipeline.eval.sets import (
    SAMPLES,
    EvalQuestion,
    QuestionSet,
    read_set,
    sample_docs,
    sample_set,
)

__all__ = [
    "GRADES",
    "SAMPLES",
    "EvalQuestion",
    "EvalSummary",
    "Grade",
    "QuestionGrade",
    "QuestionSet",
    "gold_forms",
    "holds",
    "match",
    "normalise",
    "read_set",
    "run_eval",
    "sample_docs",
    "sample_set",
    "summarise",
]
