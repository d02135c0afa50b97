"""``web_search``: set up an agent search (or take one back), run it, write its output."""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleuth.agent.dashboard import Dashboard
from sleuth.agent.loop import AgentLoop, RunState, replay
from sleuth.agent.result import AgentResult, AgentWork
from sleuth.agent.tools import Toolbox
from sleuth.agent.workspace import (
    DASHBOARD,
    HISTORY,
    REPORT,
    RESULT,
    Workspace,
    WorkspaceError,
    check_session,
    new_workspace,
)
from sleuth.errors import ConfigError
from sleuth.progress import Event, ProgressCallback, no_progress
from sleuth.settings import Settings, load_settings, with_options

__all__ = ["RECORDED_SETTINGS", "web_search"]

log = logging.getLogger(__name__)

#: Settings kept in the start record, so ``--resume`` runs the search as it began
#: (options given again on resume win). API keys are never settings, never kept.
RECORDED_SETTINGS = (
    "round_minutes",
    "max_rounds",
    "max_tool_calls",
    "max_time",
    "max_tokens",
    "max_cost",
    "agent_protocol",
    "search",
    "searxng_url",
    "results_per_query",
    "allow_private_urls",
    "fetch_engine",
    "model",
    "base_url",
    # the rules of where it may go hold across a resume too
    "allow_domains",
    "deny_domains",
    "respect_robots",
    "host_delay",
    "max_pages_per_host",
)


@dataclass
class _Search:
    """A workspace, its dashboard and its state, new or taken back from disk."""

    workspace: Workspace
    dashboard: Dashboard
    state: RunState
    settings: Settings
    temp_home: Path | None = None

    @property
    def temporary(self) -> bool:
        """True with --no-store: the workspace is deleted when the search ends."""
        return self.temp_home is not None


def _open_resumed(path: str | Path, settings: Settings | None, options: dict[str, Any]) -> _Search:
    folder = Path(path).expanduser()
    if not (folder / HISTORY).is_file():
        raise ConfigError(
            f"cannot resume {folder}: no {HISTORY} there (give the workspace "
            "folder that a previous 'sleuth agent' printed)"
        )
    workspace = Workspace(folder)
    state = replay(workspace.history())
    if settings is None:
        recorded = {k: v for k, v in state.limits.items() if k in RECORDED_SETTINGS}
        settings = load_settings({**recorded, **options})
    else:
        settings = with_options(settings, options)
    try:
        text = workspace.read_text(DASHBOARD)
    except OSError as exc:  # a folder of that name, made by an older sleuth's agent
        raise ConfigError(
            f"cannot resume {folder}: {DASHBOARD} cannot be read ({exc.strerror or exc})"
        ) from None
    dashboard = Dashboard.parse(text) if text else Dashboard.initial(workspace.label)
    return _Search(workspace, dashboard, state, settings)


def _open_new(goal: str, session: str, settings: Settings) -> _Search:
    temp_home = Path(tempfile.mkdtemp(prefix="sleuth-agent-")) if settings.no_store else None
    if temp_home is not None:
        home = temp_home
    else:
        from sleuth.store.db import default_home

        home = settings.home or default_home()
    try:
        workspace = new_workspace(home, session)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the agent's workspace under {home}: {exc.strerror or exc}"
        ) from None
    dashboard = Dashboard.initial(workspace.label)
    workspace.write_text(DASHBOARD, dashboard.text)
    limits = settings.model_dump(mode="json", include=set(RECORDED_SETTINGS))
    workspace.append_history(
        {
            "type": "start",
            "t": round(time.time(), 3),
            "goal": goal,
            "session": session,
            "limits": limits,
        }
    )
    state = RunState(goal=goal, session=session, limits=limits)
    return _Search(workspace, dashboard, state, settings, temp_home=temp_home)


