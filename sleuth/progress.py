"""Progress events: one mechanism that the CLI (and later MCP and the web page) consume."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

EventKind = Literal[
    "plan", "search", "search_failed", "rank", "fetch_start", "fetched", "fetch_failed",
    "read", "report", "info",
]


@dataclass(frozen=True)
class Event:
    """Something that happened in a run; ``data`` holds its typed details as plain values."""

    kind: EventKind
    message: str
    data: dict[str, Any] = field(default_factory=dict)


ProgressCallback = Callable[[Event], None]


def no_progress(event: Event) -> None:
    """The default consumer: ignores every event."""
