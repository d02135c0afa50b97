"""Local documents: index a folder into SQLite FTS5 and search it with bm25.

:func:`index_folder` walks a folder (hidden files and folders skipped, symlinks that
lead out of it ignored) and keeps one row per file its :class:`DocumentReader` reads
(HTML, Markdown, text, reStructuredText and PDF, with ``sleuth.extraction.documents``); the
reader is passed in, so the store extracts nothing itself. It is incremental: a file
whose size and mtime are unchanged is not read; a changed one is re-hashed and
re-extracted only if its bytes changed; rows of deleted files are removed. A file that
cannot be read or extracted (a corrupt PDF, no permission) is listed in
:attr:`IndexReport.failed`, never fatal.

Every run brings the index up to date, so an unchanged folder must cost little: one
walk with one ``stat`` per file, whose fingerprint (each folder's time, its files'
count, times and sizes) is compared with the one the last clean scan left in
``docs_folders``; only when they differ is every file compared with its row.

:func:`search_docs` ranks with FTS5's ``bm25()`` (title weighted above body) and
returns an FTS5 ``snippet()``; user text is reduced to quoted terms, so FTS5 query
syntax in a question can never cause an error.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol
from urllib.parse import unquote, urlsplit

from sleuth.errors import ConfigError
from sleuth.store._docsearch import (
    DocHit,
    LocalDoc,
    _text,
    _under,
    get_doc,
    search_docs,
)
from sleuth.store._docsearch import (
    fts_query as fts_query,  # re-exported: callers import it from here
)
from sleuth.store.db import Database

__all__ = [
    "DocHit",
    "DocumentReader",
    "IndexReport",
    "LocalDoc",
    "check_folder",
    "file_url",
    "get_doc",
    "index_folder",
    "path_from_file_url",
    "search_docs",
]

log = logging.getLogger(__name__)

#: Files larger than this are reported, not read (bytes).
MAX_FILE_BYTES = 50_000_000


@dataclass
class IndexReport:
    """What one :func:`index_folder` call did."""

    folder: Path
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    #: Files of other types, left alone.
    ignored: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def indexed(self) -> int:
        """Files now searchable from this folder."""
        return self.added + self.updated + self.unchanged


class _Extracted(NamedTuple):
    title: str
    text: str


class _Known(NamedTuple):
    id: int
    mtime_ns: int
    size: int
    sha256: str


# ---------------------------------------------------------------- URLs


def file_url(path: Path | str) -> str:
    """The ``file://`` URL of an absolute path (how local documents appear as sources)."""
    return Path(path).absolute().as_uri()


def path_from_file_url(url: str) -> Path | None:
    """The path of a ``file://`` URL, or None for any other URL."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
        return None
    path = unquote(parts.path)
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):
        path = path[1:]
    return Path(path)


# ---------------------------------------------------------------- reading files


class DocumentReader(Protocol):
    """What turns a file into text for the index (``sleuth.extraction.documents`` has one).

    The store reads files and keeps their text; it does not extract: the reader is
    given to :func:`index_folder`.
    """

    @property
    def suffixes(self) -> frozenset[str]:
        """The file name endings (lower case) of the files it reads; others are ignored."""

    def __call__(self, path: Path, data: bytes) -> tuple[str, str, str]:
        """The file's kind, title and text; raises ``ValueError`` when it is unreadable."""


# ---------------------------------------------------------------- walking


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError):
        return False
    return True


class _Folder(NamedTuple):
    """One folder: its path, its modification time (taken before it was listed), and
    its candidate files: plain ones as ``os.scandir`` entries (in no order), and
    symlinks that stay inside the root as paths."""

    path: str
    mtime_ns: int
    plain: list[os.DirEntry[str]]
    linked: list[str]


