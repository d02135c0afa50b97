"""Small text formats shared by the CLI and agent mode (no heavy imports: the CLI loads it)."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """``75.2`` → ``1m15s``; ``4000`` → ``1h06m``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def plural(count: int, one: str, many: str) -> str:
    """``1 query``, ``2 queries``, ``0 queries``: the count with the word that fits it."""
    return f"{count:,} {one if count == 1 else many}"
