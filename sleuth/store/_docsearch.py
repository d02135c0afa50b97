"""Searching the local documents index: FTS5 with bm25, and one file's stored text.

:func:`search_docs` ranks with FTS5's ``bm25()`` (title weighted above body) and
returns an FTS5 ``snippet()``; user text is reduced to quoted terms (:func:`fts_query`),
so FTS5 query syntax in a question can never cause an error. :mod:`sleuth.store.docs`
builds the index and re-exports these names.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, NamedTuple

from sleuth.store.db import Database

TITLE_WEIGHT = 5.0

_TERM = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
    }
)


class DocHit(NamedTuple):
    """One search result: the file, its title, a snippet and a bm25 score (higher better)."""

    path: str
    title: str
    snippet: str
    score: float


class LocalDoc(NamedTuple):
    """The stored text of one indexed file."""

    path: str
    title: str
    text: str
    kind: str
    sha256: str
    mtime_ns: int


def _under(root: Path, column: str = "path") -> tuple[str, tuple[str, str]]:
    """SQL condition (and its arguments) for "``column`` is a path inside root"."""
    prefix = str(root).rstrip(os.sep) + os.sep
    return f"substr({column}, 1, length(?)) = ?", (prefix, prefix)


def _text(value: Any) -> str:
    """A text column's value; TypeError (a damaged row, see Database.decoding) if not text."""
    if not isinstance(value, str):
        raise TypeError(f"expected text, found {type(value).__name__}")
    return value


def query_terms(text: str) -> list[str]:
    """The distinct words of ``text`` a search looks for, lower-cased, in order: common
    question words dropped unless nothing else is left; at most 64."""
    terms = list(dict.fromkeys(term.lower() for term in _TERM.findall(text)))
    return ([term for term in terms if term not in _STOPWORDS] or terms)[:64]


def quoted(term: str) -> str:
    """``term`` as an FTS5 string: operators and quotes in it are taken as a word."""
    return '"' + term.replace('"', '""') + '"'


def fts_query(text: str) -> str:
    """An FTS5 query matching any term of ``text``; ``""`` when it has no terms.

    Every term is double-quoted, so FTS5 operators (``AND``, ``NEAR``, ``*``, ``:``,
    quotes, parentheses) in user text are taken as words. Common question words are
    dropped unless nothing else is left.
    """
    return " OR ".join(quoted(term) for term in query_terms(text))


def search_docs(
    store: Database, query: str, limit: int = 10, folder: Path | None = None
) -> list[DocHit]:
    """The best ``limit`` documents for ``query`` (inside ``folder`` if given), best first."""
    match = fts_query(query)
    if not match or limit < 1:
        return []
    where = ""
    args: tuple[str, ...] = ()
    if folder is not None:
        cond, args = _under(Path(folder).expanduser().resolve(), "d.path")
        where = f"AND {cond}"
    sql = (
        f"SELECT d.path, d.title, snippet(docs_fts, 1, '', '', ' … ', 24), "
        f"bm25(docs_fts, {TITLE_WEIGHT}, 1.0) AS rank "
        f"FROM docs_fts JOIN docs d ON d.id = docs_fts.rowid "
        f"WHERE docs_fts MATCH ? {where} ORDER BY rank LIMIT ?"
    )
    rows = store.read(lambda c: c.execute(sql, (match, *args, limit)).fetchall())
    with store.decoding():
        return [
            DocHit(_text(row[0]), _text(row[1]), " ".join(_text(row[2]).split()), -float(row[3]))
            for row in rows
        ]


def get_doc(store: Database, path: Path | str) -> LocalDoc | None:
    """The indexed text of one file (for the fetcher of ``file://`` sources), or None."""
    key = str(path)
    row = store.read(
        lambda c: c.execute(
            "SELECT d.path, d.title, f.body, d.kind, d.sha256, d.mtime_ns FROM docs d "
            "JOIN docs_fts f ON f.rowid = d.id WHERE d.path = ?",
            (key,),
        ).fetchone()
    )
    if row is None:
        return None
    with store.decoding():
        return LocalDoc(
            _text(row[0]), _text(row[1]), _text(row[2]), _text(row[3]), _text(row[4]), int(row[5])
        )
