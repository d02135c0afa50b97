"""The question sets ``sleuth eval`` reads, as :class:`EvalQuestion` records.

* SimpleQA's CSV (``metadata,problem,answer``: the question is ``problem``), or any CSV
  with a ``question`` (or ``problem``) column and an ``answer`` column, optionally
  ``id`` and ``aliases`` (several separated by ``|``).
* HotpotQA's and MuSiQue's JSON: a list of objects with ``question`` and ``answer``, the
  id in ``_id`` or ``id``, accepted variants in ``answer_aliases`` (MuSiQue); other keys
  (contexts, decompositions) are ignored.
* JSONL, one object a line: ``question``, ``answer``, optional ``id`` and ``aliases``
  (MuSiQue's ``answer_aliases`` too).

A question without an id gets one made from its text (:func:`~sleuth.pipeline.batch.input.make_id`),
so a rerun knows it. Problems of the whole file (unreadable, not UTF-8, not the shape of
any set, no question) raise :class:`~sleuth.errors.ConfigError`; a single line without a
question or answer is left out and counted in :attr:`QuestionSet.dropped`.

:data:`SAMPLES` names the sets shipped with sleuth (``--sample NAME``): their questions
(``questions.jsonl``) and the documents they are asked over (``docs.jsonl``, one
``{"title", "text"}`` a line: one file in the package, not hundreds), written out as a
folder of Markdown notes under sleuth's home on first use (:func:`sample_docs`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError
from sleuth.pipeline.batch.input import MAX_ID_CHARS, make_id

__all__ = [
    "SAMPLES",
    "EvalQuestion",
    "QuestionSet",
    "note_name",
    "read_set",
    "sample_docs",
    "sample_set",
]

#: The shipped sets: name → what it is (``sleuth eval --sample NAME``).
SAMPLES = {
    "hotpotqa": "20 HotpotQA questions (CC BY-SA 4.0) over their 200 Wikipedia paragraphs",
}


@dataclass(frozen=True)
class EvalQuestion:
    """One question of a set: its id, text, gold ``answer``, other accepted forms of the
    answer (``aliases``), and the line or item it came from (1-based)."""

    id: str
    question: str
    answer: str
    aliases: tuple[str, ...] = ()
    line: int | None = None


@dataclass
class QuestionSet:
    """A question set: its ``name`` (the file's stem or the sample's name), the
    questions in order, and the items ``dropped`` (no question or no answer, or an id
    already used), each with why."""

    name: str
    questions: list[EvalQuestion]
    dropped: list[str] = field(default_factory=list)


def _text(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int | float):
        return str(value)
    return " ".join(value.split()) if isinstance(value, str) else ""


def _aliases(data: Mapping[str, Any]) -> tuple[str, ...]:
    found: list[str] = []
    for key in ("aliases", "answer_aliases"):
        value = data.get(key)
        if isinstance(value, str):
            value = value.split("|")
        if isinstance(value, list):
            found += [t for t in (_text(v) for v in value) if t]
    return tuple(dict.fromkeys(found))


def _question(n: int, data: Any, where: str) -> EvalQuestion | str:
    """One item as a question, or why it was left out."""
    if not isinstance(data, Mapping):
        return f"{where} {n}: not an object"
    question = _text(data.get("question") or data.get("problem"))
    answer = _text(data.get("answer"))
    if not question:
        return f"{where} {n}: no question"
    if not answer:
        return f"{where} {n}: no answer"
    given = _text(data.get("id") or data.get("_id"))
    qid = given if given and len(given) <= MAX_ID_CHARS else make_id(question, {})
    return EvalQuestion(qid, question, answer, _aliases(data), n)


def _collect(items: Iterable[tuple[int, Any]], name: str, where: str) -> QuestionSet:
    out = QuestionSet(name, [])
    seen: set[str] = set()
    for n, data in items:
        item = _question(n, data, where)
        if isinstance(item, str):
            out.dropped.append(item)
        elif item.id in seen:
            out.dropped.append(f"{where} {n}: id {item.id!r} already used")
        else:
            seen.add(item.id)
            out.questions.append(item)
    if not out.questions:
        why = f" ({out.dropped[0]})" if out.dropped else ""
        raise ConfigError(f"{name}: no question with an answer{why}")
    return out


def _csv_rows(text: str, name: str) -> Iterable[tuple[int, Any]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = [f.strip().lower() for f in reader.fieldnames or []]
    if not ({"question", "problem"} & set(fields)) or "answer" not in fields:
        raise ConfigError(
            f"{name}: the CSV needs a 'question' (or SimpleQA's 'problem') and an 'answer' column"
        )
    reader.fieldnames = fields
    for row in reader:
        if any((v or "").strip() for k, v in row.items() if isinstance(v, str)):
            yield reader.line_num, row


def _json_rows(text: str, name: str) -> Iterable[tuple[int, Any]]:
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{name}: not JSON ({exc})") from None
        return list(enumerate(data, start=1))
    rows: list[tuple[int, Any]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append((n, json.loads(line)))
            except ValueError:
                rows.append((n, None))
    return rows


def read_set(source: str | Path) -> QuestionSet:
    """The questions of a CSV, JSON or JSONL file (see the module doc)."""
    path = Path(source).expanduser()
    if path.is_dir():
        raise ConfigError(f"cannot read {source}: it is a folder")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {source}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {source}: not UTF-8 text (byte {exc.start})") from None
    name = path.stem
    if path.suffix.lower() == ".csv" or not text.lstrip().startswith(("[", "{")):
        return _collect(_csv_rows(text, str(source)), name, "line")
    kind = "item" if text.lstrip().startswith("[") else "line"
    return _collect(_json_rows(text, str(source)), name, kind)


def _sample_folder(name: str) -> Path:
    if name not in SAMPLES:
        raise ConfigError(f"no sample named {name!r} (there is: {', '.join(sorted(SAMPLES))})")
    return Path(str(files("sleuth") / "data" / "eval" / name))


def sample_set(name: str) -> QuestionSet:
    """A shipped set's questions by name (:data:`SAMPLES`); its documents:
    :func:`sample_docs`."""
    found = read_set(_sample_folder(name) / "questions.jsonl")
    found.name = name
    return found


def note_name(title: str) -> str:
    """A note's file name: a slug of its title and a short hash (titles may clash as slugs)."""
    slug = re.sub(r"[^\w-]+", "_", title).strip("_")[:60] or "note"
    return f"{slug}-{hashlib.sha1(title.encode()).hexdigest()[:6]}.md"


def sample_docs(name: str, home: Path) -> Path:
    """The documents folder of the shipped set ``name`` under ``home`` (``samples/``),
    written on first use: each ``docs.jsonl`` line as ``# Title``, a blank line, the
    text. The folder's name holds a hash of the shipped file, so a new sleuth version's
    documents never mix with an older one's; it is written beside and renamed into
    place whole, so a killed first use leaves no half folder."""
    data = (_sample_folder(name) / "docs.jsonl").read_bytes()
    target = home.expanduser() / "samples" / f"{name}-{hashlib.sha256(data).hexdigest()[:12]}"
    if target.is_dir():
        return target
    try:
        home.expanduser().mkdir(mode=0o700, parents=True, exist_ok=True)
        target.parent.mkdir(exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{name}-"))
        try:
            for line in data.decode("utf-8").splitlines():
                note = json.loads(line)
                text = f"# {note['title']}\n\n{note['text']}\n"
                (tmp / note_name(note["title"])).write_text(text, encoding="utf-8")
            os.rename(tmp, target)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not target.is_dir():  # else another process wrote it first
                raise
    except OSError as exc:
        raise ConfigError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target
