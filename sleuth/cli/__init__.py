"""The command line: ``sleuth [OPTIONS] QUESTION`` and its subcommands.

This module is the ``sleuth`` group: it registers each command (research, deep, agent,
batch, eval, runs, show, resume, cache, library, mcp, serve; each in its own module of
this package, sharing :mod:`sleuth.cli._common`), runs the CLI, and turns every error
into an exit code and one line on stderr, never a traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import click

from sleuth._version import __version__
from sleuth.cli._common import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NO_SOURCES,
    EXIT_OK,
    EXIT_USAGE,
    settings_options,
)
from sleuth.cli._logs import cli_logging
from sleuth.cli.agent import agent_command
from sleuth.cli.batch import batch_command
from sleuth.cli.eval import eval_command
from sleuth.cli.library import library_command
from sleuth.cli.reach import reach_commands
from sleuth.cli.research import deep_command, research_command
from sleuth.cli.runs import run_commands
from sleuth.errors import ConfigError, LLMAuthError, SleuthError

__all__ = ["cli", "main", "run"]


class SleuthCLI(click.Group):
    """A group whose default command is ``research``: ``sleuth "question"`` just works.

    Options may come before a command, as in git: ``sleuth --home DIR runs`` is
    ``sleuth runs --home DIR``; a command's name is never taken for a question.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args:
            raise click.UsageError(
                'give a QUESTION, e.g. sleuth "How does OAuth 2.0 work?" '
                "(sleuth --help lists the commands and options)"
            )
        if args[0] in ("--help", "-h") or args[0] in self.commands or args[0] == "--version":
            return super().parse_args(ctx, args)
        return super().parse_args(ctx, leading_options_moved(args, self.commands))

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from sleuth.cli._help import format_group_help

        format_group_help(self, ctx, formatter)


def leading_options_moved(args: list[str], commands: Mapping[str, click.Command]) -> list[str]:
    """``args`` with the options before a command's name moved after it (``--home DIR
    runs`` → ``runs --home DIR``); with no command named, ``research`` and ``args``."""
    takes_value = {
        decl: not option.is_flag
        for option in research_command.params
        if isinstance(option, click.Option)
        for decl in option.opts
    }
    at = 0
    while at < len(args):
        token = args[at]
        if token == "--" or not token.startswith("-") or token == "-":
            break
        # An option's value is the next word unless it is a flag or came with "=".
        at += 2 if takes_value.get(token, False) and "=" not in token else 1
    if at < len(args) and args[at] in commands and args[at] != "research":
        return [args[at], *args[:at], *args[at + 1 :]]
    if at < len(args) and args[at] == "research":
        return ["research", *args[:at], *args[at + 1 :]]
    return ["research", *args]


cli = SleuthCLI(
    name="sleuth",
    commands={"research": research_command},
    help="Research a question on the web and write a cited Markdown report.",
    context_settings={"help_option_names": ["--help", "-h"]},
)
cli = click.version_option(__version__, "--version", prog_name="sleuth")(cli)
cli.add_command(deep_command)  # sleuth deep
cli.add_command(agent_command(settings_options))  # sleuth agent
cli.add_command(batch_command(settings_options))  # sleuth batch
cli.add_command(eval_command(settings_options))  # sleuth eval
for _command in run_commands():  # sleuth runs, show, resume, cache clear
    cli.add_command(_command)
cli.add_command(library_command())  # sleuth library list, search, export, forget
for _command in reach_commands(settings_options):  # sleuth mcp, sleuth serve
    cli.add_command(_command)


def _fail(message: str, code: int) -> int:
    first_line = message.strip().splitlines()[0] if message.strip() else "error"
    click.echo(f"sleuth: error: {first_line}", err=True)
    return code


def _interrupted(exc: BaseException | None) -> int:
    """Ctrl-C: one line, and the command that continues the run when one was under way."""
    code = _fail("interrupted", EXIT_INTERRUPTED)
    resume = getattr(exc, "resume", None)  # cli._common.Interrupted
    if resume:
        click.echo(f"resume with: {resume}", err=True)
    return code


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (used by tests and ``main``)."""
    with cli_logging(), _sigterm_as_ctrl_c():
        return _run(argv)


@contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """SIGTERM ends a command as Ctrl-C does: the run is kept (``sleuth resume``), the
    server stops, and the exit handlers run (the extraction workers are stopped), which
    the default action, an immediate end, would skip."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(argv: list[str] | None) -> int:
    try:
        result = cli.main(args=argv, prog_name="sleuth", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.UsageError as exc:
        where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        return _fail(exc.format_message().rstrip() + where, EXIT_USAGE)
    except click.Abort as exc:  # click's word for a KeyboardInterrupt it caught
        return _interrupted(exc.__cause__)
    except ConfigError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except SleuthError as exc:
        # A refused API key is a setting to fix, like any other bad input.
        return _fail(str(exc), EXIT_USAGE if isinstance(exc, LLMAuthError) else EXIT_NO_SOURCES)
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except Exception as exc:
        if os.environ.get("SLEUTH_DEBUG"):
            raise
        return _fail(
            f"internal error: {type(exc).__name__}: {exc} (SLEUTH_DEBUG=1 shows the traceback)",
            EXIT_INTERNAL,
        )
    return result if isinstance(result, int) else EXIT_OK


def main() -> None:
    """Console-script entry point."""
    # httpx imports its own command line (rich.progress, rich.syntax, pygments: ~20 ms)
    # whenever click and rich are installed, as they are with sleuth. This process never
    # runs httpx's command line; None in sys.modules makes httpx skip it, as it does when
    # those libraries are missing.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    sys.exit(run())
