"""``sleuth research QUESTION`` (and ``sleuth QUESTION``), and ``sleuth deep QUESTION``.

``sleuth deep`` is ``sleuth research --mode deep``: a tree of sub-questions and a long,
sectioned report (:mod:`sleuth.pipeline.deep`).

Values are validated by the settings model, and every user error becomes one line on
stderr with exit code 2, never a traceback.
"""

from __future__ import annotations

from typing import Any

import click

from sleuth._question import clean_question
from sleuth.cli._common import (
    EXIT_NO_SOURCES,
    EXIT_OK,
    GroupedCommand,
    Option,
    Progress,
    check_output,
    emit,
    run_interruptible,
    settings_options,
)
from sleuth.cli._logs import verbose_option
from sleuth.cli._progress import pages_wanted
from sleuth.report import render_report

__all__ = ["deep_command", "research_command"]


def _run_research(question: str, quiet: bool, values: dict[str, Any]) -> int:
    clean_question(question)  # a bad question is refused before the heavy imports below
    from sleuth.settings import load_settings  # pydantic: not needed for --help

    settings = load_settings(values)
    if settings.output is not None:
        check_output(settings.output)
    from sleuth.pipeline.quick import research  # heavy imports only once the input is valid

    progress = Progress(quiet, wanted=pages_wanted(settings))
    try:
        report = run_interruptible(
            research(question, settings=settings, on_event=progress), progress, values.get("home")
        )
    finally:
        progress.close()
    emit(render_report(report, settings.format), settings.output, "report", quiet)
    return EXIT_OK if report.sources else EXIT_NO_SOURCES


def _research_callback(question: str, quiet: bool | None, **values: Any) -> int:
    return _run_research(question, bool(quiet), values)


def _quiet_option() -> Option:
    return Option(
        ["--quiet", "-q"],
        is_flag=True,
        flag_value=True,
        default=None,
        group="Output",
        help="No progress messages on stderr.",
    )


EXIT_CODES = (
    "Exit codes: 0 report written, 1 no source could be read, 2 bad input, "
    "70 internal error (a bug: please report it), 130 interrupted (Ctrl-C; "
    "'sleuth resume ID' finishes the run)."
)

research_command = GroupedCommand(
    "research",
    callback=_research_callback,
    params=[
        click.Argument(["question"]),
        *settings_options("research"),
        _quiet_option(),
        verbose_option(),
    ],
    help="Research QUESTION on the web and print a cited Markdown report "
    "(sleuth QUESTION is short for sleuth research QUESTION).",
    short_help="Research a question, write a cited report (the default).",
    epilog=EXIT_CODES,
)


def _deep_callback(question: str, quiet: bool | None, **values: Any) -> int:
    return _run_research(question, bool(quiet), {**values, "mode": "deep"})


deep_command = GroupedCommand(
    "deep",
    callback=_deep_callback,
    params=[
        click.Argument(["question"]),
        *settings_options("deep"),  # all but --mode: the command is the mode
        _quiet_option(),
        verbose_option(),
    ],
    help=(
        "Deep research: split QUESTION into sub-questions (--breadth), research them "
        "and their follow-ups (--levels) in parallel, and write a long report with a "
        "table of contents, sections and one numbering of sources. Same as "
        "'sleuth --mode deep QUESTION', with its own defaults: --max-sources 20 (up to "
        "60) and --words 3000."
    ),
    short_help="Deep research: sub-questions, follow-ups, a long report.",
    epilog=EXIT_CODES,
)
