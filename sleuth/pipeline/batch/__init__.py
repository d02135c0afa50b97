"""Many questions at once: ``sleuth batch`` and :func:`research_many`.

:mod:`~sleuth.pipeline.batch.run` schedules the questions (``jobs`` at a time over shared
services, within the batch's budgets); :mod:`~sleuth.pipeline.batch.input` reads them (a
text file, JSONL or CSV); :mod:`~sleuth.pipeline.batch.one` runs one and says how it
ended; :mod:`~sleuth.pipeline.batch.outdir` keeps the output folder a rerun resumes
from; :mod:`~sleuth.pipeline.batch.ray` runs the questions on a Ray cluster instead.
"""

from __future__ import annotations

from sleuth.pipeline.batch.run import (
    BATCH_FIELDS,
    DEFAULT_JOBS,
    BatchQuestion,
    BatchResult,
    check_batch_settings,
    research_many,
    run_question,
    services_settings,
)

__all__ = [
    "BATCH_FIELDS",
    "DEFAULT_JOBS",
    "BatchQuestion",
    "BatchResult",
    "check_batch_settings",
    "research_many",
    "run_question",
    "services_settings",
]
