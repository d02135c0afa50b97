"""The SQLite database under sleuth's home: connections, WAL, busy handling, migrations.

One file, ``<home>/sleuth.db``, in WAL mode so readers never block the writer.
Every thread gets its own connection (async code reaches the store through
``asyncio.to_thread``); every write is one short ``BEGIN IMMEDIATE`` transaction,
retried a bounded number of times when another process holds the write lock
longer than ``busy_timeout``. Nothing is kept open between calls but the
connections themselves, so a crash loses at most the transaction in flight.

``synchronous=NORMAL`` is used: in WAL mode it survives any crash of sleuth
without corruption or loss; only a power cut can drop the last few commits.

A file or disk that fails (full, read-only, damaged on disk, rows that no longer
decode) raises :class:`StoreError`, one line a user can act on, and is remembered in
:attr:`Database.failure`, so that a run which carries on without its store can say
so once, at its end, instead of once per page.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, is_dataclass
from enum import Enum
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import platformdirs
from pydantic import BaseModel

from sleuth._duration import parse_duration
from sleuth.errors import ConfigError, SleuthError, StoreBusyError, StoreCorruptError, StoreError
from sleuth.store._cipher import as_sqlite_errors, open_encrypted, resolve_key
from sleuth.store._failures import (
    _UNDECODABLE,
    FileErrors,
    _is_busy,
    log_store_failure,
)
from sleuth.store.migrations import MIGRATIONS, Migration

__all__ = [
    "DB_NAME",
    "Database",
    "StoreBusyError",
    "StoreCorruptError",
    "StoreError",
    "canonical_json",
    "default_home",
    "log_store_failure",
    "parse_duration",
    "to_json",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

DB_NAME = "sleuth.db"
#: The longest ``Database.close`` waits for transactions running in other threads.
CLOSE_WAIT_S = 10.0
_sleep = time.sleep  # tests replace it to act between retries


# ---------------------------------------------------------------- helpers


def default_home() -> Path:
    """Where sleuth keeps its database when ``--home`` (``SLEUTH_HOME``) is not given.

    The platform's user cache folder, as ``platformdirs`` finds it:
    ``$XDG_CACHE_HOME/sleuth`` or ``~/.cache/sleuth`` on Linux (a relative
    ``XDG_CACHE_HOME`` is ignored, as the XDG spec says), ``~/Library/Caches/sleuth`` on
    macOS, ``%LOCALAPPDATA%\\sleuth\\Cache`` on Windows. ``SLEUTH_HOME`` is read with the
    other settings (``settings.home``), not here.
    """
    return platformdirs.user_cache_path("sleuth", appauthor=False)


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    raise TypeError(f"cannot store a {type(value).__name__} as JSON")


def to_json(value: Any) -> str:
    """``value`` as compact JSON; pydantic models, dataclasses, paths and enums allowed."""
    return json.dumps(value, default=_json_default, ensure_ascii=False, separators=(",", ":"))


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal strings (for hashing)."""
    return json.dumps(
        value,
        default=_json_default,
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
        allow_nan=False,
    )


class _Holder:
    """Owns one connection; closes it when its thread's local storage is dropped."""

    __slots__ = ("__weakref__", "conn")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):  # closing twice or at interpreter exit
            self.conn.close()

    def __del__(self) -> None:
        self.close()


# ---------------------------------------------------------------- the database


