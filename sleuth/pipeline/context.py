"""What a research run works with: the run's own context, and the checks before it.

The services runs may share (:class:`~sleuth.pipeline.services.Services`,
:func:`~sleuth.pipeline.services.open_services`) are :mod:`sleuth.pipeline.services`'s,
re-exported here.

:class:`RunContext` is one run: its topic, settings and budget, its record in the store,
its view of the model (a :class:`~sleuth.llm.run.RunLLM` around the shared client), and
its :class:`~sleuth.pipeline.tally.Tally` (what it did, folded in by its driver).
:func:`open_run` makes one (opening its own services unless it is given some) and records
how the run ended. :func:`check_run` makes every check a run makes before it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sleuth._question import MAX_QUESTION_CHARS, clean_question
from sleuth.budget import Budget
from sleuth.critical import timeline_of
from sleuth.errors import StoreCorruptError
from sleuth.lang import language_name
from sleuth.llm.run import RunLLM
from sleuth.models import Plan, Report, SearchHit
from sleuth.pipeline.passages import Passages
from sleuth.pipeline.recorder import RunRecord, StoreSession
from sleuth.pipeline.services import SERVICE_FIELDS, Services, check_settings, open_services
from sleuth.pipeline.tally import Tally
from sleuth.progress import Event, ProgressCallback
from sleuth.search import build_providers, make_search_client
from sleuth.settings import Settings
from sleuth.stages.rank import QualityRule, load_rules
from sleuth.stages.read import PageReader
from sleuth.timeline import Timing, telling

if TYPE_CHECKING:
    from sleuth.fetch import RunFetcher

__all__ = [
    "MAX_QUESTION_CHARS",
    "SERVICE_FIELDS",
    "QuestionSearch",
    "RunContext",
    "Services",
    "check_run",
    "check_settings",
    "clean_question",
    "documents_search",
    "open_run",
    "open_services",
]

#: The longest the model's client and planning wait for the question's search to be sent
#: (a loopback or nearby engine takes milliseconds; DNS or a connect may take longer).
SEND_WAIT_S = 2.0


@dataclass
class QuestionSearch:
    """The question's own search, sent before the model's SDK is loaded.

    A quick research with a model searches the question as asked at once, while the
    model's client loads and the model plans: the user's first request goes out without
    waiting for either. ``sent`` is set once its request is written (or it ended).
    """

    query: str
    task: asyncio.Future[list[SearchHit]]
    sent: asyncio.Event

    async def on_the_wire(self) -> None:
        """Wait until the search's request has been sent (or the search ended: its task
        sets ``sent`` when done), at most :data:`SEND_WAIT_S`: a search engine slow to
        connect does not hold up the model."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.sent.wait(), SEND_WAIT_S)


def documents_search(settings: Settings) -> Settings:
    """``settings`` with the providers documents mode implies.

    With ``--docs`` the ``local`` provider is always searched; web providers only
    when ``--search`` (or ``SLEUTH_SEARCH``) names them, so documents mode alone
    never touches the network.
    """
    if settings.docs is None:
        return settings
    if "search" not in settings.model_fields_set:
        search = ["local"]
    elif "local" in settings.search:
        return settings
    else:
        search = ["local", *settings.search]
    return settings.model_copy(update={"search": search})


async def check_run(question: str, settings: Settings) -> None:
    """Every check a run of ``question`` makes before it is recorded or sends anything.

    :class:`~sleuth.errors.ConfigError` for bad input: an unknown provider or one
    without its API key, a missing documents folder, bad quality rules, a bad
    ``--lang``. For an edge that refuses a bad request before accepting it (the web
    page's ``POST /api/runs``), rather than letting the run fail after it started.
    """
    settings = documents_search(settings)
    check_settings(settings)
    load_rules(settings.quality_rules)
    language_name(settings.lang, question)
    async with make_search_client(settings) as probe:
        build_providers(settings, probe)


