"""Local documents to text, for the ``--docs`` index: HTML, Markdown, text,
reStructuredText and PDF files.

:class:`DocumentExtractor` is what :func:`sleuth.store.index_folder` is given: it says
which files it reads (``suffixes``) and turns one file's bytes into its kind, title and
text. HTML and PDF files are extracted within :class:`~sleuth.extraction.workers.ExtractLimits`
when it has some (a file in the folder may be as hostile as a web page); a file over
them, or without text, raises ``ValueError`` with the reason the index reports.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from sleuth.extraction.decode import decode_body, looks_binary
from sleuth.extraction.html import extract
from sleuth.extraction.pdf import pdf_text
from sleuth.extraction.workers import ExtractLimits, TooComplex, run_bounded_sync

__all__ = ["DOC_SUFFIXES", "MAX_DOC_CHARS", "Document", "DocumentExtractor", "extract_document"]

HTML_SUFFIXES = frozenset({".html", ".htm"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
TEXT_SUFFIXES = MARKDOWN_SUFFIXES | frozenset({".txt", ".rst"})
PDF_SUFFIXES = frozenset({".pdf"})
DOC_SUFFIXES = HTML_SUFFIXES | TEXT_SUFFIXES | PDF_SUFFIXES
#: Text kept per document (characters).
MAX_DOC_CHARS = 2_000_000

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^\s*([=\-~^*+#`:'\"._])\1{2,}\s*$")


class Document(NamedTuple):
    """One file's text: its kind ("html", "pdf" or "text"), title and text."""

    kind: str
    title: str
    text: str


def first_line_title(text: str, fallback: str) -> str:
    """The first Markdown heading, else the first line that is not an underline."""
    lines = text.splitlines()
    for line in lines[:200]:
        match = _HEADING.match(line)
        if match:
            return match.group(1).strip()[:300]
    for line in lines[:200]:
        stripped = line.strip()
        if stripped and not _UNDERLINE.match(stripped):
            return stripped.lstrip("#").strip()[:300] or fallback
    return fallback


# CommonMark: a backslash before ASCII punctuation is that character, outside code.
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MD_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")


def _unescape_line(line: str) -> str:
    """One line with its backslash escapes resolved, except inside code spans."""
    out, at = [], 0
    for span in _MD_CODE_SPAN.finditer(line):
        out += [_MD_ESCAPE.sub(r"\1", line[at : span.start()]), span.group(0)]
        at = span.end()
    out.append(_MD_ESCAPE.sub(r"\1", line[at:]))
    return "".join(out)


def markdown_unescaped(text: str) -> str:
    """Markdown text as its reader sees it: ``\\#`` is ``#``, ``\\|`` is ``|``.

    Passages quoted from a document must not carry the escapes its writer (or the
    converter that made it) typed for the Markdown parser. Code (fenced blocks,
    indented blocks after a blank line, inline spans) is left exactly as written.
    """
    if "\\" not in text:
        return text
    lines, fence, blank, in_code = [], "", True, False
    for line in text.split("\n"):
        opened = _MD_FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
        elif opened:
            fence = opened.group(1)
        else:
            indented = line.startswith(("    ", "\t"))
            in_code = indented and (blank or in_code) and bool(line.strip())
            if not in_code:
                line = _unescape_line(line)
        blank = not line.strip()
        lines.append(line)
    return "\n".join(lines)


def _decode_text(data: bytes) -> str:
    if looks_binary(data):
        raise ValueError("binary file, not text")
    return decode_body(data, html=False)


def _bounded(func: Callable[..., Any], args: tuple[Any, ...], limits: ExtractLimits | None) -> Any:
    """``func(*args)``, in an extraction worker within ``limits`` when there are some; a
    file over them is a ValueError, so a failure of that file."""
    if limits is None:
        return func(*args)
    try:
        return run_bounded_sync(func, *args, limits=limits)
    except TooComplex as exc:
        raise ValueError(exc.reason) from None


def extract_document(path: Path, data: bytes, limits: ExtractLimits | None = None) -> Document:
    """The kind, title and text of one file's bytes; raises ValueError when unreadable."""
    suffix = path.suffix.lower()
    if suffix in PDF_SUFFIXES:
        found = _bounded(pdf_text, (data, MAX_DOC_CHARS), limits)
        kind, title, text = "pdf", found.title or "", found.text
    elif suffix in HTML_SUFFIXES:
        found = _bounded(extract, (data, path.absolute().as_uri()), limits)
        kind, title, text = "html", found.title or "", found.text
    else:
        text = _decode_text(data)
        kind, title = "text", first_line_title(text, path.stem)
        if suffix in MARKDOWN_SUFFIXES:
            text, title = markdown_unescaped(text), markdown_unescaped(title)
    text = text.strip()[:MAX_DOC_CHARS]
    if not text:
        raise ValueError("no text found" + (" (a scanned PDF?)" if kind == "pdf" else ""))
    return Document(kind, title.strip() or first_line_title(text, path.stem), text)


@dataclass(frozen=True)
class DocumentExtractor:
    """Reads the files of a documents folder for the index (see the module docstring)."""

    limits: ExtractLimits | None = None

    @property
    def suffixes(self) -> frozenset[str]:
        """The file name endings (lower case) of the files it reads."""
        return DOC_SUFFIXES

    def __call__(self, path: Path, data: bytes) -> Document:
        """The kind, title and text of the file at ``path``, whose bytes are ``data``."""
        return extract_document(path, data, self.limits)