class Database(FileErrors):
    """Connections to ``<home>/sleuth.db``; the base of :class:`sleuth.store.Store`.

    ``clock`` returns the current time in seconds since the epoch (tests pass a
    fake one). ``migrations`` defaults to :data:`~sleuth.store.migrations.MIGRATIONS`.
    Raises :class:`ConfigError` with a one-line message when the home cannot be
    created or written, or holds something that is not a sleuth database.

    ``read_only=True`` opens an existing database for reading only (``sleuth runs`` and
    ``sleuth show`` on a home that cannot be written): nothing is created, migrated or
    written, and a database in WAL mode whose shared-memory file cannot be made there
    is read as immutable.

    ``key`` opens an encrypted (SQLCipher) database; by default it comes from
    ``SLEUTH_STORE_KEY`` or, for a file that is encrypted, the OS keyring, and ``""``
    opens a plain one whatever the environment says (:mod:`sleuth.store._cipher`).
    """

    def __init__(
        self,
        home: Path,
        *,
        clock: Callable[[], float] = time.time,
        migrations: Sequence[Migration] = MIGRATIONS,
        busy_timeout_s: float = 5.0,
        retries: int = 6,
        read_only: bool = False,
        key: str | None = None,
    ) -> None:
        self.home = Path(home).expanduser()
        self.path = self.home / DB_NAME
        #: The SQLCipher key (None: a plain database); see :mod:`sleuth.store._cipher`.
        #: ``key`` None reads it from the environment or the OS keyring; "" opens plain.
        self.key = resolve_key(self.path) if key is None else (key or None)
        self.clock = clock
        self.busy_timeout_s = busy_timeout_s
        self.retries = max(1, retries)
        self._local = threading.local()
        self._holders: weakref.WeakSet[_Holder] = weakref.WeakSet()
        self._holders_lock = threading.Lock()
        self._pid = os.getpid()
        self._closed = False
        #: Transactions running now, in any thread (``close`` waits for them).
        self._running = 0
        self._quiet = threading.Condition()
        self.read_only = read_only
        self._immutable = False
        #: The first file or disk failure met since opening (None while all is well).
        self.failure: StoreError | None = None
        #: Versions applied by this open (empty when the schema was already current).
        self.applied_now: list[int] = []
        if read_only:
            self._open_for_reading(migrations)
            return
        self._check_home()
        try:
            self.journal_mode = self._retrying(self._enable_wal)
            self.applied_now = self._migrate(migrations)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            self.close()
            error = self._file_error(exc)
            if error is None:
                raise
            raise error from None
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ opening

    def _open_for_reading(self, migrations: Sequence[Migration]) -> None:
        """Open an existing database read-only; its schema must be this sleuth's."""
        if not self.path.is_file():
            raise ConfigError(f"there is no sleuth database in {self.home}")
        self.journal_mode = "unknown"
        try:
            versions = self.schema_versions()
        except StoreError:
            self.close()
            raise
        except sqlite3.DatabaseError as exc:  # no schema table: not a sleuth database
            self.close()
            raise self._corrupt(str(exc)) from None
        known = len(migrations)
        if versions and max(versions) > known:
            self.close()
            raise ConfigError(
                f"{self.path} was written by a newer sleuth (schema "
                f"{max(versions)}, this one knows {known}); upgrade or use "
                "another --home"
            )
        if len(versions) < known:
            self.close()
            raise ConfigError(
                f"{self.path} was written by an older sleuth and cannot be "
                "upgraded where it is (read-only); open it once where it can be "
                "written"
            )

    @contextlib.contextmanager
    def decoding(self) -> Iterator[None]:
        """Turn rows read back into values inside this block: a row that does not decode
        (random bytes where JSON or a number was written) means a damaged file, and
        raises :class:`StoreCorruptError` instead of a decoding error."""
        try:
            yield
        except SleuthError:
            raise
        except _UNDECODABLE as exc:
            raise self._failed(
                self._corrupt(f"a stored row does not decode: {type(exc).__name__}: {exc}")
            ) from None

    def _open(self, target: str | Path, **more: Any) -> sqlite3.Connection:
        """A connection to ``target``: SQLCipher's, unlocked, when the store has a key."""
        options = {
            "timeout": self.busy_timeout_s,
            "isolation_level": None,
            "check_same_thread": False,
            **more,
        }
        if self.key is not None:
            return open_encrypted(target, self.key, **options)
        conn: sqlite3.Connection = sqlite3.connect(target, **options)
        return conn

    def _connect(self) -> sqlite3.Connection:
        if not self.read_only:
            return self._open(self.path)
        # A WAL database can be read with mode=ro only where its -shm file exists or can
        # be made; in a folder nothing can be written to, it is read as immutable.
        uri = self.path.resolve().as_uri() + ("?immutable=1" if self._immutable else "?mode=ro")
        try:
            conn = self._open(uri, uri=True)
            with as_sqlite_errors():
                conn.execute("PRAGMA schema_version").fetchone()
        except sqlite3.OperationalError:
            if self._immutable:
                raise
            self._immutable = True
            return self._connect()
        return conn

    def _new_connection(self) -> sqlite3.Connection:
        try:
            conn = self._connect()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open sleuth database {self.path}: {exc}") from None
        try:
            with as_sqlite_errors():
                self._set_up(conn)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            conn.close()
            error = self._file_error(exc)
            if error is None:
                raise
            raise error from None
        return conn

    def _set_up(self, conn: sqlite3.Connection) -> None:
        """The pragmas every connection runs with."""
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")  # reads the schema: damage shows here
        # What is deleted (a forgotten page, a cleared cache) is overwritten, not left in
        # free space for anyone reading the file.
        conn.execute("PRAGMA secure_delete = ON")

    def _enable_wal(self) -> str:
        with as_sqlite_errors():
            row = self.conn().execute("PRAGMA journal_mode = WAL").fetchone()
        mode = str(row[0]).lower()
        if mode != "wal":  # e.g. a network file system: still works, with less concurrency
            log.warning("sleuth database %s is in %s mode, not WAL", self.path, mode)
        return mode

    def _migrate(self, migrations: Sequence[Migration]) -> list[int]:
        """Apply every migration not yet recorded, each in its own transaction."""
        versions = [m.version for m in migrations]
        if versions != list(range(1, len(versions) + 1)):
            raise ValueError("migrations must be numbered 1, 2, 3... in order")
        self.write(
            lambda c: c.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
            )
        )
        done = set(self.schema_versions())
        if done != set(range(1, len(done) + 1)):
            # Every sleuth records 1, 2, 3… in order; anything else was never written so.
            raise self._failed(self._corrupt(f"schema versions {sorted(done)[:5]}"))
        if done and max(done) > len(migrations):
            raise ConfigError(
                f"{self.path} was written by a newer sleuth (schema {max(done)}, "
                f"this one knows {len(migrations)}); upgrade or use another --home"
            )
        applied: list[int] = []
        for migration in migrations:
            if migration.version not in done and self.write(partial(self._apply, migration)):
                applied.append(migration.version)
        return applied

    def _apply(self, migration: Migration, conn: sqlite3.Connection) -> bool:
        """Run one migration unless another process did it first; True if it ran here."""
        seen = conn.execute(
            "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
        ).fetchone()
        if seen:
            return False
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            (migration.version, migration.name, self.clock()),
        )
        log.debug("applied migration %d (%s) to %s", migration.version, migration.name, self.path)
        return True

    # ------------------------------------------------------------ connections

    def conn(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use (and again after a fork)."""
        if self._closed:
            raise SleuthError(f"the store at {self.home} is closed")
        if os.getpid() != self._pid:  # forked child: never share the parent's connections
            self._pid = os.getpid()
            self._local = threading.local()
            self._holders = weakref.WeakSet()
        holder: _Holder | None = getattr(self._local, "holder", None)
        if holder is None:
            holder = _Holder(self._new_connection())
            self._local.holder = holder
            with self._holders_lock:
                self._holders.add(holder)
        return holder.conn

    def close(self) -> None:
        """Close every connection this store opened (in all threads), once the transactions
        running in other threads have ended (at most :data:`CLOSE_WAIT_S`): a page's cache
        write whose task was cancelled at the end of a run still runs in its thread, and
        SQLite crashed the process when its connection was closed under it."""
        with self._quiet:
            self._closed = True
            self._quiet.wait_for(lambda: self._running == 0, timeout=CLOSE_WAIT_S)
        with self._holders_lock:
            holders = list(self._holders)
            self._holders = weakref.WeakSet()
        for holder in holders:
            holder.close()
        self._local = threading.local()

    def __enter__(self) -> Database:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------ transactions

    def _retrying(self, attempt: Callable[[], T]) -> T:
        """``attempt()``, retried with backoff while the database is locked elsewhere."""
        delay = 0.02
        for number in range(1, self.retries + 1):
            try:
                return attempt()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                if number == self.retries:
                    raise StoreBusyError(
                        f"sleuth database {self.path} stayed locked by another process; "
                        "try again when it has finished"
                    ) from exc
                log.debug("database busy (attempt %d), retrying", number)
                _sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 1.0)
        raise AssertionError("unreachable")

    def _transaction(self, begin: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._quiet:
            conn = self.conn()  # (raises once the store is closed)
            self._running += 1
        try:
            with as_sqlite_errors():
                conn.execute(begin)
                try:
                    result = fn(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.rollback()
                    raise
            return result
        finally:
            with self._quiet:
                self._running -= 1
                self._quiet.notify_all()

    def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` in one short write transaction, retried when busy.

        ``fn`` may run more than once, so it must do nothing but database work;
        do slow things (network, parsing) before calling this. A full, read-only or
        damaged file raises :class:`StoreError`.
        """
        if self.read_only:
            raise StoreError(f"sleuth database {self.path} is open for reading only")
        return self._translated(lambda: self._transaction("BEGIN IMMEDIATE", fn))

    def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` in a read transaction: one consistent snapshot.

        A damaged or unreadable file raises :class:`StoreError`.
        """
        return self._translated(lambda: self._transaction("BEGIN", fn))

    def _translated(self, attempt: Callable[[], T]) -> T:
        """``attempt()`` retried when busy, SQLite's file and disk errors as StoreError."""
        try:
            return self._retrying(attempt)
        except StoreError as exc:  # from opening this thread's connection
            raise self._failed(exc) from None
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            if isinstance(exc, sqlite3.IntegrityError):
                raise  # a constraint: the caller's business (a taken run id, say)
            error = self._file_error(exc)
            if not isinstance(error, StoreError):
                raise
            raise self._failed(error) from None

    # ------------------------------------------------------------ introspection

    def schema_versions(self) -> list[int]:
        """The migration versions recorded in this database, ascending."""
        rows = self.read(
            lambda c: c.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
        )
        with self.decoding():
            return [int(row[0]) for row in rows]

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``: ``"ok"`` for a healthy database."""
        rows = self.read(lambda c: c.execute("PRAGMA integrity_check").fetchall())
        return "; ".join(str(row[0]) for row in rows)

    def size_bytes(self) -> int:
        """The database's size on disk, WAL file included."""
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(FileNotFoundError):
                total += (self.home / (DB_NAME + suffix)).stat().st_size
        return total

    def vacuum(self) -> bool:
        """Rewrite the file without its free pages, and empty the WAL before and after
        (the WAL holds copies of pages, old ones included); False if another connection
        kept it from finishing."""
        try:
            conn = self.conn()
            with as_sqlite_errors():
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.execute("VACUUM")
                # A checkpoint blocked by a reader says so in its first column.
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
            log.debug("vacuum skipped: database busy")
            return False
        return not (busy and busy[0])