@dataclass
class RunContext:
    """One run: what it is, the services it works with, and the record of what it did.

    ``services`` are what it may share with other runs (store session, fetcher, search
    client, LLM client); ``record`` is its own record in the store. ``llm`` (the run's
    model, a :class:`~sleuth.llm.run.RunLLM` around the services' client) is None
    without a model: each stage then takes its no-LLM path. ``tally`` is what the run
    did so far, as its driver folds in each step's result (searches, the model's picks,
    the pages a cache answered, failures).
    """

    topic: str
    settings: Settings
    emit: ProgressCallback
    budget: Budget
    rules: tuple[QualityRule, ...]
    services: Services
    record: RunRecord = field(default_factory=RunRecord)
    started: float = field(default_factory=time.monotonic)
    llm: RunLLM | None = None
    tally: Tally = field(default_factory=Tally)
    #: What picks a page's passages for the run record: the question and the queries of
    #: the plan searched last.
    passage_queries: list[str] = field(default_factory=list)
    #: The question's own search, when it was sent before the model loaded.
    question_search: QuestionSearch | None = None
    report: Report | None = None
    #: The run's page reader and its view of the fetcher (each made on first use).
    reader: PageReader | None = None
    run_fetcher: RunFetcher | None = None
    #: Every request of the run, timed (made current for the run's tasks by open_run).
    timing: Timing = field(default_factory=Timing)
    #: Each page's best passages, picked as it arrives (see ``Fetching.read_queries``).
    passages: Passages = field(default_factory=Passages)

    def __post_init__(self) -> None:
        self.passage_queries = self.passage_queries or [self.topic]

    @property
    def run_id(self) -> str | None:
        """The run's id in the store; None under ``--no-store``."""
        return self.record.run_id

    @property
    def session(self) -> StoreSession:
        """The store's part (caches, documents index), shared through the services."""
        return self.services.store

    async def fetcher(self) -> RunFetcher:
        """The run's view of the services' fetcher: its page caps and cache hits are the
        run's own, while pacing, slots and caches are shared with any other run."""
        if self.run_fetcher is None:
            self.run_fetcher = (await self.services.fetcher()).for_run()
        return self.run_fetcher

    def page_reader(self) -> PageReader | None:
        """The run's page reader (made on first use); None without a model."""
        if self.llm is not None and self.reader is None:
            self.reader = PageReader(self.llm, self.topic, self.settings.read_tokens)
        return self.reader

    def summarises_as_read(self) -> bool:
        """Whether the model summarises each page as it arrives: ``--summaries always``,
        and deep mode, whose sections read more sources than fit one call. Otherwise the
        read stage asks for summaries only when the sources' passages do not fit the
        report call."""
        return self.settings.summaries == "always" or self.settings.mode == "deep"

    def record_stage(self, stage: str, payload: Any) -> None:
        """Append one stage output to the run record, as it happens (no-op without a store)."""
        self.record.record(stage, payload)

    def record_plan(self, plan: Plan) -> None:
        """Record the plan about to be searched; its queries pick the passages the run
        record keeps of each page from now on."""
        recorder = self.record.recorder
        if recorder is not None:
            recorder.plan(plan)
            self.passage_queries = [self.topic, *plan.queries]

    def done(self, report: Report) -> Report:
        """``report`` with the run id and cache counts: the run's result, kept in the store."""
        stats = report.stats.model_copy(
            update={
                "cached_searches": self.tally.cached_searches,
                "cached_fetches": self.tally.cached_fetches,
            }
        )
        hits = {query: [h.url for h in found] for query, found in self.tally.searched.items()}
        timeline = timeline_of(self.timing.spans, self.timing.now(), hits, report)
        self.report = report.model_copy(
            update={"run_id": self.run_id, "stats": stats, "timeline": timeline}
        )
        return self.report


