"""The command line: ``sleuth [OPTIONS] QUESTION``.

Options are generated from the settings table (``sleuth.settings.Settings``, compiled
to ``data/cli_options.json`` so that ``--help`` needs no pydantic), so the flags, their
environment variables and the docs never drift apart. Values are
validated by the settings model, and every user error becomes one line on stderr
with exit code 2 — never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sleuth._options import cli_options
from sleuth._valid import valid_text
from sleuth._version import __version__
from sleuth.cli._logs import cli_logging, verbose_option
from sleuth.cli.agent import agent_command
from sleuth.cli.reach import reach_commands
from sleuth.cli.runs import run_commands
from sleuth.errors import ConfigError, LLMAuthError, SleuthError
from sleuth.progress import Event

if TYPE_CHECKING:
    from sleuth.models import Report

EXIT_OK, EXIT_NO_SOURCES, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 70, 130


def _settings_options() -> list[click.Option]:
    """One click option per settings field; values stay strings until pydantic checks them."""
    options = []
    for row in cli_options():
        decls = [row["flag"], *([row["short"]] if row["short"] else []), row["name"]]
        envs = ", ".join(row["env"])
        help_text = f"{row['help']}" + (f" [env: {envs}]" if envs else "")
        if row["is_flag"]:
            options.append(click.Option(decls, is_flag=True, flag_value=True, default=None,
                                        help=help_text))
            continue
        shown = f" [default: {row['default']}]" if row["default"] is not None else ""
        options.append(click.Option(decls, type=str, default=None, help=help_text + shown,
                                    metavar=row["name"].upper().replace("_", "-")))
    return options


def _research_options() -> list[click.Option]:
    """The settings options for ``research``: agent-only ones work but stay out of --help."""
    options = _settings_options()
    for option in options:
        # One shared table keeps SLEUTH_* env handling uniform; the help shows what matters here.
        option.hidden = bool(option.help and option.help.startswith("Agent mode:"))
    return options


class _Progress:
    """Stage messages on stderr: a live status line on a terminal, plain lines otherwise."""

    def __init__(self, quiet: bool) -> None:
        from rich.console import Console

        self.quiet = quiet
        self.console = Console(stderr=True, highlight=False)
        self.status = None
        if not quiet and self.console.is_terminal:
            self.status = self.console.status("planning…")
            self.status.start()

    def __call__(self, event: Event) -> None:
        from rich.markup import escape

        if self.quiet:
            return
        if self.status is not None:
            self.status.update(f"{event.kind}: {event.message}")
        if event.kind in ("fetch_start", "llm"):  # the status line is enough for these
            return
        style = "yellow" if event.kind.endswith("_failed") else "dim"
        # Messages carry page titles: untrusted text, so escape rich markup.
        self.console.print(f"[{style}]{event.kind:>12}[/] {escape(event.message)}", markup=True,
                           soft_wrap=True)

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()


def _check_output(path: Path) -> None:
    if path.expanduser().is_dir():
        raise ConfigError(f"cannot write {path}: it is a folder; give a file name")
    parent = path.expanduser().resolve().parent
    if not parent.is_dir():
        raise ConfigError(f"cannot write {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"cannot write {path}: folder {parent} is not writable")


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and a rename: never half a file."""
    path = path.expanduser()
    try:
        fd, tmp = tempfile.mkstemp(dir=path.resolve().parent, prefix=f".{path.name}.",
                                   suffix=".tmp")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(valid_text(text))
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # a full disk, a vanished folder: one line, exit 2
            raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


def render_report(report: Report, fmt: str) -> str:
    """A report as the user asked for it: markdown, json or html."""
    if fmt == "json":
        return json.dumps(report.to_json_dict(), ensure_ascii=False, indent=2) + "\n"
    if fmt == "html":
        from sleuth.report.html import render_html

        return render_html(report)
    return report.markdown


