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
from typing import Any, TypeVar

import click

from sleuth._files import write_atomic
from sleuth._options import HELP_GROUPS, cli_options
from sleuth._valid import valid_text
from sleuth.cli._progress import Progress
from sleuth.errors import ConfigError

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
    "help_all_option",
    "run_interruptible",
    "settings_options",
]

T = TypeVar("T")

EXIT_OK, EXIT_NO_SOURCES, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 70, 130


class Option(click.Option):
    """A click option that names the ``--help`` group it is listed in (``HELP_GROUPS``).

    ``common`` is None for a command's own options (always listed); for a settings
    option, whether the command's short ``--help`` lists it (else only ``--help-all``).
    """

    def __init__(
        self, *args: Any, group: str | None = None, common: bool | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.help_group = group
        self.common = common


def _show_all(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    ctx.meta[_HELP_ALL] = True
    click.echo(ctx.get_help(), color=ctx.color)
    ctx.exit()


_HELP_ALL = "sleuth.help_all"


def help_all_option() -> click.Option:
    """``--help-all``: the help with every option, where ``--help`` lists the common ones."""
    return click.Option(
        ["--help-all"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_show_all,
        help="Show every option, in groups, and exit.",
    )


class GroupedCommand(click.Command):
    """A click command whose ``--help`` lists its options under their groups' titles:
    its own options and the common settings; ``--help-all`` lists every option.

    The help is laid out by cloup (titled, aligned option groups). cloup is imported
    only when help is shown: it costs about 15 ms of start-up (mostly
    ``importlib.metadata``) that ``sleuth QUESTION`` and a mistyped option need not pay.
    """

    def __init__(self, *args: Any, lead: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.append(help_all_option())
        #: The group listed first (the command's own options), else HELP_GROUPS' order.
        self.lead = lead

    def _shown(self, ctx: click.Context) -> tuple[list[click.Parameter], dict[str, int]]:
        """The options this help lists, and how many of each group it leaves out."""
        every = ctx.meta.get(_HELP_ALL, False)
        shown: list[click.Parameter] = []
        left: dict[str, int] = {}
        for param in self.params:
            if every or getattr(param, "common", None) is not False:
                shown.append(param)
            else:
                group = getattr(param, "help_group", None) or "Other"
                left[group] = left.get(group, 0) + 1
        return shown, left

    def get_help(self, ctx: click.Context) -> str:
        import cloup

        shown, left = self._shown(ctx)
        order = {title: n for n, title in enumerate(HELP_GROUPS)}
        if self.lead:
            order[self.lead] = -1
        params = sorted(
            shown, key=lambda p: order.get(getattr(p, "help_group", None) or "", len(order))
        )
        groups: dict[str, cloup.OptionGroup] = {}
        for param in params:
            title = getattr(param, "help_group", None)
            if title:
                # cloup reads an option's group from this attribute (cloup.Option sets it).
                param.group = groups.setdefault(title, cloup.OptionGroup(title))  # type: ignore[attr-defined]
        epilog = self.epilog or ""
        if left:
            more = ", ".join(
                f"{group} {left[group]}" for group in sorted(left, key=lambda g: order.get(g, 99))
            )
            epilog = (
                f"{sum(left.values())} more options ({more}): {ctx.command_path} --help-all"
                + (f"\n\n{epilog}" if epilog else "")
            )
        twin = cloup.Command(
            self.name,
            params=params,
            help=self.help,
            epilog=epilog or None,
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


def settings_options(command: str) -> list[click.Option]:
    """One click option per setting that ``command`` takes; values stay strings until
    pydantic checks them. ``deep`` shows deep mode's own defaults."""
    options: list[click.Option] = []
    for row in cli_options():
        if command in row["skip"]:
            continue
        decls = [row["flag"], *([row["short"]] if row["short"] else []), row["name"]]
        envs = ", ".join(row["env"])
        help_text = f"{row['help']}" + (f" [env: {envs}]" if envs else "")
        kind = {"group": row["group"], "common": row["common"]}
        if row["is_flag"]:
            options.append(
                Option(decls, is_flag=True, flag_value=True, default=None, help=help_text, **kind)
            )
            continue
        default = row["deep_default"] if command == "deep" and row["deep_default"] else None
        default = default or row["default"]
        shown = f" [default: {default}]" if default is not None else ""
        options.append(
            Option(
                decls,
                type=str,
                default=None,
                help=help_text + shown,
                metavar=row["metavar"],
                **kind,
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
