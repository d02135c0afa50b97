"""The readable text of a document, as extraction gives it: :class:`Extracted`, and its
tidy-up (:func:`normalize_text`, :func:`truncate_text`)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from sleuth.errors import ExtractError

__all__ = ["ExtractError", "Extracted", "normalize_text", "truncate_text"]


class Extracted(BaseModel):
    """The readable part of one document."""

    model_config = ConfigDict(frozen=True)

    text: str = ""
    title: str | None = None
    date: str | None = None
    #: Only the start of the document was read (it had more than ``MAX_ELEMENTS`` elements).
    truncated: bool = False


_SPACES = re.compile(r"[ \t\f\v\u00a0\u2000-\u200b\u202f\u205f\u3000]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def normalize_text(text: str) -> str:
    """Collapse runs of spaces, strip every line, keep at most one blank line in a row."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    # One pass over the whole text: no run of _SPACES crosses a line break.
    lines = (line.strip() for line in _SPACES.sub(" ", text).split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def truncate_text(text: str, max_chars: int) -> tuple[str, bool]:
    """Cut ``text`` to ``max_chars`` (at a word boundary if one is near) plus a visible marker."""
    if len(text) <= max_chars:
        return text, False
    cut = text[:max_chars]
    space = cut.rfind(" ", max(0, max_chars - 200))
    if space > 0:
        cut = cut[:space]
    return f"{cut.rstrip()}\n\n[… truncated at {max_chars} characters]", True
