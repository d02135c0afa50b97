"""Many questions at once: :func:`research_many`, the driver behind ``sleuth batch``.

Questions run concurrently (``jobs`` at a time) in one process over one
:class:`~sleuth.pipeline.context.Services`: one fetcher (one politeness clock per host,
one request for a page two questions want at once), one store session (a page one
question read is in the cache for the next), one model client (one concurrency limit).
Each question is still its own run, with its own record in the store (``sleuth runs``
lists it), its own budget and its own ``--max-pages-per-host`` count.

Per-question options are settings fields applied over the batch's (any of them but the
ones the shared services read, :data:`BATCH_FIELDS`). The batch's own budgets
(``max_cost``, ``max_time``) stop it starting questions once spent; a question it
starts gets what is left of them as its own ``--max-cost`` / ``--max-time`` (when that
is less than its own), so the questions in flight end in time, with their reports.

With ``ray=True`` (or ``ray_address``) the questions run on a Ray cluster instead
(:mod:`sleuth.pipeline.batch.ray`, imported only then): the same scheduling and budgets
here, each question on a worker that keeps services of its own.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from sleuth.errors import ConfigError
from sleuth.lang import language_name
from sleuth.pipeline.batch.input import BatchQuestion, Questions, parse_items
from sleuth.pipeline.batch.one import EVENTS, BatchResult, failed, run_question
from sleuth.pipeline.context import SERVICE_FIELDS, Services, check_settings, open_services
from sleuth.progress import Event, ProgressCallback, no_progress
from sleuth.search import build_providers, make_search_client
from sleuth.settings import Settings, field_meta, with_options
from sleuth.stages.rank import load_rules

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

log = logging.getLogger(__name__)

#: Questions at once by default: enough to keep the network busy while some questions
#: wait on slow pages or the model; as many as the model's default concurrency limit,
#: so that with a model, questions rarely queue for it.
DEFAULT_JOBS = 8
#: Settings only the batch as a whole has: what the shared services read, and where the
#: reports go. A question's line may set any other settings field.
BATCH_FIELDS = SERVICE_FIELDS | {"output", "format"}


def services_settings(base: Settings, jobs: int) -> Settings:
    """The settings of a batch's shared services: the batch's, with ``--concurrency``
    (pages at once, in all, for one run) made the whole batch's: ``jobs`` times it.
    Per-host concurrency, the host delay and the model's concurrency limit stay as they
    are: they are the manners toward each site and server, whoever asks."""
    return base.model_copy(update={"concurrency": base.concurrency * jobs})


async def check_batch_settings(base: Settings) -> None:
    """The checks every question would fail alike, made once before any runs: unknown
    providers or a missing key, the documents folder, the quality rules, ``--lang``."""
    check_settings(base)
    async with make_search_client(base) as probe:
        build_providers(base, probe)
    load_rules(base.quality_rules)
    if base.lang:
        language_name(base.lang, "?")


class Runner(Protocol):
    """How a batch runs one question: in this process, or on a Ray cluster."""

    async def run(self, question: BatchQuestion, settings: Settings) -> BatchResult:
        """The question's outcome."""
        ...

    def live_cost(self) -> float | None:
        """The model cost spent so far by questions still running too, when known."""
        ...


class LocalRunner:
    """Questions as tasks of this process over one shared :class:`Services`."""

    def __init__(self, services: Services, emit: ProgressCallback) -> None:
        self.services = services
        self.emit = emit

    async def run(self, question: BatchQuestion, settings: Settings) -> BatchResult:
        return await run_question(question, settings, self.services, self.emit)

    def live_cost(self) -> float | None:
        usage = self.services.llm_usage
        return usage.cost_usd if usage is not None else None


