"""What every command of the CLI shares: exit codes, the settings options, progress lines
on stderr, and writing the output (stdout, or a file written atomically).

The settings options are generated from the settings table (``sleuth.settings.Settings``,
compiled to ``data/cli_options.json`` so that ``--help`` needs no pydantic), so the
flags, their environment variables and the docs never drift apart.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sleuth._files import write_atomic
from sleuth._options import HELP_GROUPS, cli_options
from sleuth._valid import valid_text
from sleuth.cli._progress import Progress
from sleuth.errors import ConfigError

if TYPE_CHECKING:
    pass

__all__ = [
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NO_SOURCES",
    "EXIT_OK",
    "EXIT_USAGE",
    "GroupedCommand",
    "Interrupted",
    "Option",
    "Progress",
    "check_output",
    "emit",
    "run_interruptible",
    "settings_options",
]

T = TypeVar("T")

EXIT_OK, EXIT_NO_SOURCES, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 70, 130


class Option(click.Option):
    """A click option that names the ``--help`` group it is listed in (``HELP_GROUPS``)."""

    def __init__(self, *args: Any, group: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help_group = group


class GroupedCommand(click.Command):
    """A click command whose ``--help`` lists its options under their groups' titles.

    The help is laid out by cloup (titled, aligned option groups). cloup is imported
    only when help is shown: it costs about 15 ms of start-up (mostly
    ``importlib.metadata``) that ``sleuth QUESTION`` and a mistyped option need not pay.
    """

    def get_help(self, ctx: click.Context) -> str:
        import cloup

        order = {title: n for n, title in enumerate(HELP_GROUPS)}
        params = sorted(
            self.params, key=lambda p: order.get(getattr(p, "help_group", None) or "", len(order))
        )
        groups: dict[str, cloup.OptionGroup] = {}
        for param in params:
            title = getattr(param, "help_group", None)
            if title:
                # cloup reads an option's group from this attribute (cloup.Option sets it).
                param.group = groups.setdefault(title, cloup.OptionGroup(title))  # type: ignore[attr-defined]
        twin = cloup.Command(
            self.name,
            params=params,
            help=self.help,
            epilog=self.epilog,
            short_help=self.short_help,
            options_metavar=self.options_metavar,
            add_help_option=self.add_help_option,
            context_settings=self.context_settings,
        )
        twin_ctx = cloup.Context(
            twin,
            info_name=ctx.info_name,
            parent=ctx.parent,
            terminal_width=ctx.terminal_width,
            max_content_width=ctx.max_content_width,
        )
        return twin.get_help(twin_ctx)


def settings_options() -> list[click.Option]:
    """One click option per settings field; values stay strings until pydantic checks them."""
    options: list[click.Option] = []
    for row in cli_options():
        decls = [row["flag"], *([row["short"]] if row["short"] else []), row["name"]]
        envs = ", ".join(row["env"])
        help_text = f"{row['help']}" + (f" [env: {envs}]" if envs else "")
        group = row.get("group")
        if row["is_flag"]:
            options.append(
                Option(
                    decls, is_flag=True, flag_value=True, default=None, help=help_text, group=group
                )
            )
            continue
        shown = f" [default: {row['default']}]" if row["default"] is not None else ""
        options.append(
            Option(
                decls,
                type=str,
                default=None,
                help=help_text + shown,
                metavar=row["metavar"],
                group=group,
            )
        )
    return options


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a run; ``resume`` is the command that continues it (None: none can)."""

    def __init__(self, resume: str | None) -> None:
        super().__init__()
        self.resume = resume


def run_interruptible(
    work: Coroutine[Any, Any, T], progress: Progress, home: str | None = None
) -> T:
    """``asyncio.run(work)``; on Ctrl-C, :class:`Interrupted` with the command to resume it.

    ``home`` is the ``--home`` the user gave, if any: the resume command needs it too.
    """
    import asyncio  # here, not at the top: `sleuth --help` stays fast

    try:
        return asyncio.run(work)
    except KeyboardInterrupt:
        raise Interrupted(progress.resume_command(home)) from None


def check_output(path: Path) -> None:
    if path.expanduser().is_dir():
        raise ConfigError(f"cannot write {path}: it is a folder; give a file name")
    parent = path.expanduser().resolve().parent
    if not parent.is_dir():
        raise ConfigError(f"cannot write {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"cannot write {path}: folder {parent} is not writable")


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