@asynccontextmanager
async def open_run(
    topic: str,
    settings: Settings,
    emit: ProgressCallback,
    *,
    resume_id: str | None = None,
    services: Services | None = None,
    with_model: Callable[[RunContext], Awaitable[None] | None] | None = None,
) -> AsyncIterator[RunContext]:
    """Set up what a run needs: quality rules, budget, the run record, the documents index,
    the model; with its own :class:`Services` unless ``services`` are given.

    ``with_model(ctx)`` is called once a model is known to be configured, before its SDK
    loads (the quick research sends the question's search there); what it returns, if
    anything, is awaited before the SDK loads.

    The run is recorded ``done`` once the body has passed its report to
    :meth:`RunContext.done`, ``interrupted`` on Ctrl-C or cancellation, ``failed``
    on any other error. ``resume_id`` continues an interrupted run under its own id.
    """
    settings = documents_search(settings)
    rules = load_rules(settings.quality_rules)
    # Bad input (a provider without its key, a bad --lang) is one line before anything
    # is said, recorded or sent.
    language = language_name(settings.lang, topic)
    async with make_search_client(settings) as probe:
        build_providers(settings, probe)
    async with AsyncExitStack() as stack:
        if services is None:
            services = await stack.enter_async_context(
                open_services(settings, emit, resumed=resume_id is not None)
            )
        record = await asyncio.to_thread(
            RunRecord.start, services.store.store, topic, settings, resume_id
        )
        timing = Timing()
        ctx = RunContext(
            topic=topic,
            settings=settings,
            emit=emit,
            budget=Budget(settings),
            rules=rules,
            services=services,
            record=record,
            started=timing.t0,
            timing=timing,
        )
        timing.listener, timing.record = telling(emit), record.record
        with timing.activate():
            async with _finished(ctx):
                try:
                    await _prepare(ctx, language, with_model)
                    yield ctx
                finally:
                    await _cancel(ctx.question_search)


async def _cancel(search: QuestionSearch | None) -> None:
    """Stop the question's search if the run ends before it does (an early exit)."""
    if search is not None and not search.task.done():
        search.task.cancel()
        await asyncio.gather(search.task, return_exceptions=True)


async def _prepare(
    ctx: RunContext,
    language: str,
    with_model: Callable[[RunContext], Awaitable[None] | None] | None = None,
) -> None:
    """Say the run started, bring the documents index up to date, open the model."""
    record, services, emit = ctx.record, ctx.services, ctx.emit
    if record.run_id is not None:
        verb = "resumed" if record.resumed else "started"
        emit(Event("info", f"run {record.run_id} {verb}", {"run_id": record.run_id}))
    ctx.tally.failures += await services.index_documents()
    if services.store.index is not None:
        record.record("documents", services.store.index_record())
        emit(services.store.index_event())
    # The model, when one is configured or a local Ollama answers (else None).
    chosen = (lambda: with_model(ctx)) if with_model is not None else None
    client = await services.llm_client(ctx.tally.failures, chosen)
    if client is not None:
        ctx.llm = RunLLM(
            client,
            question=ctx.topic,
            language=language,
            budget=ctx.budget,
            emit=emit,
            failures=ctx.tally.failures,
        )


@asynccontextmanager
async def _finished(ctx: RunContext) -> AsyncIterator[None]:
    """Record how the run ended: done (with its report), interrupted or failed."""
    record, session = ctx.record, ctx.services.store
    try:
        yield
    except (KeyboardInterrupt, asyncio.CancelledError):
        ctx.timing.flush()
        record.finish("interrupted")
        raise
    except BaseException as exc:
        ctx.timing.flush()
        record.finish("failed", error=f"{type(exc).__name__}: {exc}")
        raise
    ctx.timing.flush()
    if ctx.report is None:
        record.finish("failed", error="the run ended without a report")
        return
    try:
        session.check_store()
    except StoreCorruptError as exc:
        record.finish("failed", error=str(exc))
        raise
    record.finish("done", ctx.report)
