"""The questions of a batch: a text file (one a line), JSONL or CSV, read into
:class:`BatchQuestion` records.

* Text: one question a line; blank lines and lines starting with ``#`` are skipped.
* JSONL (``.jsonl``/``.ndjson``, or text whose first line starts with ``{``): one object a
  line, ``{"id": ..., "question": ..., "depth": 3, "mode": "deep", ...}``: every key but
  ``id`` and ``question`` is a research option (a settings field, ``max_sources`` or
  ``max-sources``) for that question only; the batch refuses, for that line alone, one
  a line may not set (:data:`sleuth.pipeline.batch.QUESTION_FIELDS`).
* CSV (``.csv``, or a first line naming a ``question`` column): a header row with a
  ``question`` column, optionally ``id``, and any option columns (an empty cell: the
  batch's value).

The input is read as a stream, a line at a time in a thread of its own (a pipe or a FIFO
that never ends holds only that thread, and reading may be given a deadline). Problems of
the whole input (unreadable, not UTF-8, empty, a line over 128 KiB, no ``question``
column, an id used twice) raise :class:`~sleuth.errors.ConfigError` before anything runs.
A single bad line (not JSON, no question, an id that is not text) becomes a question
with ``error`` set: the batch records it as failed, with the reason, and carries on.

A question without an id gets one made from its text and options (a short slug and a
hash), so it keeps its id when lines are added, removed or moved, and a rerun knows it;
the same question asked twice without ids is asked once (:attr:`Questions.repeats` says
which lines repeated an earlier one).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import queue
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError

__all__ = [
    "MAX_LINE_BYTES",
    "BatchQuestion",
    "InputLines",
    "Questions",
    "file_name",
    "make_id",
    "other_file_name",
    "parse_items",
    "read_questions",
]

#: Longest id kept as given; longer ones are refused (one line, not the batch).
MAX_ID_CHARS = 200
#: Longest line of the input, in bytes (a question is at most 2,000 characters; a JSONL
#: line carries a few options more); a longer one is an error of the whole input.
MAX_LINE_BYTES = 128 * 1024
#: Bytes the reading thread asks for at a time; what one read brings is handed over as
#: one chunk of lines, and the thread stays at most four chunks ahead.
_READ_BYTES = 1 << 16
_READ = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
_WINDOWS_RESERVED = re.compile(r"(CON|PRN|AUX|NUL|COM\d|LPT\d)(\..*)?", re.IGNORECASE)
_SLUG_CHARS = re.compile(r"[^a-z0-9]+")
#: The options of every question that sets none: one empty mapping, never changed (a big
#: file of plain lines then holds no dict per question).
_NO_OPTIONS: dict[str, Any] = {}


@dataclass(frozen=True, slots=True)
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
    """What :func:`read_questions` found: the questions in input order, the lines
    dropped because they repeated an earlier question (line, earlier line), and
    whether reading was cut short."""

    items: list[BatchQuestion]
    repeats: list[tuple[int, int]] = field(default_factory=list)
    #: Why reading stopped before the end of the input (its deadline), else None.
    cut: str | None = None


def _slug(text: str, limit: int = 40) -> str:
    return _SLUG_CHARS.sub("-", text.lower())[:limit].strip("-") or "q"


def make_id(question: str, options: Mapping[str, Any]) -> str:
    """A stable id for a question given without one: a slug of it and a short hash of it
    and its options (``what-is-oauth-2-0-3f2a9c1b``)."""
    if options:
        key = json.dumps([question, dict(options)], sort_keys=True, ensure_ascii=False, default=str)
    else:  # the same text, made quicker for the plain lines of a big file
        key = f"[{json.dumps(question, ensure_ascii=False)}, {{}}]"
    digest = hashlib.sha256(key.encode()).hexdigest()
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


def other_file_name(question_id: str, attempt: int) -> str:
    """Another file name for ``question_id`` when :func:`file_name`'s is taken by another
    id of the batch (``Acme`` beside ``acme``): a slug and a longer hash."""
    key = f"{attempt}:{question_id}".encode("utf-8", "surrogatepass")
    return f"{_slug(question_id, 32)}-{hashlib.sha256(key).hexdigest()[:16]}"


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
    } or _NO_OPTIONS
    if not isinstance(question, str) or not question.strip():
        return BatchQuestion(qid or where, "", options, line, error=f"line {line}: no question")
    question = question.strip()
    return BatchQuestion(qid or make_id(question, options), question, options, line)


def _text_items(lines: Iterable[tuple[int, str]]) -> Iterable[tuple[int, Any]]:
    for n, text in lines:
        text = text.strip()
        if text and not text.startswith("#"):
            yield n, {"question": text}


def _jsonl_items(lines: Iterable[tuple[int, str]]) -> Iterable[tuple[int, Any]]:
    for n, text in lines:
        if not text.strip():
            continue
        try:
            yield n, json.loads(text)
        except ValueError as exc:
            yield n, _BadLine(f"line {n}: not JSON ({exc})")


def _csv_items(lines: InputLines, name: str) -> Iterable[tuple[int, Any]]:
    # The csv module reads the lines with their ends, so a quoted cell may span lines.
    reader = csv.DictReader(lines.with_ends())
    start = 1  # the line the row being read began on
    try:
        fields = [f.strip().lower() for f in reader.fieldnames or []]
        if "question" not in fields:
            raise ConfigError(f"{name}: the CSV has no 'question' column")
        reader.fieldnames = fields
        start = reader.line_num + 1
        for row in reader:
            values = {
                k: (v.strip() if isinstance(v, str) else v) for k, v in row.items() if k is not None
            }
            if any(values.values()):  # else a blank row
                yield reader.line_num, values
            start = reader.line_num + 1
    except csv.Error as exc:
        if lines.cut is not None:
            return  # the input was cut mid-cell: nothing of it runs anyway
        if "field larger than field limit" in str(exc):
            raise ConfigError(
                f"{name}: line {start}: a CSV cell is longer than {MAX_LINE_BYTES // 1024} KiB"
            ) from None
        raise ConfigError(f"{name}: line {start}: not CSV ({exc})") from None


class InputLines:
    """The lines of a questions file (``-``: stdin), read in a thread as a stream.

    Iterating gives ``(line number, text)`` without the line's end; :meth:`with_ends`
    gives the text with its end (for the csv module). A line over :data:`MAX_LINE_BYTES`
    or bytes that are not UTF-8 raise :class:`~sleuth.errors.ConfigError`. Reading
    happens in a daemon thread a few thousand lines ahead, so a source that blocks (a
    FIFO with no writer, a pipe that never ends) blocks only that thread: at
    ``deadline`` the lines end, and :attr:`cut` says where.
    """

    def __init__(self, source: str | Path, deadline: float | None = None) -> None:
        self.name = "stdin" if str(source) == "-" else str(source)
        self.deadline = deadline
        #: Why the lines ended before the input did (the deadline), else None.
        self.cut: str | None = None
        self._queue: queue.Queue[list[bytes] | BaseException | None] = queue.Queue(maxsize=4)
        self._stop = threading.Event()
        self._line = 0
        self._offset = 0
        self._peeked: list[tuple[int, str]] = []
        self._lines = self._decoded()
        path = None if str(source) == "-" else Path(source).expanduser()
        if path is not None and path.is_dir():
            raise ConfigError(f"cannot read {self.name}: it is a folder")
        threading.Thread(
            target=self._reader, args=(path,), name="sleuth-batch-input", daemon=True
        ).start()

    def _reader(self, path: Path | None) -> None:
        """The thread: raw lines in chunks onto the queue, then None (or the error).

        It reads file descriptors of its own (a duplicate of stdin's), never a Python
        file object, whose lock a thread still blocked in it at exit would hold."""
        try:
            stream = sys.stdin.buffer if path is None else None
            try:
                fd = os.open(path, _READ) if path is not None else os.dup(sys.stdin.fileno())
            except (AttributeError, ValueError, io.UnsupportedOperation):
                fd = None  # a stdin that is not a file (replaced in a test): read it as is
            if fd is None:
                assert stream is not None
                self._split(getattr(stream, "read1", stream.read))
            else:
                try:
                    self._split(lambda size: os.read(fd, size))
                finally:
                    os.close(fd)
            self._put(None)
        except BaseException as exc:  # handed to the reading side, which raises it
            self._put(exc)

    def _split(self, read: Callable[[int], bytes]) -> None:
        """Lines from ``read``, handed over as they come: a pipe's first line is not held
        back until more arrive. A line over the cap ends the reading (the reading side
        refuses it)."""
        pending = b""
        while not self._stop.is_set():
            data = read(_READ_BYTES)
            if not data:
                self._put([pending] if pending else [])
                return
            lines = (pending + data).split(b"\n")
            pending = lines.pop()
            for n, line in enumerate(lines):
                if len(line) > MAX_LINE_BYTES:
                    self._put([x + b"\n" for x in lines[: n + 1]])
                    return
            if len(pending) > MAX_LINE_BYTES:
                self._put([*(x + b"\n" for x in lines), pending])
                return
            if lines:
                self._put([x + b"\n" for x in lines])

    def _put(self, item: list[bytes] | BaseException | None) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(queue.Full):
                self._queue.put(item, timeout=0.2)
                return

    def _read_chunks(self) -> Iterator[list[bytes]]:
        while True:
            wait = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
            try:
                item = self._queue.get(timeout=wait)
            except queue.Empty:
                self.cut = f"stopped reading {self.name} at line {self._line + 1}"
                return
            if item is None:
                return
            if isinstance(item, OSError):
                raise ConfigError(f"cannot read {self.name}: {item.strerror or item}") from None
            if isinstance(item, BaseException):
                raise item
            yield item

    def _decoded(self) -> Iterator[tuple[int, str]]:
        """Every line as text, with its end."""
        for chunk in self._read_chunks():
            for raw in chunk:
                self._line += 1
                if len(raw.rstrip(b"\r\n")) > MAX_LINE_BYTES:
                    raise ConfigError(
                        f"{self.name}: line {self._line} is longer than "
                        f"{MAX_LINE_BYTES // 1024} KiB"
                    )
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise ConfigError(
                        f"cannot read {self.name}: not UTF-8 text (byte {self._offset + exc.start})"
                    ) from None
                if self._line == 1:
                    text = text.removeprefix("\ufeff")
                self._offset += len(raw)
                yield self._line, text
            if self.deadline is not None and time.monotonic() >= self.deadline:
                self.cut = f"stopped reading {self.name} at line {self._line + 1}"
                return

    def first_text(self) -> str | None:
        """The first line that is not blank (read ahead, still given by iteration)."""
        for n, text in self._lines:
            self._peeked.append((n, text))
            if text.strip():
                return text.rstrip("\r\n")
        return None

    def with_ends(self) -> Iterator[str]:
        """The text of each line, its end kept."""
        while self._peeked:
            yield self._peeked.pop(0)[1]
        for _, text in self._lines:
            yield text

    def __iter__(self) -> Iterator[tuple[int, str]]:
        while self._peeked:
            n, text = self._peeked.pop(0)
            yield n, text.rstrip("\r\n")
        for n, text in self._lines:
            yield n, text.rstrip("\r\n")

    def close(self) -> None:
        """Stop the reading thread (it ends after the read it is in, if any)."""
        self._stop.set()


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


def read_questions(source: str | Path, *, deadline: float | None = None) -> Questions:
    """The questions of a text, JSONL or CSV file (``-``: stdin); see the module doc.

    The input is read as a stream, a line at a time (at most :data:`MAX_LINE_BYTES`
    each), in a thread of its own: a pipe or FIFO that is slow or never ends holds no
    one. ``deadline`` (a :func:`time.monotonic` time): reading stops there, and
    :attr:`Questions.cut` says where.

    Raises :class:`~sleuth.errors.ConfigError` (one line) when the input as a whole
    cannot be used.
    """
    lines = InputLines(source, deadline)
    try:
        first = lines.first_text()
        kind = _kind(lines.name, first) if first is not None else "text"
        if kind == "csv":
            rows: Iterable[tuple[int, Any]] = _csv_items(lines, lines.name)
        elif kind == "jsonl":
            rows = _jsonl_items(lines)
        else:
            rows = _text_items(lines)
        questions = _collect(rows, lines.name)
    finally:
        lines.close()
    questions.cut = lines.cut
    if not questions.items and lines.cut is None:
        raise ConfigError(f"{lines.name} holds no questions")
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