@dataclass
class _Batch:
    """The schedule: which question runs next, under which settings, and when to stop."""

    base: Settings
    runner: Runner
    emit: ProgressCallback
    jobs: int
    max_cost: float | None = None
    max_time: float | None = None
    started: float = field(default_factory=time.monotonic)
    cost: float = 0.0

    def spent(self) -> float:
        live = self.runner.live_cost()
        return max(self.cost, live or 0.0)

    def stop_reason(self) -> str | None:
        """Why no more questions start (a batch budget is spent); None while they may."""
        if self.max_time is not None and time.monotonic() - self.started >= self.max_time:
            return f"batch time budget reached (--batch-max-time {self.max_time:g}s)"
        if self.max_cost is not None and self.spent() >= self.max_cost:
            return f"batch cost budget reached (--batch-max-cost ${self.max_cost:g})"
        return None

    def settings_for(self, question: BatchQuestion) -> Settings:
        """The batch's settings with the question's options and what is left of the
        batch's budgets; ConfigError (the question fails) for an option it may not set."""
        for name in question.options:
            if name not in Settings.model_fields:
                raise ConfigError(f"unknown option {name!r}")
            if name in BATCH_FIELDS:
                raise ConfigError(
                    f"{field_meta(name)['flag']} applies to the whole batch: "
                    "give it on the command line, not per question"
                )
        settings = with_options(self.base, question.options)
        limits: dict[str, Any] = {}
        if settings.fetch_order == "auto":
            # Rank decides a batch's sources: the same whichever downloads finish first
            # and whatever the shared cache (or a Ray worker's own) holds (issue 25).
            limits["fetch_order"] = "rank"
        if self.max_time is not None:
            left = self.max_time - (time.monotonic() - self.started)
            limits["max_time"] = min(settings.max_time or math.inf, max(left, 0.001))
        if self.max_cost is not None:
            left = self.max_cost - self.spent()
            limits["max_cost"] = min(settings.max_cost or math.inf, max(left, 1e-9))
        return with_options(settings, limits) if limits else settings

    async def one(self, question: BatchQuestion) -> BatchResult:
        """Run (or skip, or fail at once) one question."""
        if question.error is not None:
            return failed(question, question.error)
        reason = self.stop_reason()
        if reason is not None:
            return BatchResult(
                question.id, question.question, "skipped", error=reason, line=question.line
            )
        try:
            settings = self.settings_for(question)
        except ConfigError as exc:
            where = f"line {question.line}: " if question.line is not None else ""
            return failed(question, where + str(exc))
        self.emit(Event("question_start", question.question, {"question_id": question.id}))
        result = await self.runner.run(question, settings)
        self.cost += result.cost_usd or 0.0
        return result

    async def results(self, items: list[BatchQuestion]) -> AsyncIterator[BatchResult]:
        """Run every question, ``jobs`` at a time; yield each outcome as it comes."""
        queue: asyncio.Queue[BatchResult | BaseException | None] = asyncio.Queue()
        pending = iter(items)

        async def worker() -> None:
            try:
                for question in pending:  # shared: each question is taken once
                    await queue.put(await self.one(question))
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # fatal for the batch: the consumer raises it
                await queue.put(exc)

        workers = [asyncio.ensure_future(worker()) for _ in range(min(self.jobs, len(items)))]
        ending = asyncio.ensure_future(asyncio.gather(*workers, return_exceptions=True))
        ending.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (item := await queue.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                self._tell(item)
                yield item
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    def _tell(self, result: BatchResult) -> None:
        data = {
            "question_id": result.id,
            "status": result.status,
            "error": result.error,
            "elapsed_s": round(result.elapsed_s, 3),
            "tokens": result.tokens,
            "cost_usd": result.cost_usd,
        }
        message = result.error or result.question
        self.emit(Event(EVENTS[result.status], message, data))


def _questions(
    items: Iterable[str | Mapping[str, Any] | BatchQuestion] | Questions,
) -> list[BatchQuestion]:
    if isinstance(items, Questions):
        return items.items
    return parse_items(items).items


@asynccontextmanager
async def _local_runner(
    base: Settings, jobs: int, emit: ProgressCallback
) -> AsyncIterator[LocalRunner]:
    async with open_services(services_settings(base, jobs), emit, shared=True) as services:
        yield LocalRunner(services, emit)


async def research_many(
    questions: Iterable[str | Mapping[str, Any] | BatchQuestion] | Questions,
    *,
    settings: Settings | None = None,
    on_event: ProgressCallback | None = None,
    jobs: int = DEFAULT_JOBS,
    max_cost: float | None = None,
    max_time: float | None = None,
    ray: bool = False,
    ray_address: str | None = None,
    ray_workers: int | None = None,
    **options: Any,
) -> AsyncGenerator[BatchResult, None]:
    """Research many questions at once; an async iterator of :class:`BatchResult`, each
    yielded as its question finishes (``result.report`` is the question's report)::

        async for result in sleuth.research_many(["What is WAL?", "Why B-trees?"], jobs=4):
            print(result.id, result.status, result.report.markdown if result.report else "")

    ``questions``: texts, or mappings ``{"question": ..., "id": ..., **options}`` where
    ``options`` are settings fields for that question only (``depth``, ``max_sources``,
    ``mode``, ...; not those of :data:`BATCH_FIELDS`). ``options`` here apply to every
    question, over ``settings`` (or the environment). ``jobs`` questions run at once,
    sharing one fetcher, store and model client. ``max_cost`` (USD) and ``max_time``
    (seconds) budget the whole batch: once spent, the questions not started come back
    ``skipped``. A question's own problem makes it ``failed``, never an exception; a
    refused API key, a damaged store or bad options for the whole batch raise.

    ``ray=True`` runs the questions on Ray (``pip install 'sleuth-research[ray]'``): a
    local cluster unless ``ray_address`` names one (or Ray is already initialised),
    ``ray_workers`` worker processes (default: one per CPU of the cluster), each running
    ``jobs`` questions at once.
    """
    if jobs < 1:
        raise ConfigError("jobs must be at least 1")
    base = with_options(settings, options)
    items = _questions(questions)
    emit = on_event or no_progress
    await check_batch_settings(base)
    async with AsyncExitStack() as stack:
        runner: Runner
        if ray or ray_address is not None:
            from sleuth.pipeline.batch.ray import ray_runner

            runner = await stack.enter_async_context(
                ray_runner(
                    services_settings(base, jobs),
                    jobs,
                    address=ray_address,
                    workers=ray_workers,
                    emit=emit,
                )
            )
        else:
            runner = await stack.enter_async_context(_local_runner(base, jobs, emit))
        # Each worker of a Ray cluster runs ``jobs`` at once: the driver keeps them busy.
        width = jobs * getattr(runner, "workers", 1)
        batch = _Batch(base, runner, emit, width, max_cost=max_cost, max_time=max_time)
        async for result in batch.results(items):
            yield result
