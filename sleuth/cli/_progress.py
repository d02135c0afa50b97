"""Progress on stderr: a live bar with the run's counts on a terminal, plain lines otherwise.

On a terminal the last line is a rich progress bar: pages read of those wanted (a deep
research's over its whole tree), searches done of those planned, with a model the tokens
and cost so far (the web page shows the same counts), and what the run is doing now, in
which branch. Events do not scroll past it: ``--verbose`` prints each one above it, as
every event is printed when stderr is a file or a pipe (then there is no bar, and the
lines are all there is). Timings (``span`` events) are never lines: ``sleuth show ID
--timeline`` draws them.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from sleuth.progress import Counts, Event

if TYPE_CHECKING:
    from rich.console import Console

    from sleuth.settings import Settings

__all__ = ["VERBOSE_KEY", "Counts", "Progress", "is_verbose", "pages_wanted"]

#: Where ``--verbose`` is noted for the command (its root context's ``meta``).
VERBOSE_KEY = "sleuth.verbose"
#: Events that are never a line: each request's timing (the timeline draws them).
_NO_LINE = ("span",)
#: Events the bar shows but no line prints, even with ``--verbose``: the report's draft
#: words (the terminal prints the checked report, never the draft).
_BAR_ONLY = ("report_text",)


def pages_wanted(settings: Settings) -> int:
    """The pages a research with ``settings`` means to read (deep mode's default is more)."""
    from sleuth.settings import mode_defaults

    return mode_defaults(settings).max_sources


def is_verbose() -> bool:
    """Whether the command being run was given ``--verbose``."""
    import click

    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.find_root().meta.get(VERBOSE_KEY))


class Progress:
    """The progress consumer of one CLI command (see the module docstring).

    ``wanted``: the pages the run means to read, for the bar. ``console``: where to
    write (stderr by default; tests give a recording one).
    """

    def __init__(
        self,
        quiet: bool,
        wanted: int | None = None,
        console: Console | None = None,
        verbose: bool | None = None,
    ) -> None:
        from rich.console import Console

        self.quiet = quiet
        #: Print every event above the bar (``--verbose``; None: as the command line says).
        self.verbose = is_verbose() if verbose is None else verbose
        self.console = console or Console(stderr=True, highlight=False)
        self.counts = Counts(wanted)
        #: The run's id in the store, or agent mode's workspace, once the run has said it.
        self.run_id: str | None = None
        self.workspace: str | None = None
        self.bar: Any = None
        self._task: Any = None
        if not quiet and self.console.is_terminal:
            self._start_bar()

    def _start_bar(self) -> None:
        from rich.progress import BarColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar
        from rich.table import Column

        # The counts never wrap nor shrink; the last event takes what width is left.
        self.bar = Bar(
            SpinnerColumn(),
            TextColumn("{task.fields[counts]}", table_column=Column(no_wrap=True)),
            BarColumn(bar_width=12),
            TimeElapsedColumn(),
            TextColumn(
                "[dim]{task.description}",
                markup=True,
                table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1),
            ),
            console=self.console,
            transient=True,
            expand=True,
        )
        self._task = self.bar.add_task(
            "planning…", total=self.counts.wanted, counts=self.counts.summary()
        )
        self.bar.start()

    def __call__(self, event: Event) -> None:
        from rich.markup import escape

        if event.kind == "info":
            self.run_id = event.data.get("run_id", self.run_id)
            self.workspace = event.data.get("workspace", self.workspace)
        self.counts.add(event)
        if self.quiet:
            return
        # Messages carry page titles: untrusted text, so escape rich markup.
        message = escape(event.message)
        if event.kind in _NO_LINE:
            return
        if self.bar is not None:
            self.bar.update(
                self._task,
                completed=self.counts.pages_done(),
                counts=self.counts.summary(),
                description=escape(
                    self.counts.stage()
                    if event.kind in _BAR_ONLY
                    else f"{self.counts.stage()}: {event.message}"[:100]
                ),
            )
            if not self.verbose:
                return
        if event.kind in _BAR_ONLY:
            return
        style = "yellow" if event.kind.endswith("_failed") else "dim"
        self.console.print(f"[{style}]{event.kind:>12}[/] {message}", markup=True, soft_wrap=True)

    def close(self) -> None:
        """Take the bar away (the lines above it stay)."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def resume_command(self, home: str | None = None) -> str | None:
        """The command that continues this run after Ctrl-C (None when nothing can)."""
        if self.workspace is not None:
            return f"sleuth agent --resume {shlex.quote(self.workspace)}"
        if self.run_id is None:
            return None
        return f"sleuth resume {self.run_id}" + (f" --home {shlex.quote(home)}" if home else "")
