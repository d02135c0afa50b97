"""Valid text at the boundaries: no lone surrogates in anything sleuth keeps or writes.

A Python ``str`` may hold code points U+D800-U+DFFF on their own, and hostile input
makes them easily: JSON's ``"\\ud800"`` escape (model replies, tool arguments, MCP and
web requests), a page decoded with a codec such as ``unicode_escape``, a command-line
argument that is not UTF-8. Such a string cannot be encoded as UTF-8, so it breaks
whatever writes it next (stdout, SQLite, an HTTP response, a JSON-RPC reply) far from
where it came in. sleuth makes text valid where it enters: every record
(:class:`sleuth.models.ValidText` models), progress event, model reply and tool argument,
every MCP and web request; and its output paths replace what might still slip through
instead of failing. No heavy imports: the CLI loads this module.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["valid_data", "valid_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` with surrogate pairs joined and every lone surrogate replaced by U+FFFD.

    A pair written as two code points (``"\\ud83d\\ude00"`` decoded by ``unicode_escape``)
    becomes the one character it encodes, as a JSON decoder would have made it.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def valid_data(value: Any) -> Any:
    """``value`` with :func:`valid_text` applied to every string in it, keys included.

    Walks dicts, lists and tuples (decoded JSON, tool arguments); anything else,
    records included (they make their own text valid), is returned as it is.
    """
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_data(key): valid_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [valid_data(item) for item in value]
    if isinstance(value, tuple):
        return tuple(valid_data(item) for item in value)
    return value
