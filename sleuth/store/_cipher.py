"""Encryption at rest: the store as a SQLCipher database, with its key, when one is given.

With ``pip install 'sleuth[encrypt]'`` (the ``sqlcipher3`` binding, which bundles
SQLCipher, and ``keyring``) and a key, every page of ``sleuth.db`` and its WAL is
encrypted (AES-256, SQLCipher 4's defaults). The key comes from ``SLEUTH_STORE_KEY``; or,
for a store that is already encrypted, from the OS keyring (service ``sleuth``, name
``store``). Like a model's API key it is never a setting: it is not kept with a run's
options, and it never appears on a command line.

A store that is encrypted and opened without its key, with a wrong key, or with a key and
no SQLCipher installed is one :class:`~sleuth.errors.ConfigError` line, never a traceback.
SQLCipher's errors are its own classes; :func:`as_sqlite_errors` turns them into the
``sqlite3`` ones the rest of the store handles.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from sleuth.errors import ConfigError

__all__ = [
    "KEYRING_NAME",
    "KEYRING_SERVICE",
    "KEY_ENV",
    "as_sqlite_errors",
    "cipher_module",
    "is_encrypted",
    "keyring_key",
    "open_encrypted",
    "resolve_key",
]

#: The environment variable holding the store's key.
KEY_ENV = "SLEUTH_STORE_KEY"
#: Where the OS keyring keeps it: ``keyring set sleuth store``.
KEYRING_SERVICE = "sleuth"
KEYRING_NAME = "store"

_MAGIC = b"SQLite format 3\x00"
#: SQLCipher's error classes once it is loaded (none before: nothing to translate).
_CIPHER_ERRORS: tuple[type[BaseException], ...] = ()


def cipher_module() -> ModuleType:
    """``sqlcipher3.dbapi2``; ConfigError (one line) when it is not installed."""
    global _CIPHER_ERRORS
    try:
        module = importlib.import_module("sqlcipher3.dbapi2")
    except ImportError:
        raise ConfigError(
            f"the store is encrypted ({KEY_ENV} or the OS keyring holds its key), which "
            "needs SQLCipher: pip install 'sleuth[encrypt]'"
        ) from None
    _CIPHER_ERRORS = (module.Error,)
    return module


def is_encrypted(path: Path) -> bool:
    """Whether ``path`` holds a database that is not plain SQLite (an encrypted one, or
    something else entirely); False for a missing or empty file."""
    try:
        with path.open("rb") as file:
            head = file.read(len(_MAGIC))
    except OSError:
        return False
    return bool(head) and head != _MAGIC


def keyring_key() -> str | None:
    """The key the OS keyring holds for the store, or None (no keyring, no key, locked)."""
    try:
        keyring = importlib.import_module("keyring")
    except ImportError:
        return None
    try:
        value = keyring.get_password(KEYRING_SERVICE, KEYRING_NAME)
    except Exception:  # no usable backend, a locked or broken one: as if there were no key
        return None
    return value if isinstance(value, str) and value else None


def resolve_key(path: Path, env: Mapping[str, str] | None = None) -> str | None:
    """The key to open the database at ``path`` with (None: a plain database).

    ``SLEUTH_STORE_KEY`` if set; for an encrypted file without it, the OS keyring's.
    ConfigError when an encrypted file has no key, or a plain one is given a key
    (``sleuth library encrypt`` encrypts it).
    """
    env = os.environ if env is None else env
    key = env.get(KEY_ENV) or None
    encrypted = is_encrypted(path)
    if key is None and encrypted:
        key = keyring_key()
        if key is None:
            raise ConfigError(
                f"{path} is not a usable sleuth database without a key: it is encrypted "
                f"(set {KEY_ENV}, or keep its key in the OS keyring), or it is not a "
                "database at all (move it away or choose another --home)"
            )
    if key is None:
        return None
    if not encrypted and path.is_file() and path.stat().st_size > 0:
        raise ConfigError(
            f"{path} is not encrypted, but {KEY_ENV} is set: encrypt it with "
            f"'sleuth library encrypt', or unset {KEY_ENV}"
        )
    cipher_module()
    return key


def _quoted(key: str) -> str:
    """``key`` as an SQL string literal (PRAGMA takes no bound parameters)."""
    return "'" + key.replace("'", "''") + "'"


def open_encrypted(target: str | Path, key: str, **connect: Any) -> sqlite3.Connection:
    """A SQLCipher connection to ``target`` (a path, or a URI with ``uri=True``) unlocked
    with ``key``; ConfigError (one line) when the key does not open it."""
    module = cipher_module()
    with as_sqlite_errors():
        conn: sqlite3.Connection = module.connect(str(target), **connect)
        conn.execute("PRAGMA cipher_log_level = NONE")  # its own lines on stderr otherwise
        conn.execute(f"PRAGMA key = {_quoted(key)}")
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except module.DatabaseError as exc:
            conn.close()
            if "not a database" not in str(exc):
                raise
            where = target if isinstance(target, Path) else str(target).split("?", 1)[0]
            raise ConfigError(
                f"cannot open the encrypted store {where}: wrong key ({KEY_ENV} or the OS "
                "keyring's), or the file is damaged"
            ) from None
    return conn


@contextlib.contextmanager
def as_sqlite_errors() -> Iterator[None]:
    """Raise SQLCipher's errors as the ``sqlite3`` classes of the same names."""
    try:
        yield
    except _CIPHER_ERRORS as exc:
        kind = getattr(sqlite3, type(exc).__name__, sqlite3.DatabaseError)
        raise kind(str(exc)) from exc