async def _llm_client(settings: Settings, emit: ProgressCallback) -> Any:
    from sleuth.llm.client import LLMClient
    from sleuth.llm.run import choose_model

    # The model a research would use (the settings, else a local Ollama), or none.
    config = (await choose_model(settings)).config
    if config is None:
        raise ConfigError(
            "agent mode needs a model: set --base-url (SLEUTH_BASE_URL) or "
            "OPENAI_API_KEY, or run Ollama" + (" (and drop --no-llm)" if settings.no_llm else "")
        )
    return LLMClient(config, progress=emit)


@contextlib.asynccontextmanager
async def _services(settings: Settings) -> AsyncIterator[tuple[list[Any], Any]]:
    """The search providers (checked: ProviderError before any round) and the fetcher.

    Both sit behind the run store, as in a research: a page or search the store
    holds fresh costs no request (``--refresh`` re-asks, ``--no-store`` skips it).
    """
    from sleuth.fetch import Fetcher
    from sleuth.pipeline.cached import CachedProvider, StorePageCache
    from sleuth.search import build_providers, make_search_client
    from sleuth.store import Store, default_home

    store = None if settings.no_store else Store(settings.home or default_home())
    try:
        async with make_search_client(settings) as client:
            providers = build_providers(settings, client)
            page_cache = None
            if store is not None:
                providers = [CachedProvider.for_run(p, store, settings) for p in providers]
                page_cache = StorePageCache.for_run(store, settings)
            async with Fetcher(settings, cache=page_cache) as fetcher:
                yield providers, fetcher
    finally:
        if store is not None:
            store.close()
            if store.failure is not None:  # full or damaged: said once, not once per page
                log.warning("%s; this search's cache is incomplete", store.failure)


def _result(search: _Search, status: str, reason: str, result: str, protocol: str) -> AgentResult:
    state = search.state
    done = {"status", "reason", "result", "protocol", "elapsed_s"}  # said here, as it ended
    return AgentResult(
        **state.model_dump(include=set(AgentWork.model_fields) - done),
        status=status,  # type: ignore[arg-type]
        reason=reason,
        result=result,
        dashboard=search.dashboard.text,
        workspace=None if search.temporary else str(search.workspace.root),
        elapsed_s=round(state.elapsed_s, 3),
        protocol="json" if protocol == "json" else "tools",
    )


async def web_search(
    goal: str | None = None,
    *,
    resume: str | Path | None = None,
    session: str = "default",
    report: bool = False,
    settings: Settings | None = None,
    on_event: ProgressCallback | None = None,
    clock: Callable[[], float] = time.monotonic,
    **options: Any,
) -> AgentResult:
    """Research ``goal`` with the agent and return an :class:`AgentResult`.

    The agent works in rounds in a workspace under ``<home>/workspaces/<session>/``
    (see the agent mode guide, docs/guides/agent.md). ``options`` are settings fields
    (``max_rounds=5``, ``round_minutes=10``, ``max_time="2h"``, ``search="searxng"``,
    ``model=...``) applied over ``settings`` (or over the environment).
    ``resume=<workspace folder>`` continues an interrupted search instead of starting
    one: its goal and recorded settings are taken from its history, ``options`` win.
    ``report=True`` adds a cited report written from the pages the agent read.
    ``clock`` (seconds, monotonic) is for tests. Raises ConfigError for bad input,
    a missing model or bad search settings, before any round runs.
    """
    emit = on_event or no_progress
    resumed: _Search | None = None
    if resume is not None:
        if goal is not None:
            raise ConfigError("--resume continues the recorded goal; do not give a goal too")
        resumed = _open_resumed(resume, settings, options)
        settings, state = resumed.settings, resumed.state
        if state.status in ("finished", "dashboard_complete"):
            # Already over: resuming it again just gives its result back.
            return _result(resumed, state.status, state.reason, state.result, state.protocol or "")
    else:
        if goal is None:
            raise ConfigError("give a goal to research (or resume a workspace)")
        settings = with_options(settings, options)
        from sleuth.pipeline.context import clean_question

        goal = clean_question(goal)
        check_session(session)
    # The model and the search providers are checked before a workspace is made.
    async with await _llm_client(settings, emit) as llm, _services(settings) as services:
        search = resumed or _open_new(goal or "", session, settings)
        try:
            return await _run(search, llm, services, report, emit, clock)
        finally:
            if search.temp_home is not None:
                shutil.rmtree(search.temp_home, ignore_errors=True)


