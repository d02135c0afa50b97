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
import ipaddress
import logging
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

# Ray picks a local node's address when it is imported: on Linux, "127.0.0.1" is then
# replaced by the machine's routable address and every server of the node binds all
# interfaces. Ray's own switch for macOS and Windows (where local clusters stay on
# loopback) does the same here; set before Ray is imported, unless the user set it.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import ray
from ray.exceptions import RayActorError, RayTaskError

from sleuth.errors import ConfigError, LLMAuthError, StoreCorruptError
from sleuth.models import Report
from sleuth.pipeline.batch.one import (
    BatchQuestion,
    BatchResult,
    failed,
    run_question,
)
from sleuth.pipeline.context import Services, open_services
from sleuth.progress import Event, ProgressCallback, no_progress
from sleuth.search.base import get_provider
from sleuth.settings import Settings

__all__ = ["MAX_RESULT_BYTES", "RayRunner", "checked_result", "ray_runner", "start_local"]

log = logging.getLogger(__name__)

#: Other programs' variables sleuth reads where they are used (not settings: those travel
#: with the questions), handed to the workers with Ray's runtime_env when set here.
_FORWARDED = ("OPENAI_API_KEY", "OLLAMA_HOST", "OLLAMA_CONTEXT_LENGTH", "SLEUTH_DEBUG")
#: Seconds the workers get to close their services at the end before they are killed.
_CLOSE_TIMEOUT = 30.0
#: Largest result a worker may return: its report as JSON (a 10,000-word deep report
#: with 60 sources and their passages is under 2 MB).
MAX_RESULT_BYTES = 8 << 20
#: Longest error text a worker may return.
_MAX_ERROR_CHARS = 2000


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
            cls = get_provider(provider)
            names += [*cls.env_keys, *cls.optional_env_keys]
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
            returned = await self.actors[index].run.remote(question, settings)
        except RayActorError as exc:  # the worker died (killed, out of memory, node lost)
            why = " ".join(str(exc).split())[:300]
            return failed(question, f"the Ray worker running it died: {why}")
        except RayTaskError as exc:
            if isinstance(exc.cause, LLMAuthError | StoreCorruptError):
                raise exc.cause from None  # a refused key or a damaged store: the batch's end
            why = " ".join(f"{type(exc.cause).__name__}: {exc.cause}".split())[:300]
            return failed(question, f"the Ray worker running it failed: {why}")
        finally:
            self._busy[index] -= 1
        return checked_result(question, returned)

    def live_cost(self) -> float | None:
        """Not known while questions run on other machines."""
        return None


def checked_result(question: BatchQuestion, returned: object) -> BatchResult:
    """What a worker returned for ``question``, as the driver records it: a
    :class:`BatchResult` of that question (its id and text), done (or no_sources) with a
    report or failed with an error, its report at most :data:`MAX_RESULT_BYTES` as JSON and valid
    as a report; anything else is that question's failure, saying why. The record is
    made anew from the checked parts: nothing else of the worker's object is kept."""

    def bad(why: str) -> BatchResult:
        log.warning("question %s: %s", question.id, why)
        return failed(question, f"the Ray worker returned {why}")

    if not isinstance(returned, BatchResult):
        return bad(f"something other than a result ({type(returned).__name__})")
    if returned.id != question.id or returned.question != question.question:
        return bad(f"the result of another question (id {str(returned.id)[:80]!r})")
    if returned.status not in ("done", "no_sources", "failed"):
        return bad(f"a result whose status is {str(returned.status)[:20]!r}")
    report = None
    if returned.status != "failed":
        if not isinstance(returned.report, Report):
            return bad(f"a {returned.status} result without a report")
        try:
            data = returned.report.model_dump_json()
            if len(data) > MAX_RESULT_BYTES:
                return bad(f"a report of {len(data):,} bytes (at most {MAX_RESULT_BYTES:,})")
            report = Report.model_validate_json(data)
        except ValueError as exc:
            return bad(f"a report that is not valid ({type(exc).__name__})")
    numbers = (returned.elapsed_s, returned.tokens, returned.cost_usd or 0.0)
    if not all(isinstance(x, int | float) and 0 <= x < 1e15 for x in numbers):
        return bad("a result whose time, tokens or cost are not numbers")
    error = None if returned.error is None else str(returned.error)[:_MAX_ERROR_CHARS]
    if returned.status == "failed" and not error:
        return bad("a failed result without its reason")
    return BatchResult(
        question.id,
        question.question,
        returned.status,
        report=report,
        error=error,
        elapsed_s=float(returned.elapsed_s),
        tokens=int(returned.tokens),
        cost_usd=None if returned.cost_usd is None else float(returned.cost_usd),
        line=question.line,
    )


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return address == "localhost"


def start_local(env: dict[str, str] | None = None, *, num_cpus: int | None = None) -> None:
    """Start a local Ray for this process, every server of it on loopback only.

    127.0.0.1 as the node's address (else Ray finds one by opening a socket toward
    8.8.8.8), and the switch set when this module was imported, without which Ray binds
    all interfaces anyway (see the top of the module). Ray 2.59 and later also ask a
    token of every client of a local cluster. ConfigError when Ray took another address
    (it was imported before this module, or the switch is set otherwise): the cluster is
    shut down at once and the batch does not run.
    """
    ray.init(
        address="local",
        num_cpus=num_cpus,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        runtime_env={"env_vars": env or {}},
        log_to_driver=False,
    )
    node = str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]
    if not _loopback(node):
        ray.shutdown()
        raise ConfigError(
            f"the local Ray took the address {node}, where it would listen beyond this "
            "machine; set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 in the environment (Ray reads "
            "it when it is imported), or start Ray yourself and pass --ray-address"
        )


def _connect(address: str | None, env: dict[str, str]) -> bool:
    """Start a local Ray (None) or join the cluster at ``address``; True if this started
    or joined it (and so shuts it down), False when Ray was already initialised here."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        if address is None:
            start_local(env)
        else:
            ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False)
    except ConfigError:
        raise
    except Exception as exc:  # Ray's own: a start that timed out is a bare Exception
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
