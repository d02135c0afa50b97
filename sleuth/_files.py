"""Files a user reads: written whole, with the mode a new file of theirs would get.

A report (``-o``, a batch's ``reports/``) is a document to share: it is written through a
temporary file and a rename, so no reader ever sees half of it, and a new one gets the
user's umask (0644 under the usual 022) as the shell's ``>`` would give it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from sleuth._valid import valid_text
from sleuth.errors import ConfigError

__all__ = ["write_atomic", "write_atomic_at"]


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


def write_atomic_at(folder: int | None, name: str, text: str, shown: Path) -> None:
    """Write ``text`` to the file ``name`` of the open folder ``folder`` (a directory file
    descriptor; None where the platform has none: ``name`` is then a path) via a
    temporary file and a rename, neither following a link: a link named ``name`` is
    replaced, never written through. ``shown`` names it in errors."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        mode = stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ConfigError(f"cannot write {shown}: {exc.strerror or exc}") from None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow | getattr(os, "O_CLOEXEC", 0)
    head, tail = os.path.split(name)
    tmp = os.path.join(head, f".{tail}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, flags, 0o666, dir_fd=folder)  # the kernel applies the umask
    except OSError as exc:
        raise ConfigError(f"cannot write {shown}: {exc.strerror or exc}") from None
    try:
        if mode is not None and hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(valid_text(text))
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        if isinstance(exc, OSError):
            raise ConfigError(f"cannot write {shown}: {exc.strerror or exc}") from None
        raise
