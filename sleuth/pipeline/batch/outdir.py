"""A batch's output folder: ``results.jsonl``, ``reports/``, and what a rerun skips.

* ``results.jsonl``: one line per question that finished (done or failed), appended as
  it finishes with one ``write`` and an ``fsync``. A kill at any moment leaves at most
  the last line cut short; the next open cuts that torn tail off, so the file is only
  ever whole lines, and each question is in it once.
* ``reports/<name>.md`` (and ``.json``/``.html`` with ``--format``), each written whole
  (a temporary file and a rename) before its line is appended: a line means a report.
* A rerun skips the ids whose line says ``done``; with ``retry_failed`` it drops the
  ``failed`` lines first (one rewrite, by rename) and runs those again, else skips them.
* One batch at a time: a lock on ``.lock`` (POSIX ``flock``) refuses a second process on
  the same folder, which would run the same questions twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any

from sleuth._files import write_atomic
from sleuth._valid import valid_text
from sleuth.errors import ConfigError
from sleuth.pipeline.batch.input import file_name
from sleuth.pipeline.batch.one import BatchResult
from sleuth.report import render_report

__all__ = ["RESULTS", "OutDir"]

RESULTS = "results.jsonl"
REPORTS = "reports"


class OutDir:
    """An output folder opened for one batch (see the module doc); close it at the end.

    ``done`` and ``failed`` (id: error) are what earlier runs recorded.
    """

    def __init__(self, path: Path, formats: list[str], lock: IO[bytes] | None) -> None:
        self.path = path
        self.formats = formats
        self._lock = lock
        self.done: set[str] = set()
        self.failed: dict[str, str] = {}
        self._fd: int | None = None

    @classmethod
    def open(cls, path: Path, *, fmt: str = "markdown", retry_failed: bool = False) -> OutDir:
        """Open (creating) ``path`` for a batch; ConfigError (one line) when it cannot be
        used: a file, not writable, or in use by another batch."""
        path = path.expanduser()
        if path.exists() and not path.is_dir():
            raise ConfigError(f"cannot use {path} as the output folder: it is a file")
        try:
            (path / REPORTS).mkdir(parents=True, exist_ok=True)
            lock = (path / ".lock").open("a+b")
        except OSError as exc:
            raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
        formats = ["markdown", *([fmt] if fmt != "markdown" else [])]
        out = cls(path, formats, lock)
        try:
            out._take_lock()
            out._load(retry_failed)
            out._fd = os.open(path / RESULTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            out.close()
            raise ConfigError(f"cannot write {path / RESULTS}: {exc.strerror or exc}") from None
        except BaseException:
            out.close()
            raise
        return out

    def _take_lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # Windows: no lock (the README says so)
            return
        assert self._lock is not None
        try:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{self.path} is in use by another sleuth batch") from None

    def _load(self, retry_failed: bool) -> None:
        """Read what earlier runs recorded; cut a torn last line; drop failed ones to retry."""
        results = self.path / RESULTS
        if not results.exists():
            return
        data = results.read_bytes()
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
            elif entry["id"] not in self.done:
                self.failed[entry["id"]] = str(entry.get("error") or "failed")
        if retry_failed and self.failed:
            kept = b"".join(raw for raw, entry in lines if entry.get("status") == "done")
            self._rewrite(results, kept)
            self.failed.clear()
        elif len(whole) != len(data):
            with results.open("r+b") as handle:  # a line cut short by a kill
                handle.truncate(len(whole))
                handle.flush()
                os.fsync(handle.fileno())

    @staticmethod
    def _rewrite(results: Path, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(dir=results.parent, prefix=f".{results.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, results)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def report_path(self, question_id: str, fmt: str = "markdown") -> Path:
        """Where the report of ``question_id`` is written in format ``fmt``."""
        suffix = {"markdown": ".md", "json": ".json", "html": ".html"}[fmt]
        return self.path / REPORTS / (file_name(question_id) + suffix)

    def write(self, result: BatchResult) -> None:
        """Record one finished question: its report files, then its line (skipped
        questions are not recorded: a rerun runs them)."""
        if result.status == "skipped":
            return
        assert self._fd is not None
        line = result.to_json_dict()
        try:
            if result.report is not None:
                for fmt in self.formats:
                    write_atomic(
                        self.report_path(result.id, fmt), render_report(result.report, fmt)
                    )
                line["report_file"] = str(self.report_path(result.id).relative_to(self.path))
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
        """Close the results file and release the folder."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.close()
            self._lock = None
