"""Progress on stderr: a live bar with the run's counts on a terminal, plain lines otherwise.

On a terminal the last line is a rich progress bar: pages read of those wanted, searches
done of those planned, and, with a model, the tokens and cost so far (the web page shows
the same counts). Every event also prints one line above it, as it does when stderr is a
file or a pipe (then there is no bar, and the lines are all there is).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from sleuth._format import plural
from sleuth.progress import Event

if TYPE_CHECKING:
    from rich.console import Console

    from sleuth.settings import Settings

__all__ = ["Counts", "Progress", "pages_wanted"]

#: Events the bar says enough about: no line of their own on a terminal.
_BAR_ONLY = ("fetch_start", "llm")


def pages_wanted(settings: Settings) -> int:
    """The pages a research with ``settings`` means to read (deep mode's default is more)."""
    from sleuth.settings import mode_defaults

    return mode_defaults(settings).max_sources


class Counts:
    """What a run has done so far, counted from its progress events."""

    def __init__(self, wanted: int | None = None) -> None:
        #: Pages the run means to read (``--max-sources``); None when it has no such aim.
        self.wanted = wanted
        self.read = 0
        self.planned: set[str] = set()
        self.searched: set[str] = set()
        self.tokens = 0
        self.cost_usd: float | None = None

    def add(self, event: Event) -> None:
        """Count ``event`` in."""
        data: dict[str, Any] = event.data
        if event.kind == "plan" and isinstance(data.get("queries"), list):
            self.planned.update(str(q) for q in data["queries"])
        elif event.kind in ("search", "search_failed") and "query" in data:
            self.searched.add(str(data["query"]))
        elif event.kind == "fetched":
            self.read += 1
        elif event.kind == "read" and isinstance(data.get("sources"), int):
            self.read = data["sources"]  # the pages kept, once reading is done
        elif event.kind == "llm":
            self.tokens += int(data.get("prompt_tokens", 0)) + int(data.get("completion_tokens", 0))
            if isinstance(data.get("cost_usd"), int | float):
                self.cost_usd = (self.cost_usd or 0.0) + data["cost_usd"]

    def pages_done(self) -> int:
        """Pages read, at most the number wanted (a run may read a few more, then keep
        the best)."""
        return self.read if self.wanted is None else min(self.read, self.wanted)

    def summary(self) -> str:
        """``pages 3/5 · searches 2/4 · 1,234 tokens · $0.0012`` (only what is known)."""
        pages = (
            f"pages {self.pages_done()}/{self.wanted}"
            if self.wanted is not None
            else plural(self.read, "page", "pages")
        )
        parts = [pages]
        if self.planned or self.searched:
            done = len(self.searched)
            parts.append(f"searches {done}/{max(done, len(self.planned))}")
        if self.tokens:
            parts.append(f"{self.tokens:,} tokens")
        if self.cost_usd is not None:
            parts.append(f"${self.cost_usd:.4f}")
        return " · ".join(parts)


class Progress:
    """The progress consumer of one CLI command (see the module docstring).

    ``wanted``: the pages the run means to read, for the bar. ``console``: where to
    write (stderr by default; tests give a recording one).
    """

    def __init__(
        self, quiet: bool, wanted: int | None = None, console: Console | None = None
    ) -> None:
        from rich.console import Console

        self.quiet = quiet
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
        if self.bar is not None:
            self.bar.update(
                self._task,
                completed=self.counts.pages_done(),
                counts=self.counts.summary(),
                description=escape(f"{event.kind}: {event.message}"[:80]),
            )
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
