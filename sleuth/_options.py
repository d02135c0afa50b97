"""The CLI's view of the settings table, read from a file generated from it.

``sleuth.settings`` is the one source of truth, but importing it means importing
pydantic (about a third of ``sleuth --help``'s start time). The table is compiled
into ``data/cli_options.json`` by ``sleuth.settings.write_cli_options()``; a test
fails when the two disagree.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

_FILE = Path(__file__).resolve().parent / "data" / "cli_options.json"

#: The groups ``--help`` lists options in, in this order (each setting names its group in
#: the settings table; options of one command only name theirs where they are made).
HELP_GROUPS = (
    "Batch",
    "Research",
    "Search",
    "Fetching",
    "Model",
    "Output",
    "Store",
    "Budgets",
    "Agent mode",
    "Server",
)


@lru_cache(maxsize=1)
def cli_options() -> tuple[dict[str, Any], ...]:
    """Rows of name, flag, short, env, help, is_flag, default (shown as text or None),
    metavar, choices (a list, or None) and group (one of :data:`HELP_GROUPS`)."""
    rows: list[dict[str, Any]] = json.loads(_FILE.read_text(encoding="utf-8"))
    return tuple(rows)