def _walk(root: Path, report: IndexReport, suffixes: frozenset[str]) -> Iterator[_Folder]:
    """Candidate files under ``root``, folder by folder: not hidden, not symlinked out.

    Depth first, subfolders by name, as ``os.walk`` would; but from ``os.scandir``
    entries (whose ``stat`` is one system call) and without ``Path`` objects, because an
    unchanged folder of 50,000 files is walked on every run.
    """
    # The reader's file name endings (".md": the same as Path.suffix for such endings).
    endings = tuple(suffixes)
    stack = [str(root)]
    while stack:
        top = stack.pop()
        try:
            mtime = os.stat(top, follow_symlinks=False).st_mtime_ns
            with os.scandir(top) as listing:
                entries = list(listing)
        except OSError as exc:
            report.failed.append((str(exc.filename or top), _reason(exc)))
            continue
        found = _Folder(top, mtime, [], [])
        folders = []
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()  # follows a symlink, as os.walk does
            except OSError:
                is_dir = False
            if is_dir:
                if not name.startswith(".") and not entry.is_symlink():
                    folders.append(entry.path)
            elif name.startswith("."):
                continue
            elif not name.lower().endswith(endings):
                report.ignored += 1
            elif not entry.is_symlink():
                found.plain.append(entry)
            elif _inside(Path(entry.path), root):
                found.linked.append(entry.path)
            else:
                report.ignored += 1
        yield found
        stack.extend(sorted(folders, reverse=True))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc) or type(exc).__name__


def check_folder(folder: Path) -> Path:
    """``folder`` resolved; ConfigError (one line) when it is missing or unreadable."""
    folder = Path(folder).expanduser()
    if not folder.exists():
        raise ConfigError(f"documents folder {folder} does not exist")
    if not folder.is_dir():
        raise ConfigError(f"documents folder {folder} is not a folder")
    if not os.access(folder, os.R_OK | os.X_OK):
        raise ConfigError(f"cannot read documents folder {folder}: permission denied")
    try:
        next(os.scandir(folder), None)
    except OSError as exc:
        raise ConfigError(f"cannot read documents folder {folder}: {_reason(exc)}") from None
    return folder.resolve()


# ---------------------------------------------------------------- database


def _known(store: Database, root: Path) -> dict[str, tuple[int, int, int]]:
    """Every indexed file under ``root``: its path and (mtime_ns, size, id)."""
    where, args = _under(root)
    rows = store.read(
        lambda c: c.execute(
            f"SELECT path, mtime_ns, size, id FROM docs WHERE {where}", args
        ).fetchall()
    )
    with store.decoding():
        known = {row[0]: row[1:] for row in rows}
        # Checked in bulk, not per row: this runs over the whole folder on every run.
        if not all(type(key) is str for key in known) or not all(
            type(a) is int and type(b) is int and type(c) is int for a, b, c in known.values()
        ):
            raise TypeError("a damaged row in the documents index")
    return known


def _old(store: Database, path: str) -> _Known | None:
    """The index's row of one file (for a file whose size or time changed)."""
    row = store.read(
        lambda c: c.execute(
            "SELECT id, mtime_ns, size, sha256 FROM docs WHERE path = ?", (path,)
        ).fetchone()
    )
    if row is None:
        return None
    with store.decoding():
        return _Known(int(row[0]), int(row[1]), int(row[2]), _text(row[3]))


def _save(
    store: Database, path: str, stat: os.stat_result, digest: str, kind: str, found: _Extracted
) -> None:
    """Insert or replace one document and its FTS row, in one transaction."""
    now = store.clock()

    def save(c: sqlite3.Connection) -> None:
        row = c.execute("SELECT id FROM docs WHERE path = ?", (path,)).fetchone()
        values = (stat.st_mtime_ns, stat.st_size, digest, kind, found.title, now)
        if row is None:
            doc_id = c.execute(
                "INSERT INTO docs (mtime_ns, size, sha256, kind, title, indexed_at, path) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*values, path),
            ).lastrowid
        else:
            doc_id = row[0]
            c.execute(
                "UPDATE docs SET mtime_ns = ?, size = ?, sha256 = ?, kind = ?, "
                "title = ?, indexed_at = ? WHERE id = ?",
                (*values, doc_id),
            )
            c.execute("DELETE FROM docs_fts WHERE rowid = ?", (doc_id,))
        c.execute(
            "INSERT INTO docs_fts (rowid, title, body) VALUES (?, ?, ?)",
            (doc_id, found.title, found.text),
        )

    store.write(save)


