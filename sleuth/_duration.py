"""Durations as users write them (``90``, ``30s``, ``15m``, ``12h``, ``7d``, ``2w``)."""

from __future__ import annotations

import re

from sleuth.errors import ConfigError

__all__ = ["UNITS", "format_duration", "parse_duration"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
#: Seconds in each unit.
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str | float) -> float:
    """Seconds in a duration such as ``90``, ``30s``, ``15m``, ``12h``, ``7d`` or ``2w``.

    Raises :class:`ConfigError` for anything else (a negative or unitless word).
    """
    if isinstance(text, int | float):
        if text < 0:
            raise ConfigError(f"invalid duration {text!r}: must not be negative")
        return float(text)
    match = _DURATION.match(text)
    if not match:
        raise ConfigError(f"invalid duration {text!r}: use a number with s, m, h, d or w (e.g. 7d)")
    return float(match.group(1)) * UNITS[match.group(2).lower()]


def format_duration(seconds: float) -> str:
    """``seconds`` in the largest unit that divides it: 86400 → ``1d``, 90 → ``90s``."""
    for unit in ("w", "d", "h", "m"):
        size = UNITS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
