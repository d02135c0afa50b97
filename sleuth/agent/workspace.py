"""The agent's sandbox: one folder per search, and no way out of it.

A search's workspace is ``<home>/workspaces/<session>/web_search/<YYYYmmdd_HHMMSS>/``.
It holds ``dashboard.md`` (the agent's long-term memory), ``history.jsonl`` (every
round, model call and tool call), the notes the agent writes, and at the end
``result.md`` (and ``report.md`` with ``--report``).

Paths the model gives are relative to the workspace. Refused, each with a message
the model can read and act on: absolute paths (``/etc/passwd``, ``C:\\x``, ``~/x``),
any ``..`` component, any symbolic link on the way (checked component by component
with ``lstat``, the resolved path is checked to lie inside the workspace, and files
are opened with ``O_NOFOLLOW`` where the platform has it), devices, FIFOs and other
special files, hard-linked files (a hard link is another name for a file that may
live elsewhere), writes to the files sleuth itself keeps (in any part of a path, in
any case, with or without invisible characters, in any Unicode form: names are folded
as the most forgiving file system folds them; a folder ``result.md/`` would stand where
the result is written), and names that are special on Windows in any part of a path
(devices such as ``con`` or ``nul.md``, trailing dots and spaces, ``:`` streams, ``~1``
short names, ``<>"|?*``): workspaces move between systems, and there such a name is
another file or none. Files are capped in size, and files and folders together in
number. Only the agent (one call at a time) writes here, so the checks are not racing
anyone.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from datetime import datetime
from pathlib import Path, PureWindowsPath
from typing import Any

from sleuth._names import fold_name
from sleuth._valid import valid_data
from sleuth.errors import WorkspaceError

__all__ = [
    "DASHBOARD",
    "HISTORY",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "REPORT",
    "RESULT",
    "Workspace",
    "WorkspaceError",
    "check_session",
    "new_workspace",
]

DASHBOARD = "dashboard.md"
HISTORY = "history.jsonl"
RESULT = "result.md"
REPORT = "report.md"
#: Files sleuth writes itself; the agent may read them but never write them.
RESERVED = frozenset({DASHBOARD, HISTORY, RESULT, REPORT})

MAX_FILE_BYTES = 200_000
#: Files and folders a workspace may hold (sleuth's own files included).
MAX_FILES = 200
MAX_LIST_ENTRIES = 200
_MAX_PATH_CHARS = 240
_MAX_NAME_CHARS = 120
_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO must not block the open
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)
#: Windows devices, with or without an extension (the list of Python 3.13's
#: ``os.path.isreserved``, which 3.11 lacks).
_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{kind}{n}" for kind in ("COM", "LPT") for n in "123456789\u00b9\u00b2\u00b3"}
)
_WINDOWS_CHARS = re.compile(r'[<>:"|?*]')
_SHORT_NAME = re.compile(r"~\d")


def _windows_problem(name: str) -> str | None:
    """Why ``name`` means something else on Windows, or None when it does not (checked
    on the name and on its folded form, which some file systems take it for)."""
    return _windows_rule(name) or _windows_rule(fold_name(name))


def _windows_rule(name: str) -> str | None:
    if name.endswith((".", " ")):
        return "ends with a dot or a space, which Windows drops"
    if _WINDOWS_CHARS.search(name):
        return 'has one of <>:"|?* (":" names a hidden stream of a file on Windows)'
    if name.partition(".")[0].rstrip(" ").upper() in _DEVICES:
        return "is a device on Windows, whatever its extension"
    if _SHORT_NAME.search(name):
        return "looks like a short 8.3 name (~1), another name for some file on Windows"
    return None


def _reserved(name: str) -> bool:
    """True when ``name`` is one of sleuth's own files on some file system: compared as
    the most forgiving one compares names (case, normalisation, invisible characters)."""
    return fold_name(name) in RESERVED


def check_session(name: str) -> str:
    """``name`` if it is a usable session folder name (letters, digits, ``_ . -``)."""
    if not _SESSION.fullmatch(name or ""):
        from sleuth.errors import ConfigError

        raise ConfigError(
            f"invalid session name {name!r}: use up to 64 letters, digits, "
            "'_', '.' or '-', starting with a letter or digit"
        )
    return name


def new_workspace(home: Path, session: str, now: datetime | None = None) -> Workspace:
    """A fresh, empty workspace for one search under ``home``."""
    base = Path(home).expanduser() / "workspaces" / check_session(session) / "web_search"
    base.mkdir(parents=True, exist_ok=True)
    stamp = (now or datetime.now()).strftime("%Y%m%d_%H%M%S")
    for n in range(1, 1000):
        folder = base / (stamp if n == 1 else f"{stamp}_{n}")
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue  # two searches started in the same second
        return Workspace(folder)
    raise WorkspaceError(f"could not create a workspace under {base}")


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link (links are not followed)"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


class Workspace:
    """One search's folder, with file operations confined to it."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).expanduser().resolve(strict=True)
        if not self.root.is_dir():
            raise WorkspaceError(f"{self.root} is not a folder")

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    @property
    def label(self) -> str:
        """``<session>/web_search/<stamp>``: the workspace named without the home folder."""
        parts = self.root.parts
        return "/".join(parts[-3:]) if len(parts) >= 3 else str(self.root)

    # -- paths ---------------------------------------------------------------------------
    def _parts(self, path: str, *, allow_root: bool = False) -> list[str]:
        """The components of a model-given path, after the lexical checks."""
        if not isinstance(path, str) or not path.strip():
            raise WorkspaceError("give a file path relative to the workspace, e.g. notes.md")
        if len(path) > _MAX_PATH_CHARS or "\x00" in path:
            raise WorkspaceError(
                f"path refused: longer than {_MAX_PATH_CHARS} characters or contains a NUL byte"
            )
        win = PureWindowsPath(path)
        if path.startswith(("/", "\\", "~")) or win.drive or win.is_absolute():
            raise WorkspaceError(
                f"absolute path refused: {path!r}. Use a path relative to "
                "the workspace, e.g. notes.md or sources/page1.md"
            )
        parts = [p for p in re.split(r"[/\\]", path.strip()) if p not in ("", ".")]
        if ".." in parts:
            raise WorkspaceError(
                f"path refused: {path!r} contains '..'; only files inside the workspace can be used"
            )
        for part in parts:
            if len(part) > _MAX_NAME_CHARS or _CONTROL.search(part):
                raise WorkspaceError(
                    f"path refused: the name {part[:40]!r} is too long or has control characters"
                )
            problem = _windows_problem(part)
            if problem is not None:
                raise WorkspaceError(
                    f"path refused: the name {part[:40]!r} is special on "
                    f"Windows: it {problem}. Workspaces move between "
                    "systems; use another name"
                )
        if not parts and not allow_root:
            raise WorkspaceError("give a file path relative to the workspace, e.g. notes.md")
        return parts

    def _walk(self, parts: list[str], *, create: bool) -> Path:
        """The folder holding ``parts[-1]``, every component checked (and made if asked)."""
        folder = self.root
        for i, name in enumerate(parts[:-1]):
            folder = folder / name
            shown = "/".join(parts[: i + 1])
            try:
                mode = os.lstat(folder).st_mode
            except FileNotFoundError:
                if not create:
                    raise WorkspaceError(f"{shown} does not exist") from None
                os.mkdir(folder, 0o700)
                continue
            if not stat.S_ISDIR(mode):
                raise WorkspaceError(f"path refused: {shown} is {_kind(mode)}, not a folder")
        self._contain(folder)
        return folder

    def _contain(self, path: Path) -> None:
        # Belt and braces after the lstat walk: the real path must lie in the workspace.
        real = Path(os.path.realpath(path))
        if real != self.root and not real.is_relative_to(self.root):
            raise WorkspaceError("path refused: it leads outside the workspace")

    def _target(
        self, path: str, *, create: bool = False
    ) -> tuple[Path, str, os.stat_result | None]:
        """The checked path, its display name and its ``lstat`` (None when it does not exist)."""
        parts = self._parts(path)
        target = self._walk(parts, create=create) / parts[-1]
        shown = "/".join(parts)
        try:
            info = os.lstat(target)
        except FileNotFoundError:
            return target, shown, None
        if not stat.S_ISREG(info.st_mode):
            raise WorkspaceError(
                f"{shown} is {_kind(info.st_mode)}; only regular files can be read or written"
            )
        if info.st_nlink > 1:
            raise WorkspaceError(
                f"{shown} is hard-linked (it may be a file outside the workspace); refused"
            )
        self._contain(target)
        return target, shown, info

    def _open(self, target: Path, shown: str, flags: int) -> int:
        try:
            fd = os.open(target, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC | _BINARY, 0o600)
        except OSError as exc:
            raise WorkspaceError(f"cannot open {shown}: {exc.strerror or exc}") from None
        info = os.fstat(fd)
        # Checked again on the open file: what was checked by name is what we got.
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            os.close(fd)
            why = "hard-linked" if stat.S_ISREG(info.st_mode) else _kind(info.st_mode)
            raise WorkspaceError(f"{shown} is {why}; refused")
        return fd

    # -- what the model can do -------------------------------------------------------------
    def read(self, path: str) -> str:
        """The text of a file in the workspace."""
        target, shown, info = self._target(path)
        if info is None:
            raise WorkspaceError(f"{shown} does not exist")
        fd = self._open(target, shown, os.O_RDONLY)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        return data[:MAX_FILE_BYTES].decode("utf-8", errors="replace")

    def write(self, path: str, content: str, *, append: bool = False) -> str:
        """Write (or append) ``content``; returns a one-line confirmation."""
        parts = self._parts(path)
        kept = next((part for part in parts if _reserved(part)), None)
        if kept is not None:
            raise WorkspaceError(
                f"{kept} is kept by sleuth and cannot be written, nor be part "
                "of a path; use update_dashboard to change the dashboard"
            )
        data = content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise WorkspaceError(
                f"content is {len(data):,} bytes; a file may hold at most {MAX_FILE_BYTES:,}"
            )
        new = self._missing(parts)
        held = self.count_entries() if new else 0
        if held + new > MAX_FILES:
            raise WorkspaceError(
                f"the workspace may hold at most {MAX_FILES} files and folders; "
                f"it holds {held}, and {'/'.join(parts)} would add {new}. "
                "Append to an existing file instead"
            )
        target, shown, info = self._target(path, create=True)
        size = info.st_size if (info is not None and append) else 0
        if size + len(data) > MAX_FILE_BYTES:
            raise WorkspaceError(
                f"{shown} would grow to {size + len(data):,} bytes; a file "
                f"may hold at most {MAX_FILE_BYTES:,}. Start a new file"
            )
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
        fd = self._open(target, shown, flags)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        verb = "appended" if append else "wrote"
        return f"{verb} {len(data):,} bytes to {shown} ({size + len(data):,} bytes now)"

    def _missing(self, parts: list[str]) -> int:
        """How many of ``parts`` (the folders, then the file) do not exist yet."""
        path = self.root
        for i, name in enumerate(parts):
            path = path / name
            try:
                os.lstat(path)
            except FileNotFoundError:
                return len(parts) - i
        return 0

    def listing(self, path: str = ".") -> str:
        """The entries of a folder in the workspace, one per line."""
        parts = self._parts(path or ".", allow_root=True)
        folder = self._walk([*parts, "."], create=False) if parts else self.root
        shown = "/".join(parts) or "."
        lines = []
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name)[:MAX_LIST_ENTRIES]:
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    lines.append(f"{entry.name}/")
                elif stat.S_ISREG(info.st_mode):
                    lines.append(f"{entry.name}  ({info.st_size:,} bytes)")
                else:
                    lines.append(f"{entry.name}  ({_kind(info.st_mode)})")
        return f"{shown}:\n" + ("\n".join(lines) if lines else "(empty)")

    def count_entries(self) -> int:
        """Files and folders in the workspace (links are not followed)."""
        return sum(
            len(dirs) + len(files) for _, dirs, files in os.walk(self.root, followlinks=False)
        )

    # -- what sleuth keeps -----------------------------------------------------------------
    def write_text(self, name: str, text: str) -> Path:
        """Replace one of sleuth's own files atomically (temporary file + rename)."""
        path = self.root / name
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def read_text(self, name: str) -> str | None:
        """One of sleuth's own files, or None when it is not there."""
        try:
            return (self.root / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def append_history(self, record: dict[str, Any]) -> None:
        """Add one record to ``history.jsonl``; one line, written and closed at once."""
        line = json.dumps(valid_data(record), ensure_ascii=False, default=str) + "\n"
        with open(self.root / HISTORY, "a", encoding="utf-8") as handle:
            handle.write(line)

    def history(self) -> list[dict[str, Any]]:
        """Every record of ``history.jsonl``; a torn line (the process was killed) is skipped."""
        text = self.read_text(HISTORY) or ""
        records = []
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                records.append(record)
        return records
