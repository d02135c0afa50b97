"""``sleuth runs``, ``sleuth show``, ``sleuth resume`` and ``sleuth cache clear``.

The run store's commands. Each takes ``--home`` (default ``SLEUTH_HOME``, else the
user cache folder). An unknown run id, or a home that cannot be used, is one line
on stderr and exit code 2, like every other bad input.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sleuth._format import duration
from sleuth.cli._common import (
    EXIT_NO_SOURCES,
    EXIT_OK,
    Progress,
    check_output,
    emit,
    run_interruptible,
)
from sleuth.cli._logs import verbose_option
from sleuth.cli._progress import pages_wanted
from sleuth.errors import ConfigError, SleuthError
from sleuth.report import render_report

if TYPE_CHECKING:
    from sleuth.models import Report
    from sleuth.store import RunInfo, RunSummary, Store

__all__ = ["format_runs", "run_commands"]

_QUESTION_WIDTH = 60


def _home(home: str | None) -> Path:
    from sleuth.settings import load_settings
    from sleuth.store import default_home

    return load_settings({"home": home}).home or default_home()


def _open(home: str | None) -> Store:
    """The store under ``home``, with runs whose process died marked interrupted."""
    from sleuth.store import Store

    store = Store(_home(home))
    store.mark_orphans_interrupted()
    return store


def _can_write(folder: Path) -> bool:
    """Whether ``folder`` (or, while it does not exist, the folder it would be made in)
    can be written."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)


def _open_to_read(home: str | None) -> Store | None:
    """The store under ``home`` for the commands that only read it (``runs``, ``show``).

    A home that cannot be written is opened read-only, and one that holds no database
    yet, or cannot even be made, simply has no runs (None): reading needs neither.
    """
    from sleuth.store import DB_NAME, Store

    path = _home(home)
    if _can_write(path) or (path.exists() and not path.is_dir()):
        return _open(home)  # (a home that is a file: the store's own one-line error)
    if not (path / DB_NAME).is_file():
        return None
    return Store(path, read_only=True)


def _list_runs(store: Store, limit: int) -> list[RunSummary]:
    runs = store.list_runs(limit)
    if not store.read_only:
        return runs
    # Runs whose process died cannot be marked in a read-only store: shown as they are.
    dead = set(store.orphaned())
    return [run._replace(status="interrupted") if run.id in dead else run for run in runs]


def _find_run(home: str | None, run_id: str) -> RunInfo:
    store = _open_to_read(home)
    if store is None:
        from sleuth.errors import RunNotFoundError

        raise RunNotFoundError(f"no run with id {run_id!r}: there is no run yet")
    with store:
        info = store.get_run(run_id)
    if info.status == "running" and store.read_only and info.id in store.orphaned():
        info = info.model_copy(update={"status": "interrupted"})
    return info


def _emit(report: Report, fmt: str, output: str | None, quiet: bool) -> None:
    """The report in ``fmt``, on stdout or written to ``output`` (checked first)."""
    path = Path(output) if output is not None else None
    if path is not None:
        check_output(path)
    emit(render_report(report, fmt), path, "report", quiet)


