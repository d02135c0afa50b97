"""The questions of a batch: a text file (one a line), JSONL or CSV, read into
:class:`BatchQuestion` records.

* Text: one question a line; blank lines and lines starting with ``#`` are skipped.
* JSONL (``.jsonl``/``.ndjson``, or text whose first line starts with ``{``): one object a
  line, ``{"id": ..., "question": ..., "depth": 3, "mode": "deep", ...}``: every key but
  ``id`` and ``question`` is a research option (a settings field, ``max_sources`` or
  ``max-sources``) for that question only.
* CSV (``.csv``, or a first line naming a ``question`` column): a header row with a
  ``question`` column, optionally ``id``, and any option columns (an empty cell: the
  batch's value).

Problems of the whole input (unreadable, not UTF-8, empty, no ``question`` column, an id
used twice) raise :class:`~sleuth.errors.ConfigError` before anything runs. A single bad
line (not JSON, no question, an id that is not text) becomes a question with ``error``
set: the batch records it as failed, with the reason, and carries on.

A question without an id gets one made from its text and options (a short slug and a
hash), so it keeps its id when lines are added, removed or moved, and a rerun knows it;
the same question asked twice without ids is asked once (:attr:`Questions.repeats` says
which lines repeated an earlier one).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError

__all__ = ["BatchQuestion", "Questions", "file_name", "make_id", "parse_items", "read_questions"]

#: Longest id kept as given; longer ones are refused (one line, not the batch).
MAX_ID_CHARS = 200
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
_WINDOWS_RESERVED = re.compile(r"(CON|PRN|AUX|NUL|COM\d|LPT\d)(\..*)?", re.IGNORECASE)
_SLUG_CHARS = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class BatchQuestion:
    """One question of a batch: its ``id``, text, per-question ``options`` (settings
    fields), the ``line`` it came from (1-based; None from Python), and ``error``: why
    it cannot run (a bad line), or None."""

    id: str
    question: str
    options: Mapping[str, Any] = field(default_factory=dict)
    line: int | None = None
    error: str | None = None


@dataclass
class Questions:
    """What :func:`read_questions` found: the questions in input order, and the lines
    dropped because they repeated an earlier question (line, earlier line)."""

    items: list[BatchQuestion]
    repeats: list[tuple[int, int]] = field(default_factory=list)


def _slug(text: str, limit: int = 40) -> str:
    return _SLUG_CHARS.sub("-", text.lower())[:limit].strip("-") or "q"


def make_id(question: str, options: Mapping[str, Any]) -> str:
    """A stable id for a question given without one: a slug of it and a short hash of it
    and its options (``what-is-oauth-2-0-3f2a9c1b``)."""
    digest = hashlib.sha256(
        json.dumps(
            [question, dict(options)], sort_keys=True, ensure_ascii=False, default=str
        ).encode()
    ).hexdigest()
    return f"{_slug(question)}-{digest[:8]}"


def file_name(question_id: str) -> str:
    """The file name (without extension) of a question's report: the id when it is a safe
    name on every system, else a slug of it and a hash (``../x`` never leaves reports/)."""
    if (
        _SAFE_NAME.fullmatch(question_id)
        and not _WINDOWS_RESERVED.fullmatch(question_id)
        and not question_id.endswith(".")
    ):
        return question_id
    digest = hashlib.sha256(question_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{_slug(question_id, 32)}-{digest}"


def _id_of(value: Any) -> str | None:
    """An id as given (text, or a whole number); None when it is not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip() and len(value.strip()) <= MAX_ID_CHARS:
        return value.strip()
    return None


def _item(line: int, data: Any) -> BatchQuestion:
    """One JSONL object or CSV row as a question (``error`` set when it cannot run)."""
    where = f"line-{line}"
    if not isinstance(data, Mapping):
        return BatchQuestion(where, "", line=line, error=f"line {line}: not a JSON object")
    given = data.get("id")
    qid = _id_of(given) if given not in (None, "") else None
    if given not in (None, "") and qid is None:
        return BatchQuestion(
            where,
            "",
            line=line,
            error=f"line {line}: the id must be text "
            f"(at most {MAX_ID_CHARS} characters) or a whole number",
        )
    question = data.get("question")
    options = {
        str(k).replace("-", "_"): v
        for k, v in data.items()
        if k not in ("id", "question") and v not in (None, "")
    }
    if not isinstance(question, str) or not question.strip():
        return BatchQuestion(qid or where, "", options, line, error=f"line {line}: no question")
    question = question.strip()
    return BatchQuestion(qid or make_id(question, options), question, options, line)