def _touch(store: Database, doc_id: int, stat: os.stat_result) -> None:
    store.write(
        lambda c: c.execute(
            "UPDATE docs SET mtime_ns = ?, size = ? WHERE id = ?",
            (stat.st_mtime_ns, stat.st_size, doc_id),
        )
    )


def _delete(store: Database, doc_ids: list[int]) -> None:
    def delete(c: sqlite3.Connection) -> None:
        for doc_id in doc_ids:
            c.execute("DELETE FROM docs_fts WHERE rowid = ?", (doc_id,))
            c.execute("DELETE FROM docs WHERE id = ?", (doc_id,))

    if doc_ids:
        store.write(delete)


# ---------------------------------------------------------------- the folder's state

#: A folder or file modified this close to the scan (ns) leaves no fingerprint: on a
#: coarse clock a change in the same tick as the scan would not change its time.
_RACY_NS = 2_000_000_000


def _fingerprint(folders: list[_Folder], started_ns: int) -> str | None:
    """A digest of every folder's time and its files' count, times and sizes; None if a
    file could not be stat'ed or something was modified just before ``started_ns``.

    Adding, removing or renaming a file changes its folder's time; rewriting one in
    place changes its own time (to the time of writing), hence the sum of its folder's.
    The plain entries' stats are cached in them for :func:`index_folder`.
    """
    digest = hashlib.blake2b(digest_size=16)
    newest = 0
    try:
        for folder in folders:
            mtimes = sizes = 0
            for entry in folder.plain:
                stat = entry.stat(follow_symlinks=False)
                mtimes += stat.st_mtime_ns
                sizes += stat.st_size
                newest = max(newest, stat.st_mtime_ns)
            for path in folder.linked:  # the target's time: it may be edited through the link
                stat = os.stat(path)
                mtimes += stat.st_mtime_ns
                sizes += stat.st_size
                newest = max(newest, stat.st_mtime_ns)
            newest = max(newest, folder.mtime_ns)
            files = len(folder.plain) + len(folder.linked)
            line = f"{folder.path}\0{folder.mtime_ns}\0{files}\0{mtimes}\0{sizes}\n"
            digest.update(line.encode("utf-8", "surrogateescape"))
    except OSError:
        return None
    return digest.hexdigest() if newest < started_ns - _RACY_NS else None


def _unchanged(store: Database, root: Path, fingerprint: str | None, files: int) -> bool:
    """Whether the index holds exactly the ``files`` files of the clean scan that left
    this ``fingerprint`` (so nothing needs to be looked at again)."""
    if fingerprint is None:
        return False
    where, args = _under(root)

    def read(c: sqlite3.Connection) -> tuple[Any, Any]:
        row = c.execute(
            "SELECT fingerprint, files FROM docs_folders WHERE root = ?", (str(root),)
        ).fetchone()
        count = c.execute(f"SELECT count(*) FROM docs WHERE {where}", args).fetchone()[0]
        return row, count

    row, count = store.read(read)
    return row is not None and tuple(row) == (fingerprint, files) and count == files


def _record(store: Database, root: Path, fingerprint: str | None, files: int) -> None:
    """Keep a clean scan's fingerprint (None: forget the root's, so it is scanned again)."""

    def save(c: sqlite3.Connection) -> None:
        c.execute("DELETE FROM docs_folders WHERE root = ?", (str(root),))
        if fingerprint is not None:
            c.execute(
                "INSERT INTO docs_folders (root, fingerprint, files) VALUES (?, ?, ?)",
                (str(root), fingerprint, files),
            )

    store.write(save)


