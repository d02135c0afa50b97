"""``sleuth library encrypt``: turn a plain store into an encrypted one, in place.

SQLCipher's ``sqlcipher_export`` copies every table, index and trigger of the plain
database into a new, encrypted file, which then takes the old one's name; the old file
and its WAL are deleted. Deleted, not wiped: a file system (an SSD above all) may keep
the old blocks, so encrypting a store that never held anything sensitive is best.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from sleuth.errors import ConfigError
from sleuth.store._cipher import (
    KEY_ENV,
    _quoted,
    as_sqlite_errors,
    cipher_module,
    is_encrypted,
    keyring_key,
)
from sleuth.store.db import DB_NAME, Database

__all__ = ["encrypt_store", "new_key"]


def new_key(env: dict[str, str] | None = None) -> str:
    """The key to encrypt with: ``SLEUTH_STORE_KEY``, else the OS keyring's; ConfigError
    when neither holds one."""
    key = (os.environ if env is None else env).get(KEY_ENV) or keyring_key()
    if not key:
        raise ConfigError(
            f"no key to encrypt the store with: set {KEY_ENV}, or keep one in the OS "
            "keyring (keyring set sleuth store)"
        )
    return key


def encrypt_store(home: Path, key: str) -> bool:
    """Encrypt the store under ``home`` with ``key`` (a new store is made encrypted);
    False when it already was. Run it while no other sleuth uses the store."""
    path = Path(home).expanduser() / DB_NAME
    if is_encrypted(path):
        return False
    module = cipher_module()
    if path.is_file() and path.stat().st_size > 0:
        fresh = path.with_name(DB_NAME + ".encrypting")
        fresh.unlink(missing_ok=True)
        with as_sqlite_errors():
            conn = module.connect(str(path), isolation_level=None)
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.execute(f"ATTACH DATABASE ? AS encrypted KEY {_quoted(key)}", (str(fresh),))
                conn.execute("SELECT sqlcipher_export('encrypted')")
                conn.execute("DETACH DATABASE encrypted")
            finally:
                conn.close()
        os.replace(fresh, path)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                path.with_name(DB_NAME + suffix).unlink()
    with Database(path.parent, key=key):  # WAL mode, and a new store's schema
        pass
    return True
