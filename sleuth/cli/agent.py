"""``sleuth agent "GOAL"``: agent mode on the command line.

The settings options (``--model``, ``--search``, ``--home``, ``--max-rounds``,
``--round-minutes``, ``--max-tool-calls``, ``--max-time``, ...) come from the
settings table like every other command's; ``--resume``, ``--session`` and
``--report`` are the agent's own. Progress goes to stderr; the result (status, the
agent's answer and its dashboard, and the report with ``--report``) to stdout or
``--output``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from sleuth._extras import extra_needed
from sleuth.cli._common import (
    GroupedCommand,
    Option,
    Progress,
    check_output,
    emit,
    run_interruptible,
)
from sleuth.cli._logs import verbose_option
from sleuth.errors import ConfigError

__all__ = ["agent_command"]

EXIT_DONE, EXIT_STOPPED = 0, 1


def _run_agent(
    goal: str | None,
    resume: str | None,
    session: str | None,
    report: bool,
    quiet: bool,
    values: dict[str, Any],
) -> int:
    from sleuth.settings import load_settings

    explicit = {k: v for k, v in values.items() if v is not None}
    if resume is None and not goal:
        raise ConfigError("give a GOAL to research, or --resume WORKSPACE")
    if resume is not None and goal:
        raise ConfigError("--resume continues the search's recorded goal; do not give a GOAL")
    if resume is not None and session is not None:
        raise ConfigError("--session names a new search's folder; --resume takes a workspace")
    checked = load_settings(explicit)  # bad options fail here, before anything starts
    if checked.format == "html":
        raise ConfigError("sleuth agent writes markdown or json (--format html is for reports)")
    if checked.output is not None:
        check_output(checked.output)
    with extra_needed("llm", "sleuth agent"):  # the agent talks to its model through openai
        from sleuth.agent import web_search  # heavy imports only once the input is valid

    progress = Progress(quiet)
    try:
        result = run_interruptible(
            web_search(
                goal or None,
                resume=resume,
                session=session or "default",
                report=report,
                on_event=progress,
                **explicit,
            ),
            progress,
        )
    finally:
        progress.close()
    if checked.format == "json":
        text = json.dumps(result.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"
    else:
        text = result.to_markdown()
    emit(text, checked.output, "result", quiet)
    return EXIT_DONE if result.done else EXIT_STOPPED


def agent_command(settings_options: Callable[[str], list[click.Option]]) -> click.Command:
    """The ``agent`` command, with ``settings_options("agent")`` (the settings table's
    options that agent mode uses)."""

    def callback(
        goal: str | None,
        resume: str | None,
        session: str | None,
        report: bool | None,
        quiet: bool | None,
        **values: Any,
    ) -> int:
        return _run_agent(goal, resume, session, bool(report), bool(quiet), values)

    return GroupedCommand(
        "agent",
        lead="Agent mode",
        callback=callback,
        params=[
            click.Argument(["goal"], required=False),
            Option(
                ["--resume"],
                metavar="WORKSPACE",
                default=None,
                group="Agent mode",
                help="Continue the interrupted search in this workspace folder "
                "(its goal and settings are kept; options given here win).",
            ),
            Option(
                ["--session"],
                default=None,
                metavar="NAME",
                group="Agent mode",
                help="Folder under <home>/workspaces for the new search. [default: default]",
            ),
            Option(
                ["--report"],
                is_flag=True,
                default=None,
                group="Agent mode",
                help="Also write a cited report from the pages the agent read.",
            ),
            *settings_options("agent"),
            Option(
                ["--quiet", "-q"],
                is_flag=True,
                flag_value=True,
                default=None,
                group="Output",
                help="No progress messages on stderr.",
            ),
            verbose_option(),
        ],
        short_help="A model researches GOAL in rounds, with tools.",
        help="Agent mode: a model researches GOAL in rounds with search, browse, file and "
        "dashboard tools, in a sandboxed workspace, and prints its result and dashboard.",
        epilog="Exit codes: 0 the agent finished, 1 it was stopped by a limit or failed "
        "(its dashboard is still printed), 2 bad input.",
    )