# ---------------------------------------------------------------- indexing


def _index_file(
    store: Database, path: Path, old: _Known | None, report: IndexReport, read: DocumentReader
) -> bool:
    """Bring one file's row up to date; False when it failed (and was reported)."""
    try:
        stat = path.stat()
        if old is not None and (old.mtime_ns, old.size) == (stat.st_mtime_ns, stat.st_size):
            report.unchanged += 1
            return True
        if stat.st_size > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES // 1_000_000} MB")
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if old is not None and old.sha256 == digest:
            _touch(store, old.id, stat)
            report.unchanged += 1
            return True
        kind, title, text = read(path, data)
    except (OSError, ValueError) as exc:
        report.failed.append((str(path), _reason(exc)))
        return False
    except Exception as exc:  # a parser's own bug on a hostile file must not stop the rest
        log.debug("extraction crashed on %s", path, exc_info=True)
        report.failed.append((str(path), f"could not extract text ({type(exc).__name__})"))
        return False
    _save(store, str(path), stat, digest, kind, _Extracted(title, text))
    if old is None:
        report.added += 1
    else:
        report.updated += 1
    return True


def index_folder(
    store: Database,
    folder: Path,
    read: DocumentReader,
    progress: Callable[[Path], Any] | None = None,
) -> IndexReport:
    """Index (or bring up to date) every document under ``folder`` that ``read`` reads.

    ``read`` turns a file's bytes into its kind, title and text
    (``sleuth.extraction.documents.DocumentExtractor``: HTML and PDF files in worker
    processes, within its limits). Raises :class:`ConfigError` when the folder is missing
    or unreadable; problems with single files are listed in the report's ``failed``. A
    file that fails is removed from the index so stale text is never cited.
    ``progress`` is called with each new or changed file before it is read.
    """
    root = check_folder(folder)
    report = IndexReport(folder=root)
    started_ns = time.time_ns()  # the file system's clock, not the store's
    folders = list(_walk(root, report, read.suffixes))
    files = sum(len(f.plain) + len(f.linked) for f in folders)
    fingerprint = None if report.failed else _fingerprint(folders, started_ns)
    if _unchanged(store, root, fingerprint, files):
        report.unchanged = files
        return report
    known = _known(store, root)
    seen: set[str] = set()
    for found in folders:
        changed = list(found.linked)  # a symlink's target is stat'ed on the slow path
        for entry in found.plain:
            key = entry.path
            stamp = known.get(key)
            try:
                stat = entry.stat(follow_symlinks=False)  # cached by _fingerprint
            except OSError:  # the slow path stats it again and reports why
                stat = None
            if (
                stamp is not None
                and stat is not None
                and stat.st_mtime_ns == stamp[0]
                and stat.st_size == stamp[1]
            ):
                report.unchanged += 1  # the common case, kept cheap: no Path, no query
                seen.add(key)
            else:
                changed.append(key)
        for key in sorted(changed):  # a folder's new and changed files, by name
            if progress is not None:
                progress(Path(key))
            stamp = known.get(key)
            if _index_file(store, Path(key), _old(store, key) if stamp else None, report, read):
                seen.add(key)
    failed = {path for path, _ in report.failed}
    gone = {key: stamp[2] for key, stamp in known.items() if key not in seen}
    report.removed = len(gone.keys() - failed)  # failed ones are reported as failed
    _delete(store, list(gone.values()))
    # The fingerprint was taken before the files were read: a file changed since then
    # makes the next run's differ, so that run looks again.
    clean = not report.failed and report.indexed == files
    _record(store, root, fingerprint if clean else None, files)
    log.info(
        "indexed %s: %d added, %d updated, %d unchanged, %d removed, %d failed",
        root,
        report.added,
        report.updated,
        report.unchanged,
        report.removed,
        len(report.failed),
    )
    return report
