"""A store that is damaged or fills up: one clear line, never a traceback.

A real store (written by a real research) is damaged on disk with random bytes, its
SQLite header left intact: every command that reads it says, in the one line on
stderr, that the file is not a usable sleuth database, and exits 2. A disk that fills
up in the middle of a run is made real in two ways: SQLite's own ``max_page_count``
(the database may not grow, so SQLite itself answers "database or disk is full"), and,
where this process may mount file systems (root), a tiny tmpfs filled up but for a few
pages, in a subprocess so that the terminal's real stderr is what is checked.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from records import no_model_cli

from sleuth.cli import run
from sleuth.store import DB_NAME, Store
from sleuth.store.db import Database
from sleuth.testing import OfflineWeb

CORRUPT = "is not a usable sleuth database"
PAGE = 4096


@pytest.fixture(scope="module")
def pristine(
    web: OfflineWeb, tmp_path_factory: pytest.TempPathFactory
) -> tuple[bytes, str, dict[str, int]]:
    """The bytes of a real store after one research (WAL checkpointed), its run id, and
    the root page of each table."""
    home = tmp_path_factory.mktemp("pristine")
    out = home / "report.json"
    assert (
        run(no_model_cli(web, home, "--format", "json", "-o", str(out), web.topics[3].question))
        == 0
    )
    run_id = json.loads(out.read_text(encoding="utf-8"))["run_id"]
    with sqlite3.connect(home / DB_NAME) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        roots = dict(conn.execute("SELECT name, rootpage FROM sqlite_master").fetchall())
    conn.close()
    return (home / DB_NAME).read_bytes(), run_id, roots


def _after_the_schema(data: bytearray, rnd: random.Random, roots: dict[str, int]) -> None:
    """Random bytes over every page after the schema and the migrations table."""
    start = roots["schema_migrations"] * PAGE
    data[start:] = rnd.randbytes(len(data) - start)


def _pages_table(data: bytearray, rnd: random.Random, roots: dict[str, int]) -> None:
    """Random bytes over the root page of the page cache: a run opens, then finds it."""
    start = (roots["pages"] - 1) * PAGE
    data[start : start + PAGE] = rnd.randbytes(PAGE)


def _schema_name(data: bytearray, rnd: random.Random, roots: dict[str, int]) -> None:
    """The runs table's name in the schema becomes bytes that are not UTF-8, its SQL
    unreadable: SQLite's own error message then quotes bytes that are not text (which
    Python raises as UnicodeDecodeError)."""
    schema = bytes(data)  # the schema table spans more than the first page
    name = schema.index(b"tablerunsruns") + len(b"table")
    data[name : name + 4] = b"\x9b\xff" + rnd.randbytes(2)
    sql = schema.index(b"CREATE TABLE runs")
    data[sql] = 0x9B


def _report_text(data: bytearray, rnd: random.Random, roots: dict[str, int]) -> None:
    """200 random bytes in the middle of the stored report's text; every page intact."""
    start = data.index(b'{"topic"') + 40
    data[start : start + 200] = rnd.randbytes(200)


@pytest.mark.parametrize(
    ("command", "damage"),
    [
        ("research", _report_text),
        ("research", _pages_table),
        ("research", _schema_name),
        ("runs", _report_text),
        ("runs", _after_the_schema),
        ("runs", _schema_name),
        ("show", _report_text),
        ("show", _after_the_schema),
        ("show", _schema_name),
    ],
    ids=lambda value: value if isinstance(value, str) else value.__name__.strip("_"),
)
def test_a_damaged_store_is_one_clear_line_and_exit_2(
    command: str,
    damage: Callable[[bytearray, random.Random, dict[str, int]], None],
    web: OfflineWeb,
    tmp_path: Path,
    pristine: tuple[bytes, str, dict[str, int]],
    capsys: pytest.CaptureFixture[str],
    error_line: Callable[[], str],
) -> None:
    original, run_id, roots = pristine
    home = tmp_path / "home"
    home.mkdir()
    data = bytearray(original)
    damage(data, random.Random(7), roots)
    assert data[:100] == original[:100], "the SQLite header must stay intact"
    (home / DB_NAME).write_bytes(bytes(data))
    argv = {
        "research": no_model_cli(web, home, web.topics[3].question),
        "runs": ["runs", "--home", str(home)],
        "show": ["show", run_id, "--home", str(home)],
    }[command]
    capsys.readouterr()
    assert run(argv) == 2
    line = error_line()
    assert CORRUPT in line and str(home / DB_NAME) in line, line
    assert "move it away or choose another --home" in line


