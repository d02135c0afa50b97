"""Files a user reads: written whole, with the mode a new file of theirs would get.

A report (``-o``, a batch's ``reports/``) is a document to share: it is written through a
temporary file and a rename, so no reader ever sees half of it, and a new one gets the
user's umask (0644 under the usual 022) as the shell's ``>`` would give it.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from sleuth._valid import valid_text
from sleuth.errors import ConfigError

__all__ = ["write_atomic"]


def _open_temporary(path: Path) -> tuple[int, str]:
    """A new file beside ``path`` for writing, with the mode a new ``path`` would get.

    A report is a document to share: a new one gets the user's umask (0644 under the
    usual 022), as the shell's ``>`` gives it, not tempfile's private 0600; a file that
    is replaced keeps its mode.
    """
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mode = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        tmp = str(path.resolve().parent / f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)  # the kernel applies the umask
        except FileExistsError:
            continue
        if mode is not None:
            os.chmod(tmp, mode)
        return fd, tmp
    raise FileExistsError(f"no free temporary name beside {path}")


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and a rename: never half a file."""
    path = path.expanduser()
    try:
        fd, tmp = _open_temporary(path)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(valid_text(text))
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # a full disk, a vanished folder: one line, exit 2
            raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
