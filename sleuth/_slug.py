"""Heading anchors as GitHub makes them, so a report's contents links work everywhere.

GitHub (and the renderers that follow it: GitLab, VS Code, MkDocs' ``toc`` with
``github`` slugs, sleuth's own HTML) give a heading the id made of its plain text in lower
case, every character that is not a letter, mark, number, ``_``, ``-`` or space left
out, and each space made a ``-`` (no trimming, no collapsing: "A — B" is ``a--b``). A
repeated id gets ``-1``, ``-2``, … in the order the headings come, counting every
heading of the document, whatever its level.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["Slugger", "heading_text"]

_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_CODE = re.compile(r"`+([^`]*)`+")
#: Emphasis markers around a word (``*a*``, ``__a__``): not part of the heading's text.
_EMPHASIS = re.compile(r"(?<![\w\\])([*_]{1,3})(?=\S)(.+?)(?<=\S)\1(?!\w)")


def heading_text(markdown: str) -> str:
    """The plain text a heading's Markdown renders to: links as their text, emphasis and
    code marks gone, backslash escapes undone."""
    text = _LINK.sub(r"\1", markdown)
    text = _CODE.sub(r"\1", text)
    previous = None
    while previous != text:  # nested emphasis, outermost first
        previous, text = text, _EMPHASIS.sub(r"\2", text)
    return _ESCAPED.sub(r"\1", text).strip()


def _kept(char: str) -> bool:
    return char in "- " or unicodedata.category(char)[0] in "LMN" or char == "_"


class Slugger:
    """GitHub's ids for the headings of one document, in the order they come."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    @staticmethod
    def bare(text: str) -> str:
        """The id of a heading whose plain text is ``text``, before de-duplication."""
        return "".join(c for c in text.lower() if _kept(c)).replace(" ", "-")

    def slug(self, text: str) -> str:
        """The id of the next heading, ``text`` its plain text (``-1``… when taken)."""
        base = self.bare(text)
        slug = base
        while slug in self._seen:
            self._seen[base] += 1
            slug = f"{base}-{self._seen[base]}"
        self._seen[slug] = 0
        return slug