def _text_items(lines: list[str]) -> Iterable[tuple[int, Any]]:
    for n, text in enumerate(lines, start=1):
        text = text.strip()
        if text and not text.startswith("#"):
            yield n, {"question": text}


def _jsonl_items(lines: list[str]) -> Iterable[tuple[int, Any]]:
    for n, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            yield n, json.loads(text)
        except ValueError as exc:
            yield n, _BadLine(f"line {n}: not JSON ({exc})")


def _csv_items(text: str, name: str) -> Iterable[tuple[int, Any]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = [f.strip().lower() for f in reader.fieldnames or []]
    if "question" not in fields:
        raise ConfigError(f"{name}: the CSV has no 'question' column")
    reader.fieldnames = fields
    for row in reader:
        values = {
            k: (v.strip() if isinstance(v, str) else v) for k, v in row.items() if k is not None
        }
        if not any(values.values()):
            continue  # a blank row
        yield reader.line_num, values


class _BadLine:
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _kind(name: str, first: str) -> str:
    suffix = Path(name).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    if first.lstrip().startswith("{"):
        return "jsonl"
    header = [cell.strip().lower() for cell in next(csv.reader([first]), [])]
    if suffix != ".txt" and "question" in header:
        return "csv"
    return "text"


def _read(source: str | Path) -> tuple[str, str]:
    """The text of ``source`` (``-``: stdin) and the name errors call it by."""
    if str(source) == "-":
        data = sys.stdin.buffer.read()
        name = "stdin"
    else:
        path = Path(source).expanduser()
        name = str(source)
        if path.is_dir():
            raise ConfigError(f"cannot read {name}: it is a folder")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig"), name
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {name}: not UTF-8 text (byte {exc.start})") from None


def read_questions(source: str | Path) -> Questions:
    """The questions of a text, JSONL or CSV file (``-``: stdin); see the module doc.

    Raises :class:`~sleuth.errors.ConfigError` (one line) when the input as a whole
    cannot be used.
    """
    text, name = _read(source)
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), "")
    kind = _kind(name, first)
    if kind == "csv":
        rows: Iterable[tuple[int, Any]] = _csv_items(text, name)
    elif kind == "jsonl":
        rows = _jsonl_items(lines)
    else:
        rows = _text_items(lines)
    questions = _collect(rows, name)
    if not questions.items:
        raise ConfigError(f"{name} holds no questions")
    return questions


def parse_items(items: Iterable[str | Mapping[str, Any] | BatchQuestion]) -> Questions:
    """Questions given in Python: texts, ``{"question": ..., "id": ..., **options}``
    mappings, or :class:`BatchQuestion` records (numbered from 1 as lines)."""
    rows = (
        (n, {"question": item} if isinstance(item, str) else item)
        for n, item in enumerate(items, start=1)
    )
    return _collect(rows, "questions")


def _collect(rows: Iterable[tuple[int, Any]], name: str) -> Questions:
    """Questions from numbered rows; explicit ids used twice are an error of the input."""
    out = Questions([])
    seen: dict[str, int] = {}
    explicit: set[str] = set()
    for n, row in rows:
        if isinstance(row, BatchQuestion):
            item, given = row, True
        elif isinstance(row, _BadLine):
            item, given = BatchQuestion(f"line-{n}", "", line=n, error=row.reason), False
        else:
            item = _item(n, row)
            given = isinstance(row, Mapping) and row.get("id") not in (None, "")
        if item.id in seen:
            if given or item.id in explicit:
                raise ConfigError(
                    f"{name}: line {n}: id {item.id!r} is already used on line {seen[item.id]}"
                )
            out.repeats.append((n, seen[item.id]))
            continue
        seen[item.id] = n
        if given:
            explicit.add(item.id)
        out.items.append(item)
    return out
