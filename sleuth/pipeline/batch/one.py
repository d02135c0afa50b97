"""One question of a batch: :class:`BatchResult` and :func:`run_question`, shared by the
in-process batch (:mod:`sleuth.pipeline.batch`) and its Ray workers
(:mod:`sleuth.pipeline.batch.ray`), which import this and not each other."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

from sleuth.errors import LLMAuthError, SleuthError, StoreCorruptError
from sleuth.models import Report
from sleuth.pipeline.batch.input import BatchQuestion
from sleuth.pipeline.context import Services
from sleuth.pipeline.quick import research
from sleuth.progress import Event, EventKind, ProgressCallback, no_progress
from sleuth.settings import Settings

__all__ = ["EVENTS", "BatchQuestion", "BatchResult", "BatchStatus", "failed", "run_question"]

log = logging.getLogger(__name__)

BatchStatus = Literal["done", "no_sources", "failed", "skipped"]
EVENTS: dict[BatchStatus, EventKind] = {
    "done": "question_done",
    "no_sources": "question_done",  # finished, with a report of its Gaps only
    "failed": "question_failed",
    "skipped": "question_skipped",
}


@dataclass(frozen=True)
class BatchResult:
    """One question's outcome: ``done`` (``report`` is its report), ``no_sources`` (its
    report cites nothing, as no page could be read: ``error`` says why), ``failed``
    (``error`` says why) or ``skipped`` (not started: a batch budget was spent; ``error``
    says which).
    ``tokens`` and ``cost_usd`` are the question's model use; ``elapsed_s`` its wall time."""

    id: str
    question: str
    status: BatchStatus
    report: Report | None = None
    error: str | None = None
    elapsed_s: float = 0.0
    tokens: int = 0
    cost_usd: float | None = None
    #: The input line it came from (None when given in Python without one).
    line: int | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """The ``results.jsonl`` line: id, question, status, the JSON report or the error,
        the number of sources, time, tokens and cost."""
        return {
            "id": self.id,
            "question": self.question,
            "status": self.status,
            "line": self.line,
            "error": self.error,
            "sources": len(self.report.sources) if self.report is not None else 0,
            "elapsed_s": round(self.elapsed_s, 3),
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "report": self.report.to_json_dict() if self.report is not None else None,
        }


def failed(question: BatchQuestion, error: str, elapsed: float = 0.0) -> BatchResult:
    """A ``failed`` result for ``question``, with why."""
    return BatchResult(
        question.id, question.question, "failed", error=error, elapsed_s=elapsed, line=question.line
    )


async def run_question(
    question: BatchQuestion,
    settings: Settings,
    services: Services,
    emit: ProgressCallback = no_progress,
) -> BatchResult:
    """Research one question of a batch over shared ``services``; never raises for the
    question's own problems (they make a ``failed`` result).

    Raises what no other question could get past either: a refused API key
    (:class:`~sleuth.errors.LLMAuthError`) or a damaged store.
    """
    start = time.monotonic()

    def tagged(event: Event) -> None:
        emit(Event(event.kind, event.message, {**event.data, "question_id": question.id}))

    try:
        report = await research(
            question.question, settings=settings, on_event=tagged, services=services
        )
    except (LLMAuthError, StoreCorruptError):
        raise
    except SleuthError as exc:
        return failed(question, str(exc), time.monotonic() - start)
    except Exception as exc:  # one question's bug must not cost the others theirs
        log.warning("question %s failed", question.id, exc_info=True)
        return failed(
            question, f"internal error: {type(exc).__name__}: {exc}", time.monotonic() - start
        )
    stats = report.stats
    return BatchResult(
        question.id,
        question.question,
        "done" if report.sources else "no_sources",
        report=report,
        error=None if report.sources else _why_none(report),
        elapsed_s=time.monotonic() - start,
        tokens=stats.prompt_tokens + stats.completion_tokens,
        cost_usd=stats.cost_usd,
        line=question.line,
    )


def _why_none(report: Report) -> str:
    """``no sources``, and the first of the report's Gaps that says why."""
    reasons = [failure.reason for failure in report.failures if failure.reason]
    return "no sources" + (f": {reasons[0]}" if reasons else ": no page answered the question")