async def _run(
    search: _Search,
    llm: Any,
    services: tuple[list[Any], Any],
    want_report: bool,
    emit: ProgressCallback,
    clock: Callable[[], float],
) -> AgentResult:
    state, workspace = search.state, search.workspace
    if state.status is not None or state.rounds:
        workspace.append_history({"type": "resume", "t": round(time.time(), 3)})
        state.consecutive_failures = 0
        state.status = None
    emit(Event("info", f"workspace {workspace.root}", {"workspace": str(workspace.root)}))
    providers, fetcher = services
    toolbox = Toolbox(
        workspace=workspace,
        dashboard=search.dashboard,
        settings=search.settings,
        providers=providers,
        fetcher=fetcher,
    )
    toolbox.visited, toolbox.queries = list(state.pages), list(state.queries)
    model = await llm.resolve_model()
    loop = AgentLoop(
        state=state,
        settings=search.settings,
        workspace=workspace,
        dashboard=search.dashboard,
        toolbox=toolbox,
        llm=llm,
        model=model,
        context_window=llm.context_window("agent"),
        emit=emit,
        clock=clock,
    )
    toolbox.page_chars = loop.page_chars(state.goal, search.dashboard.text)
    status, reason, result = await loop.run()
    workspace.append_history(
        {
            "type": "finish",
            "t": round(time.time(), 3),
            "status": status,
            "reason": reason,
            "result": result,
        }
    )
    outcome = _result(search, status, reason, result, loop.protocol)
    if want_report:
        outcome = await _with_report(outcome, search, toolbox, emit)
    problem = _keep(workspace, RESULT, outcome.to_markdown())
    if problem is not None:  # the result is still returned (and printed): never lost
        outcome = outcome.model_copy(update={"result_note": problem})
        emit(Event("info", problem, {"file": RESULT}))
    emit(
        Event(
            "agent",
            f"{status}: {reason} · {outcome.summary_line()}",
            {
                "status": status,
                "rounds": outcome.rounds,
                "tool_calls": outcome.tool_calls,
                "tokens": outcome.tokens,
            },
        )
    )
    return outcome


async def _with_report(
    outcome: AgentResult, search: _Search, toolbox: Toolbox, emit: ProgressCallback
) -> AgentResult:
    from sleuth.agent.report import write_report

    try:
        markdown, note = await write_report(
            search.state.goal, search.settings, outcome.pages, outcome.queries, toolbox, emit
        )
    except WorkspaceError as exc:  # pragma: no cover - the workspace vanished under us
        return outcome.model_copy(update={"report_note": f"no report: {exc}"})
    if markdown:
        problem = _keep(search.workspace, REPORT, markdown)
        if problem is not None:
            note = f"{note}; {problem}" if note else problem
            emit(Event("info", problem, {"file": REPORT}))
    return outcome.model_copy(update={"report": markdown or None, "report_note": note})


def _keep(workspace: Workspace, name: str, text: str) -> str | None:
    """Write one of the search's output files; what went wrong, instead of raising.

    Something can stand where the file goes (a folder of that name, made by an older
    sleuth's agent or by hand; a full disk): the output must not be lost to it.
    """
    try:
        workspace.write_text(name, text)
    except OSError as exc:
        return (
            f"{name} was not written to the workspace ({exc.strerror or exc}); "
            "the result is in this output"
        )
    return None