def emit(text: str, output: Path | None, what: str, quiet: bool) -> None:
    """Print ``text`` on stdout, or write it atomically to ``output`` and say so on stderr."""
    text = valid_text(text)  # the last guard: no lone surrogate reaches an output
    if output is None:
        stream = sys.stdout
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            # A terminal whose encoding lacks a character shows "?", rather than the
            # whole report being lost to an encoding error.
            stream.reconfigure(errors="replace")
        stream.write(text)
        stream.flush()
        return
    write_atomic(output, text)
    if not quiet:
        click.echo(f"{what} written to {output}", err=True)


def _run_research(question: str, quiet: bool, values: dict[str, Any]) -> int:
    from sleuth.settings import load_settings  # pydantic: not needed for --help

    settings = load_settings(values)
    if settings.output is not None:
        _check_output(settings.output)
    from sleuth.research.quick import research  # heavy imports only once the input is valid

    progress = _Progress(quiet)
    try:
        import asyncio  # here, not at the top: `sleuth --help` stays fast

        report = asyncio.run(research(question, settings=settings, on_event=progress))
    finally:
        progress.close()
    emit(render_report(report, settings.format), settings.output, "report", quiet)
    return EXIT_OK if report.sources else EXIT_NO_SOURCES


def _research_callback(question: str, quiet: bool | None, **values: Any) -> int:
    return _run_research(question, bool(quiet), values)


research_command = click.Command(
    "research",
    callback=_research_callback,
    params=[
        click.Argument(["question"]),
        *_research_options(),
        click.Option(["--quiet", "-q"], is_flag=True, flag_value=True, default=None,
                     help="No progress messages on stderr."),
        verbose_option(),
    ],
    help="Research QUESTION on the web and print a cited Markdown report.",
    epilog=("Exit codes: 0 report written, 1 no source could be read, 2 bad input.\n\n"
            "\b\nOther commands (each has --help):\n"
            "  sleuth agent GOAL      agent mode: a model researches in rounds, with tools\n"
            "  sleuth runs            past runs in the store; sleuth show ID prints one\n"
            "  sleuth resume ID       finish a run that was interrupted\n"
            "  sleuth cache clear     forget cached searches, pages and model replies\n"
            "  sleuth mcp             serve research as MCP tools over stdio\n"
            "  sleuth serve           a local web page for research"),
)


class SleuthCLI(click.Group):
    """A group whose default command is ``research``: ``sleuth "question"`` just works."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] != "--version"):
            args = ["research", *args]
        return super().parse_args(ctx, args)


cli = SleuthCLI(
    name="sleuth", commands={"research": research_command},
    help="sleuth researches a question on the web and writes a cited report.\n\n"
         "sleuth QUESTION is short for sleuth research QUESTION.",
)
cli = click.version_option(__version__, "--version", prog_name="sleuth")(cli)
for _command in reach_commands(_settings_options):  # sleuth mcp, sleuth serve
    cli.add_command(_command)
for _command in run_commands():  # sleuth runs, show, resume, cache clear
    cli.add_command(_command)
cli.add_command(agent_command(_settings_options))  # sleuth agent


def _fail(message: str, code: int) -> int:
    first_line = message.strip().splitlines()[0] if message.strip() else "error"
    click.echo(f"sleuth: error: {first_line}", err=True)
    return code


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (used by tests and ``main``)."""
    with cli_logging():
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    try:
        result = cli.main(args=argv, prog_name="sleuth", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.UsageError as exc:
        return _fail(exc.format_message(), EXIT_USAGE)
    except click.Abort:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except ConfigError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except SleuthError as exc:
        # A refused API key is a setting to fix, like any other bad input.
        return _fail(str(exc), EXIT_USAGE if isinstance(exc, LLMAuthError) else EXIT_NO_SOURCES)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except Exception as exc:
        if os.environ.get("SLEUTH_DEBUG"):
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} (SLEUTH_DEBUG=1 shows the "
                     "traceback)", EXIT_INTERNAL)
    return result if isinstance(result, int) else EXIT_OK


def main() -> None:
    """Console-script entry point."""
    sys.exit(run())
