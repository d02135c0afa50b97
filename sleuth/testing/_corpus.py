"""The offline web's corpus: what ``manifest.json`` describes, read once at start."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Corpus", "Doc", "DocEntry", "HostileEntry", "Topic", "default_corpus_dir"]

#: Every hostile case the web serves; ``OfflineWeb.hostile`` has exactly these keys.
HOSTILE_CASES = (
    "slow_drip",
    "not_found",
    "forbidden",
    "server_error",
    "redirect_loop",
    "endless",
    "gzip_bomb",
    "binary_html",
    "wrong_charset",
    "nav_only",
    "pdf",
    "empty",
)


@dataclass(frozen=True)
class Doc:
    """One corpus document as the offline web serves it.

    ``text`` is the plain text the search index was built from (extracted once,
    when the corpus was built); ``source`` names the data set and file it was
    copied from and ``licence`` that data set's licence.
    """

    id: str
    url: str
    title: str
    text: str
    content_type: str
    source: str
    licence: str
    original_url: str = ""


@dataclass(frozen=True)
class Topic:
    """A research question and the corpus documents a good search should find for it."""

    id: str
    question: str
    expected: tuple[str, ...]


@dataclass(frozen=True)
class DocEntry:
    """A manifest document before it has an address."""

    id: str
    path: str
    file: str
    content_type: str
    title: str
    text: str
    source: str
    licence: str
    original_url: str


@dataclass(frozen=True)
class HostileEntry:
    """A hostile case from the manifest: where it lives and what search claims about it."""

    name: str
    path: str
    title: str
    snippet: str
    text: str = ""
    topic: str | None = None
    file: str | None = None
    expect_text: str | None = None
    declared_charset: str | None = None


@dataclass
class Corpus:
    """The loaded manifest plus lazy access to the stored page bytes."""

    root: Path
    docs: list[DocEntry]
    hostile: dict[str, HostileEntry]
    topics: list[Topic]
    _bodies: dict[str, bytes] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, root: Path) -> Corpus:
        """Read ``root/manifest.json``; raise ``FileNotFoundError`` if there is none."""
        data = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        docs = [
            DocEntry(**{key: entry[key] for key in DocEntry.__dataclass_fields__})
            for entry in data.get("docs", [])
        ]
        hostile = {
            name: _hostile_entry(name, entry) for name, entry in data.get("hostile", {}).items()
        }
        missing = [name for name in HOSTILE_CASES if name not in hostile]
        if missing:
            raise ValueError(f"{root}/manifest.json lacks hostile cases: {', '.join(missing)}")
        topics = [
            Topic(entry["id"], entry["question"], tuple(entry["expected"]))
            for entry in data.get("topics", [])
        ]
        return cls(root, docs, hostile, topics)

    def body(self, file: str) -> bytes:
        """The bytes stored in ``file`` (relative to the corpus), gunzipped, cached."""
        if file not in self._bodies:
            raw = (self.root / file).read_bytes()
            self._bodies[file] = gzip.decompress(raw) if file.endswith(".gz") else raw
        return self._bodies[file]


def _hostile_entry(name: str, entry: dict[str, Any]) -> HostileEntry:
    keys = HostileEntry.__dataclass_fields__
    return HostileEntry(
        name=name, **{key: value for key, value in entry.items() if key in keys and key != "name"}
    )


def default_corpus_dir() -> Path | None:
    """``tests/data/corpus`` of this checkout (or of the working directory), if present."""
    here = Path(__file__).resolve()
    for candidate in (
        here.parents[2] / "tests" / "data" / "corpus",
        Path.cwd() / "tests" / "data" / "corpus",
    ):
        if (candidate / "manifest.json").is_file():
            return candidate
    return None