def format_runs(runs: list[RunSummary]) -> str:
    """The ``sleuth runs`` table: one line per run, newest first."""
    if not runs:
        return "no runs yet\n"
    rows = [("ID", "STATUS", "STARTED", "TOOK", "SOURCES", "TOKENS", "QUESTION")]
    for run in runs:
        question = " ".join(run.question.split())
        if len(question) > _QUESTION_WIDTH:
            question = question[: _QUESTION_WIDTH - 1] + "…"
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.created_at))
        rows.append(
            (
                run.id,
                run.status,
                started,
                duration(run.updated_at - run.created_at),
                str(run.sources),
                str(run.tokens),
                question,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    numeric = {4, 5}
    lines = []
    for row in rows:
        cells = [
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(row[:-1])
        ]
        lines.append("  ".join([*cells, row[-1]]))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- callbacks


def _runs(home: str | None, limit: int, fmt: str) -> int:
    store = _open_to_read(home)
    runs: list[RunSummary] = []
    if store is not None:
        with store:
            runs = _list_runs(store, limit)
    if fmt == "json":
        click.echo(json.dumps([run._asdict() for run in runs], ensure_ascii=False, indent=2))
    else:
        click.echo(format_runs(runs), nl=False)
    return 0


def _stored_report(data: Any) -> Report:
    from sleuth.models import Report

    return Report.model_validate(data)


def _show(run_id: str, home: str | None, fmt: str, output: str | None, timeline: bool) -> int:
    if timeline:
        return _show_timeline(run_id, home)
    info = _find_run(home, run_id)
    if info.report is None:
        raise SleuthError(
            f"run {info.id} has no report: it is {info.status}"
            + (
                "; 'sleuth resume " + info.id + "' finishes it"
                if info.status == "interrupted"
                else ""
            )
        )
    _emit(_stored_report(info.report), fmt, output, quiet=False)
    return 0


def _show_timeline(run_id: str, home: str | None) -> int:
    """``sleuth show ID --timeline``: the run's requests as a waterfall on stdout."""
    from rich.console import Console

    from sleuth.cli.timeline import show_timeline

    store = _open_to_read(home)
    if store is None:
        from sleuth.errors import RunNotFoundError

        raise RunNotFoundError(f"no run with id {run_id!r}: there is no run yet")
    with store:
        show_timeline(store, store.get_run(run_id), Console(highlight=False))
    return 0


def _resume(run_id: str, home: str | None, fmt: str, output: str | None, quiet: bool) -> int:
    home_path = _home(home)
    with _open(home) as store:
        info = store.get_run(run_id)
    if info.status == "running":
        raise ConfigError(
            f"run {info.id} is still running (pid {info.pid} on {info.host}); "
            "resume it once it has stopped"
        )
    if info.status == "done" and info.report is not None:
        if not quiet:
            click.echo(f"run {info.id} is already done; here is its report", err=True)
        report = _stored_report(info.report)
    else:
        # The options the run was started with; the environment of today does not apply.
        from sleuth.settings import load_settings

        settings = load_settings({**info.options, "home": str(home_path)}, env={})
        from sleuth.pipeline.quick import research

        progress = Progress(quiet, wanted=pages_wanted(settings))
        try:
            report = run_interruptible(
                research(info.question, settings=settings, on_event=progress, resume_id=info.id),
                progress,
                home,
            )
        finally:
            progress.close()
    _emit(report, fmt, output, quiet)
    return EXIT_OK if report.sources else EXIT_NO_SOURCES


def _cache_clear(home: str | None, older_than: str | None) -> int:
    from sleuth.settings import parse_duration

    age = parse_duration(older_than) if older_than is not None else None
    with _open(home) as store:
        counts = store.clear_cache(age)
        size = store.size_bytes()
    what = (
        f"{counts['searches']} searches, {counts['pages']} pages and "
        f"{counts['llm_calls']} model replies"
    )
    when = f" older than {older_than}" if older_than is not None else ""
    click.echo(f"removed {what}{when}; the store is now {size / 1e6:.1f} MB")
    return 0


# ---------------------------------------------------------------- commands


def _home_option() -> click.Option:
    return click.Option(
        ["--home"],
        default=None,
        metavar="DIR",
        help="Folder of the run store [env: SLEUTH_HOME; default: the user cache folder].",
    )


def _format_option(choices: tuple[str, ...], default: str) -> click.Option:
    return click.Option(
        ["--format", "fmt"],
        type=click.Choice(choices),
        default=default,
        show_default=True,
        help="Output format.",
    )


def _output_option() -> click.Option:
    return click.Option(
        ["--output", "-o"],
        default=None,
        metavar="FILE",
        help="Write the report here instead of stdout.",
    )


def run_commands() -> list[click.Command]:
    """The run-store commands, for the ``sleuth`` group."""
    report_formats = ("markdown", "json", "html")
    runs = click.Command(
        "runs",
        callback=_runs,
        params=[
            _home_option(),
            click.Option(
                ["--limit", "-n"],
                metavar="N",
                type=click.IntRange(1, 10_000),
                default=20,
                show_default=True,
                help="Runs to list, newest first.",
            ),
            _format_option(("table", "json"), "table"),
        ],
        short_help="List past runs, newest first.",
        help="List past runs: id, status, start, duration, sources, tokens, question.",
    )
    show = click.Command(
        "show",
        callback=_show,
        params=[
            click.Argument(["run_id"]),
            _home_option(),
            _format_option(report_formats, "markdown"),
            _output_option(),
            click.Option(
                ["--timeline"],
                is_flag=True,
                default=False,
                help="Show the run's requests as a waterfall (searches, downloads, "
                "extractions, model calls; the critical path marked) instead of its report.",
            ),
        ],
        short_help="Print a past run's report again ('last': the latest).",
        help="Print the report of run RUN_ID again: a few characters of the id are enough, "
        "and 'last' is the latest run.",
    )
    resume = click.Command(
        "resume",
        callback=_resume,
        params=[
            click.Argument(["run_id"]),
            _home_option(),
            _format_option(report_formats, "markdown"),
            _output_option(),
            click.Option(
                ["--quiet", "-q"],
                is_flag=True,
                default=False,
                help="No progress messages on stderr.",
            ),
            verbose_option(),
        ],
        short_help="Finish an interrupted run, reusing what it had.",
        help="Continue an interrupted run (RUN_ID: a few characters of its id, or 'last'): "
        "its searches, pages and model replies are reused, not repeated, and the same "
        "run id gets the final report.",
        epilog="Exit codes: 0 report written, 1 no source could be read, 2 bad input, "
        "130 interrupted.",
    )
    clear = click.Command(
        "clear",
        callback=_cache_clear,
        params=[
            _home_option(),
            click.Option(
                ["--older-than"],
                default=None,
                metavar="AGE",
                help="Only entries older than this (90, 30m, 12h, 7d).",
            ),
        ],
        help="Delete cached searches, pages and model replies (runs are kept).",
    )
    cache = click.Group(
        "cache",
        commands={"clear": clear},
        short_help="Forget cached searches, pages and model replies.",
        help="Manage the cache of searches, pages and model replies.",
    )
    return [runs, show, resume, cache]
