"""A batch's questions on a Ray cluster: ``sleuth batch --ray`` / ``research_many(ray=True)``.

Imported only when asked for (``pip install 'sleuth-research[ray]'``). Each worker is a
Ray actor, one per CPU of the cluster by default, spread over its machines: it keeps
:class:`~sleuth.pipeline.context.Services` of its own for as long as the batch runs (its
store, page cache, fetcher and model client) and runs up to ``jobs`` questions at once
in them, as the in-process batch does. The driver keeps the schedule and the budgets
(:mod:`sleuth.pipeline.batch`) and hands each question to the least busy worker; the
results come back to it as each question finishes, and it alone writes the output.

Manners across machines: what the in-process batch shares, each worker has its own.
``--host-delay``, ``--per-host-concurrency`` and the one-request-per-page rule hold per
worker, not across workers: W workers may each start a request to one site within the
same ``--host-delay``, so a site sees at most W times the pace of one sleuth. The page
cache is each worker's store, or one store where ``--home`` points every worker at
shared storage. ``--max-pages-per-host`` is per question wherever it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError

from sleuth.errors import ConfigError
from sleuth.pipeline.batch.one import BatchQuestion, BatchResult, run_question
from sleuth.pipeline.context import Services, open_services
from sleuth.progress import Event, ProgressCallback, no_progress
from sleuth.search.base import get_provider
from sleuth.settings import Settings

__all__ = ["RayRunner", "ray_runner"]

log = logging.getLogger(__name__)

#: Other programs' variables sleuth reads where they are used (not settings: those travel
#: with the questions), handed to the workers with Ray's runtime_env when set here.
_FORWARDED = ("OPENAI_API_KEY", "OLLAMA_HOST", "OLLAMA_CONTEXT_LENGTH", "SLEUTH_DEBUG")
#: Seconds the workers get to close their services at the end before they are killed.
_CLOSE_TIMEOUT = 30.0


class BatchWorker:
    """One Ray worker of a batch (an async actor): services of its own, opened on the
    first question and kept until :meth:`close`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._stack: AsyncExitStack | None = None
        self._services: Services | None = None
        self._opening: asyncio.Lock | None = None

    async def _open(self) -> Services:
        self._opening = self._opening or asyncio.Lock()
        async with self._opening:
            if self._services is None:
                stack = AsyncExitStack()
                self._services = await stack.enter_async_context(
                    open_services(self.settings, no_progress, shared=True)
                )
                self._stack = stack
        return self._services

    async def run(self, question: BatchQuestion, settings: Settings) -> BatchResult:
        """Research one question (see :func:`~sleuth.pipeline.batch.run_question`)."""
        return await run_question(question, settings, await self._open())

    async def close(self) -> None:
        """Close the services (the store, the fetcher, the model client)."""
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = self._services = None


def _environment(settings: Settings) -> dict[str, str]:
    """What of this process's environment the workers need (API keys, Ollama)."""
    names = list(_FORWARDED)
    for provider in settings.search:
        with contextlib.suppress(ConfigError):
            names += getattr(get_provider(provider), "env_keys", ())
    return {name: os.environ[name] for name in names if name in os.environ}


class RayRunner:
    """Hands each question to the least busy of ``actors`` (see the module doc)."""

    def __init__(self, actors: list[Any]) -> None:
        self.actors = actors
        self.workers = len(actors)
        self._busy = [0] * len(actors)

    async def run(self, question: BatchQuestion, settings: Settings) -> BatchResult:
        index = min(range(len(self.actors)), key=self._busy.__getitem__)
        self._busy[index] += 1
        try:
            result: BatchResult = await self.actors[index].run.remote(question, settings)
            return result
        except RayActorError as exc:  # the worker died (killed, out of memory, node lost)
            why = " ".join(str(exc).split())[:300]
            return BatchResult(
                question.id,
                question.question,
                "failed",
                line=question.line,
                error=f"the Ray worker running it died: {why}",
            )
        except RayTaskError as exc:  # a refused key or a damaged store: the batch's end
            raise exc.cause from None
        finally:
            self._busy[index] -= 1

    def live_cost(self) -> float | None:
        """Not known while questions run on other machines."""
        return None


def _connect(address: str | None, env: dict[str, str]) -> bool:
    """Start a local Ray (None) or join the cluster at ``address``; True if this started
    or joined it (and so shuts it down), False when Ray was already initialised here."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        if address is None:
            # 127.0.0.1: a local cluster needs no address of its own (Ray would otherwise
            # find one by opening a socket toward 8.8.8.8).
            ray.init(
                address="local",
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                runtime_env={"env_vars": env},
                log_to_driver=False,
            )
        else:
            ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        where = f"at {address}" if address else "locally"
        message = " ".join(str(exc).split())[:300]
        raise ConfigError(f"cannot start or reach Ray {where}: {message}") from None
    return True


@asynccontextmanager
async def ray_runner(
    settings: Settings,
    jobs: int,
    *,
    address: str | None = None,
    workers: int | None = None,
    emit: ProgressCallback = no_progress,
) -> AsyncIterator[RayRunner]:
    """Workers on Ray for one batch; stopped (and Ray shut down, if started here) at exit.

    ``settings``: the services' settings (each worker's own services); ``workers``:
    how many (default: one per CPU of the cluster), each running ``jobs`` at once.
    """
    env = _environment(settings)
    started = _connect(address, env)
    try:
        cpus = float(ray.cluster_resources().get("CPU", 1.0))  # type: ignore[no-untyped-call]
        count = workers or max(1, int(cpus))
        actor = ray.remote(BatchWorker).options(
            # Mostly waiting on the network: a share of a CPU each, so that more workers
            # than CPUs still start; spread over the cluster's machines.
            num_cpus=min(1.0, cpus / count),
            max_concurrency=jobs,
            max_restarts=-1,
            scheduling_strategy="SPREAD",
            runtime_env={"env_vars": env},
        )
        actors = [actor.remote(settings) for _ in range(count)]
        emit(
            Event(
                "info",
                f"Ray: {count} workers on {cpus:g} CPUs, {jobs} questions at once each",
                {"workers": count, "cpus": cpus},
            )
        )
        try:
            yield RayRunner(actors)
        finally:
            await _stop(actors)
    finally:
        if started:
            ray.shutdown()


async def _stop(actors: list[Any]) -> None:
    closing = [a.close.remote() for a in actors]
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.gather(*closing, return_exceptions=True), _CLOSE_TIMEOUT)
    for a in actors:
        with contextlib.suppress(Exception):
            ray.kill(a)
