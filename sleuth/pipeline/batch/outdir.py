"""A batch's output folder: ``results.jsonl``, ``reports/``, and what a rerun skips.

* ``results.jsonl``: one line per question that finished (done or failed), appended as
  it finishes with one ``write`` and an ``fsync``. A kill at any moment leaves at most
  the last line cut short; the next open cuts that torn tail off, so the file is only
  ever whole lines, and each question is in it once.
* ``reports/<name>.md`` (and ``.json``/``.html`` with ``--format``), each written whole
  (a temporary file and a rename) before its line is appended: a line means a report.
  Names are unique in the folder whatever the file system: two ids whose names one would
  take for one file (``Acme`` and ``acme``, ``../collide`` and ``collide-599561b7``, ids
  apart only in an invisible character) get two names.
* A rerun skips the ids whose line says ``done``; with ``retry_failed`` it drops the
  ``failed`` lines first (one rewrite, by rename) and runs those again, else skips them.
* One batch at a time: a lock on ``.lock`` (POSIX ``flock``) refuses a second process on
  the same folder, which would run the same questions twice.

Someone else may have planted things in the folder: nothing in it is followed. The
folder is opened once and its entries are reached through that open folder, never by a
path looked up again; ``.lock``, ``results.jsonl`` and ``reports`` that are links (or
not a regular file, not a folder, a hard link) are refused, one line, before anything
runs; a link in place of a report is replaced, not written through.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sleuth._files import write_atomic_at
from sleuth._names import fold_name
from sleuth._valid import valid_text
from sleuth.errors import ConfigError
from sleuth.pipeline.batch.input import file_name, other_file_name
from sleuth.pipeline.batch.one import BatchResult
from sleuth.report import render_report

__all__ = ["RESULTS", "OutDir"]

RESULTS = "results.jsonl"
REPORTS = "reports"
LOCK = ".lock"
_SUFFIX = {"markdown": ".md", "json": ".json", "html": ".html"}
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO in its place must not block the open
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: errno values of an open refused because the name is a link (O_NOFOLLOW): ELOOP on
#: Linux and macOS, EMLINK on FreeBSD.
_LINK_ERRORS = {errno.ELOOP, errno.EMLINK}
#: Whether the folder's entries can be reached through the open folder (POSIX); where
#: not (Windows, where making a link takes a privilege), they are reached by path.
_AT = os.open in os.supports_dir_fd


class OutDir:
    """An output folder opened for one batch (see the module doc); close it at the end.

    ``done`` and ``failed`` (id: error) are what earlier runs recorded.
    """

    def __init__(self, path: Path, formats: list[str], folder: int | None) -> None:
        self.path = path
        self.formats = formats
        self._folder = folder
        self._lock: int | None = None
        self._reports: int | None = None
        self._fd: int | None = None
        self.done: set[str] = set()
        self.failed: dict[str, str] = {}
        self._names: dict[str, str] = {}  # id: its report's file name (no suffix)
        self._taken: set[str] = set()  # those names, folded

    @classmethod
    def open(cls, path: Path, *, fmt: str = "markdown", retry_failed: bool = False) -> OutDir:
        """Open (creating) ``path`` for a batch; ConfigError (one line) when it cannot be
        used: a file, not writable, in use by another batch, or holding links."""
        path = path.expanduser()
        if path.exists() and not path.is_dir():
            raise ConfigError(f"cannot use {path} as the output folder: it is a file")
        try:
            path.mkdir(parents=True, exist_ok=True)
            # The user's own path may be a link; what is inside it is never followed.
            folder = os.open(path, os.O_RDONLY | _DIRECTORY | _CLOEXEC) if _AT else None
        except OSError as exc:
            raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
        formats = ["markdown", *([fmt] if fmt != "markdown" else [])]
        out = cls(path, formats, folder)
        try:
            out._lock = out._open_file(LOCK, os.O_RDWR | os.O_CREAT)
            out._take_lock()
            out._reports = out._open_reports()
            out._fd = out._open_file(RESULTS, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            out._load(retry_failed)
        except OSError as exc:
            out.close()
            raise ConfigError(f"cannot write {path / RESULTS}: {exc.strerror or exc}") from None
        except BaseException:
            out.close()
            raise
        return out

    # -- the folder's own files, never through a link ----------------------------------------
    def _at(self, name: str) -> str:
        """How the calls given ``dir_fd=self._folder`` name ``name``: itself, or its path."""
        return name if _AT else str(self.path / name)

    def _refused(self, name: str, why: str) -> ConfigError:
        return ConfigError(
            f"refusing {self.path / name}: it is {why}; sleuth writes only its own files "
            "in an output folder (move it away, or choose another folder)"
        )

    def _open_file(self, name: str, flags: int) -> int:
        """``name`` in the folder, opened without following a link: a regular file of one
        name only (not a link, a FIFO, a device, a hard link to a file elsewhere)."""
        try:
            fd = os.open(
                self._at(name),
                flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC,
                0o644,
                dir_fd=self._folder,
            )
        except OSError as exc:
            if exc.errno in _LINK_ERRORS:
                raise self._refused(name, "a symbolic link") from None
            raise
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            os.close(fd)
            why = "a hard link" if stat.S_ISREG(info.st_mode) else "not a regular file"
            raise self._refused(name, why)
        return fd

    def _open_reports(self) -> int:
        """The ``reports`` folder, made if missing, opened without following a link: it
        cannot lead outside the output folder."""
        with contextlib.suppress(FileExistsError):
            os.mkdir(REPORTS, 0o777, dir_fd=self._folder)
        try:
            return os.open(
                REPORTS, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=self._folder
            )
        except OSError as exc:
            if exc.errno in _LINK_ERRORS:
                raise self._refused(REPORTS, "a symbolic link") from None
            if exc.errno == errno.ENOTDIR:
                raise self._refused(REPORTS, "not a folder") from None
            raise

    def _take_lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # Windows: no lock (the README says so)
            return
        assert self._lock is not None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{self.path} is in use by another sleuth batch") from None

    # -- what earlier runs recorded ------------------------------------------------------------
    def _read_results(self) -> bytes:
        assert self._fd is not None
        os.lseek(self._fd, 0, os.SEEK_SET)
        parts = []
        while chunk := os.read(self._fd, 1 << 20):
            parts.append(chunk)
        return b"".join(parts)

    def _load(self, retry_failed: bool) -> None:
        """Read what earlier runs recorded; cut a torn last line; drop failed ones to retry."""
        data = self._read_results()
        whole = data[: data.rfind(b"\n") + 1]
        lines: list[tuple[bytes, dict[str, Any]]] = []
        for raw in whole.splitlines(keepends=True):
            try:
                entry = json.loads(raw)
            except ValueError:
                continue  # not one of ours: kept, never read
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                lines.append((raw, entry))
        for _, entry in lines:
            if entry.get("status") == "done":
                self.done.add(entry["id"])
                self.failed.pop(entry["id"], None)
                self._recorded_name(entry)
            elif entry["id"] not in self.done:
                self.failed[entry["id"]] = str(entry.get("error") or "failed")
        if retry_failed and self.failed:
            kept = b"".join(raw for raw, entry in lines if entry.get("status") == "done")
            self._rewrite(kept)
            self.failed.clear()
        elif len(whole) != len(data):
            assert self._fd is not None  # a line cut short by a kill
            os.ftruncate(self._fd, len(whole))
            os.fsync(self._fd)

    def _recorded_name(self, entry: dict[str, Any]) -> None:
        """Keep the report name an earlier run gave a question: no new id may take it."""
        recorded = entry.get("report_file")
        if isinstance(recorded, str) and recorded:
            name = recorded.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            self._names.setdefault(entry["id"], name)
            self._taken.add(fold_name(name))

    def _rewrite(self, data: bytes) -> None:
        """``results.jsonl`` replaced by ``data`` (a new file and a rename), and reopened."""
        tmp = f".{RESULTS}.{secrets.token_hex(4)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
        fd = os.open(self._at(tmp), flags, 0o644, dir_fd=self._folder)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            os.close(fd)
            os.replace(
                self._at(tmp), self._at(RESULTS), src_dir_fd=self._folder, dst_dir_fd=self._folder
            )
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(self._at(tmp), dir_fd=self._folder)
            raise
        assert self._fd is not None
        os.close(self._fd)
        self._fd = self._open_file(RESULTS, os.O_RDWR | os.O_APPEND)

    # -- report names ----------------------------------------------------------------------------
    def name_reports(self, ids: Iterable[str]) -> None:
        """Give each id its report's file name now, in this order (the input's), so the
        names do not depend on which question finishes first."""
        for question_id in ids:
            self._name(question_id)

    def _name(self, question_id: str) -> str:
        name = self._names.get(question_id)
        if name is None:
            name, attempt = file_name(question_id), 0
            while fold_name(name) in self._taken:
                attempt += 1
                name = other_file_name(question_id, attempt)
            self._names[question_id] = name
            self._taken.add(fold_name(name))
        return name

    def report_path(self, question_id: str, fmt: str = "markdown") -> Path:
        """Where the report of ``question_id`` is written in format ``fmt``."""
        return self.path / REPORTS / (self._name(question_id) + _SUFFIX[fmt])

    # -- writing ---------------------------------------------------------------------------------
    def write(self, result: BatchResult, extra: Mapping[str, Any] | None = None) -> None:
        """Record one finished question: its report files, then its line, with ``extra``
        keys added (skipped questions are not recorded: a rerun runs them)."""
        if result.status == "skipped":
            return
        assert self._fd is not None
        line = {**result.to_json_dict(), **(extra or {})}
        try:
            if result.report is not None:
                for fmt in self.formats:
                    path = self.report_path(result.id, fmt)
                    text = render_report(result.report, fmt)
                    name = path.name if _AT else str(path)
                    write_atomic_at(self._reports, name, text, path)
                line["report_file"] = f"{REPORTS}/{self.report_path(result.id).name}"
            # One write of the whole line (a kill may still cut it: see _load).
            view = memoryview(
                (valid_text(json.dumps(line, ensure_ascii=False)) + "\n").encode("utf-8")
            )
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fsync(self._fd)
        except OSError as exc:
            raise ConfigError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        if result.status == "done":
            self.done.add(result.id)
        else:
            self.failed[result.id] = result.error or "failed"

    def close(self) -> None:
        """Close the results file and the folder, and release the lock."""
        for attr in ("_fd", "_reports", "_lock", "_folder"):
            fd = getattr(self, attr)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, attr, None)
