"""What the store's failures mean: which problems of the file or the disk become which
one-line errors, and which are busy databases to retry.

:class:`FileErrors` is the part of :class:`~sleuth.store.db.Database` that words them:
a home that cannot be written, a damaged file, a SQLite without FTS5. A failure of the
file or disk is remembered once (``failure``); anything else is a bug and is raised.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
from pathlib import Path

from sleuth.errors import ConfigError, StoreCorruptError, StoreError

_BUSY_WORDS = ("database is locked", "database is busy", "database table is locked")


#: What a row that does not decode raises: bytes where text was written (UnicodeDecodeError),
#: broken JSON, pydantic's ValidationError (all ValueErrors), or a value of the wrong type.
_UNDECODABLE = (ValueError, TypeError, KeyError, IndexError, AttributeError)


def log_store_failure(logger: logging.Logger, what: str, exc: BaseException) -> None:
    """Log a store read or write that failed where a failure costs work, never the run.

    A :class:`StoreError` is the file's or the disk's, remembered by the store and said
    once by whoever owns the run: here it is only a debug line. Anything else is a bug,
    logged with its traceback.
    """
    if isinstance(exc, StoreError):
        logger.debug("%s: %s", what, exc)
    else:
        logger.warning("%s", what, exc_info=exc)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return any(word in text for word in _BUSY_WORDS)


def _why_not_writable(path: Path) -> str:
    """ "read-only file system" or "permission denied", as the system would say it."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return os.strerror(errno.EROFS)
    except (OSError, AttributeError):  # no statvfs (Windows)
        pass
    return os.strerror(errno.EACCES)


class FileErrors:
    """The store's file and disk failures, worded for the user; :class:`Database` sets
    ``home``, ``path`` and ``failure``."""

    home: Path
    path: Path
    failure: StoreError | None

    def _not_writable(self, what: Path, why: str) -> ConfigError:
        """The one message for a home (or its database) that cannot be written."""
        return ConfigError(
            f"cannot write to sleuth home {what}: {why.lower()}; choose "
            "another with --home or SLEUTH_HOME"
        )

    def _check_home(self) -> None:
        """Create the home folder; fail early, in one line, when it cannot be written.

        A home sleuth creates is private (0700): it holds the user's questions, the pages
        read and the model's replies. A folder the user made keeps its mode.
        """
        try:
            self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        except FileExistsError:
            raise ConfigError(f"sleuth home {self.home} exists and is not a folder") from None
        except OSError as exc:
            raise self._not_writable(self.home, exc.strerror or str(exc)) from None
        if not self.home.is_dir():
            raise ConfigError(f"sleuth home {self.home} exists and is not a folder")
        if not os.access(self.home, os.W_OK | os.X_OK):
            raise self._not_writable(self.home, _why_not_writable(self.home))
        if self.path.exists() and not os.access(self.path, os.R_OK | os.W_OK):
            raise self._not_writable(self.path, _why_not_writable(self.path))

    def _config_error(self, exc: sqlite3.DatabaseError) -> ConfigError | None:
        """A one-line ConfigError for problems of the file or disk; None for bugs."""
        text = str(exc)
        if "not a database" in text or "malformed" in text or text.startswith("Could not decode"):
            return self._corrupt(text)
        if "fts5" in text:
            return ConfigError(
                f"this Python's SQLite ({sqlite3.sqlite_version}) lacks FTS5, "
                "which sleuth's store needs; use a Python built with it"
            )
        if any(word in text for word in ("readonly", "unable to open", "disk", "full")):
            return StoreError(f"cannot use sleuth database {self.path}: {text}")
        return None

    def _file_error(self, exc: sqlite3.DatabaseError | UnicodeDecodeError) -> ConfigError | None:
        """:meth:`_config_error`, and SQLite error messages that do not decode: they quote
        a damaged schema's bytes (Python raises UnicodeDecodeError instead of the error)."""
        if isinstance(exc, UnicodeDecodeError):
            return self._corrupt("SQLite's error message quotes bytes that are not text")
        return self._config_error(exc)

    def _corrupt(self, why: str) -> StoreCorruptError:
        """The one message for a damaged database file."""
        # SQLite's "Could not decode … with text '…'" quotes the damaged bytes: not for a terminal.
        why = why.split(" with text ", 1)[0]
        why = "".join(ch if ch.isprintable() else "?" for ch in " ".join(why.split()))[:160]
        return StoreCorruptError(
            f"{self.path} is not a usable sleuth database ({why}); "
            "move it away or choose another --home"
        )

    def _failed(self, error: StoreError) -> StoreError:
        """Remember the first failure of the file or disk; returns ``error``."""
        if self.failure is None:
            self.failure = error
        return error