def test_garbage_versions_are_a_damaged_store_not_a_newer_one(tmp_path: Path) -> None:
    """A version table that no sleuth ever wrote (not 1, 2, 3…) means damage, not an upgrade."""
    Store(tmp_path).close()
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (11742553755, 'x', 0)")
    conn.close()
    from sleuth.errors import ConfigError

    with pytest.raises(ConfigError, match=CORRUPT):
        Store(tmp_path)


# ---------------------------------------------------------------- a disk that fills up


def test_a_store_that_fills_up_mid_run_gives_the_report_and_one_warning_line(
    web: OfflineWeb,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SQLite's ``max_page_count`` (on every connection) stops the database from growing
    past what an empty store needs, plus a page or two: the run record fits, the pages
    and most stage records do not. SQLite itself answers "database or disk is full"."""
    home = tmp_path / "home"
    Store(home).close()
    with sqlite3.connect(home / DB_NAME) as conn:
        limit = int(conn.execute("PRAGMA page_count").fetchone()[0]) + 2
    conn.close()
    real_new = Database._new_connection

    def limited(self: Database) -> sqlite3.Connection:
        conn = real_new(self)
        conn.execute(f"PRAGMA max_page_count = {limit}")
        return conn

    monkeypatch.setattr(Database, "_new_connection", limited)
    out_file = tmp_path / "report.md"
    code = run(no_model_cli(web, home, "-o", str(out_file), web.topics[3].question))
    _out, err = capsys.readouterr()
    report = out_file.read_text(encoding="utf-8")
    assert code == 0 and report.startswith("# Research: ") and "[1]" in report
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("sleuth: warning: ") and "database or disk is full" in lines[0]
    assert str(home / DB_NAME) in lines[0]


def _can_mount() -> bool:
    if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


#: Fill the freshly made store's tmpfs but for MARGIN bytes (argv: home, margin).
_FILL = textwrap.dedent("""
    import os, sys
    from sleuth.store import Store
    home, margin = sys.argv[1], int(sys.argv[2])
    Store(home).close()
    stat = os.statvfs(home)
    with open(os.path.join(home, "filler"), "wb") as filler:
        filler.write(b"x" * max(0, stat.f_bavail * stat.f_frsize - margin))
""")


@pytest.mark.slow
@pytest.mark.skipif(not _can_mount(), reason="needs root and unshare to mount a small tmpfs")
def test_a_disk_that_fills_up_mid_run_prints_the_report_and_no_traceback(
    web: OfflineWeb, tmp_path: Path
) -> None:
    """The home on its own 4 MB tmpfs, full but for 64 KB once the store is made: the run
    record fits, the pages do not (ENOSPC, which SQLite reports as "database or disk is
    full"). The subprocess's real stderr holds one warning line and no traceback."""
    home = tmp_path / "home"
    home.mkdir()
    sleuth_args = " ".join(f"'{a}'" for a in no_model_cli(web, home)[:-2])
    script = (
        f'mount -t tmpfs -o size=4m tmpfs "$1" && "$2" -c "$3" "$1" 65536 && '
        f'exec "$2" -m sleuth {sleuth_args} --home "$1" "$4"'
    )
    proc = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            script,
            "sh",
            str(home),
            sys.executable,
            _FILL,
            web.topics[3].question,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# Research: ") and "[1]" in proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sleuth: warning: "), proc.stderr
    assert "database or disk is full" in lines[0]
