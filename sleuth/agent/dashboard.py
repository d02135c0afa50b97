"""The dashboard: the agent's plain-text memory from one round to the next.

The model replaces it whole with ``update_dashboard``; it may hold at most
:data:`DASHBOARD_MAX_CHARS` characters, and a longer update is refused (not cut)
with a message saying by how much, so the model shortens it itself. Below the
model's text sleuth keeps a short section of its own notes (failed or interrupted
rounds), at most :data:`MAX_NOTES` lines, which an update cannot erase.

**The completion marker.** The dashboard says the search is complete when one of
its lines, once surrounding spaces, Markdown markers (``#``, ``-``, ``*``, ``>``)
and 【】 brackets are stripped, is exactly ``status: complete`` (or ``completed``
or ``done``; any case, ASCII or full-width colon, an optional final full stop),
or exactly ``搜索完成``, ``任务完成`` or ``状态：已完成``. Only whole lines count:
"status: not complete" or "任务完成前还需要…" do not end a search.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["DASHBOARD_MAX_CHARS", "MAX_NOTES", "NOTES_HEADER", "Dashboard", "is_complete"]

DASHBOARD_MAX_CHARS = 4000
MAX_NOTES = 5
_MAX_NOTE_CHARS = 240
NOTES_HEADER = "## Notes from sleuth (kept automatically)"

_INITIAL = """status: in progress

## Working directory
{workspace} (file paths are relative to it, e.g. notes.md)

## Current goal
(to be decided)

## Findings
(none yet)

## Visited pages
(none yet)"""

_STRIP = " \t#*->【】[]"
_DONE_EN = re.compile(r"status\s*[:：]\s*(?:complete|completed|done)[.。!！]?", re.IGNORECASE)
_DONE_ZH = re.compile(r"(?:搜索完成|任务完成|状态\s*[:：]\s*已完成)[.。!！]?")


def is_complete(text: str) -> bool:
    """Whether ``text`` carries the completion marker (see the module docstring)."""
    for line in text.splitlines():
        core = line.strip().strip(_STRIP).strip()
        if _DONE_EN.fullmatch(core) or _DONE_ZH.fullmatch(core):
            return True
    return False


@dataclass
class Dashboard:
    """The model's text plus sleuth's notes; ``text`` is what ``dashboard.md`` holds."""

    content: str
    notes: list[str] = field(default_factory=list)

    @classmethod
    def initial(cls, workspace_label: str) -> Dashboard:
        """The dashboard a new search starts with."""
        return cls(_INITIAL.format(workspace=workspace_label))

    @classmethod
    def parse(cls, text: str) -> Dashboard:
        """A dashboard read back from ``dashboard.md``."""
        content, notes = _split(text)
        return cls(content, notes)

    @property
    def text(self) -> str:
        """The whole dashboard, as the model sees it and as it is saved."""
        if not self.notes:
            return self.content
        lines = "\n".join(f"- {note}" for note in self.notes)
        return f"{self.content.rstrip()}\n\n{NOTES_HEADER}\n{lines}"

    @property
    def complete(self) -> bool:
        """Whether the model's text says the search is complete."""
        return is_complete(self.content)

    def replace(self, content: str) -> str:
        """Take the model's new text; ValueError (for the model to read) when it is too long.

        A copy of sleuth's notes section that the model pasted back is dropped: the
        notes are kept separately and re-added.
        """
        content, _ = _split(content)
        content = content.strip()
        if not content:
            raise ValueError("the dashboard cannot be empty")
        if len(content) > DASHBOARD_MAX_CHARS:
            raise ValueError(
                f"the dashboard may hold at most {DASHBOARD_MAX_CHARS:,} "
                f"characters; this one has {len(content):,} "
                f"({len(content) - DASHBOARD_MAX_CHARS:,} too many). Shorten it "
                "and keep details in files in the workspace"
            )
        self.content = content
        return f"dashboard updated ({len(content):,} of {DASHBOARD_MAX_CHARS:,} characters)"

    def note(self, line: str) -> None:
        """Add one of sleuth's notes (the oldest go once there are more than MAX_NOTES)."""
        line = " ".join(line.split())
        if len(line) > _MAX_NOTE_CHARS:
            line = line[: _MAX_NOTE_CHARS - 1] + "…"
        self.notes = [*self.notes, line][-MAX_NOTES:]


def _split(text: str) -> tuple[str, list[str]]:
    head, sep, tail = text.rpartition(NOTES_HEADER)
    if not sep:
        return text, []
    notes = [
        line.strip()[2:].strip() for line in tail.splitlines() if line.strip().startswith("- ")
    ]
    return head.rstrip(), notes
