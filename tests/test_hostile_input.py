"""Hostile input: odd questions, bad option values, broken folders, full disks and a
monstrous model reply. Each is one line on stderr and exit code 2, or a report that says
what could not be done; never a traceback, never half a file, never minutes of work.

Cases already proven elsewhere are not repeated here:
tests/test_cli_input.py::test_bad_input_is_one_line_and_exit_2 (empty, blank, "?!?!" and
5,000-character questions, bad --depth/--format/--search, a missing --output folder),
tests/test_docs_mode.py::test_documents_mode_errors_are_one_line (a missing --docs folder),
tests/test_runs.py::test_bad_input_is_one_line_and_exit_2 (a --home under a regular file)
and tests/test_runs.py::test_a_read_only_home_is_one_line_and_exit_2.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import pytest

import sleuth
from sleuth.cli import run
from sleuth.store.db import Database
from sleuth.testing import OfflineWeb

PAGE_TIMEOUT = 5.0


def web_args(web: OfflineWeb, *extra: str) -> list[str]:
    return [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        str(PAGE_TIMEOUT),
        "--no-llm",
        "--quiet",
        *extra,
    ]


# -- questions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ("why " * 25_000, "characters long"),  # 100 KB
        ("\x00\x01\x07\x1b\x7f" * 20, "the question is empty"),  # control characters only
        ("\u202e\u202d\u200f\u2066\u2069\ufeff", "the question is empty"),  # bidi/format marks
        ("😀🚀🔥 🎉", "no words"),  # emoji only
        ("¿¡…—–‽ ?!", "no words"),  # punctuation only, not ASCII
    ],
)
def test_unusable_questions_are_refused_before_any_request(
    question: str, message: str, web: OfflineWeb, error_line: Callable[[], str]
) -> None:
    web.reset_log()
    assert run(web_args(web, question)) == 2
    assert message in error_line()
    with pytest.raises(sleuth.ConfigError, match=message):
        sleuth.research_sync(question, search="searxng", searxng_url=web.searxng_url, no_llm=True)
    assert web.requests == [], "a search was made for a question that was refused"


@pytest.mark.slow
@pytest.mark.parametrize(
    "question",
    [
        "ما هو تأثير Google Stadia على الألعاب السحابية؟",  # right-to-left, Arabic
        "\u202eIs Google Stadia worth it\u202c at launch?",  # a right-to-left override
        "Is Google Stadia 🎮 worth it at launch? 🤔",  # emoji among words
        "Is Google\x1b[31m Stadia\x07 worth it\x00 at launch?",  # terminal escapes and NUL
    ],
)
def test_odd_but_real_questions_get_a_report(
    question: str, web: OfflineWeb, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run(web_args(web, question))
    out, err = capsys.readouterr()
    assert code in (0, 1) and "Traceback" not in err
    title = out.splitlines()[0]
    assert title.startswith("# Research: ")
    # What reaches the terminal and the report carries no control or bidi-override character.
    assert not any(ch in title for ch in "\x00\x07\x1b\u202e\u202c")
    assert "## Sources" in out and "## Gaps" in out


# -- option values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--timeout", "-1"], "invalid value for --timeout"),
        (["--timeout", "nan"], "invalid value for --timeout"),
        (["--timeout", "inf"], "invalid value for --timeout"),
        (["--max-page-bytes", "0"], "invalid value for --max-page-bytes"),
        (["--concurrency", "0"], "invalid value for --concurrency"),
        (["--per-host-concurrency", "-3"], "invalid value for --per-host-concurrency"),
        (["--max-redirects", "-1"], "invalid value for --max-redirects"),
        (["--max-sources", "1000000"], "invalid value for --max-sources"),
        (["--depth", "1e9"], "invalid value for --depth"),
        (["--cache-ttl", "-5"], "invalid value for --cache-ttl"),
        (["--max-time", "0"], "invalid value for --max-time"),
        (["--max-time", "forever"], "invalid value for --max-time"),
        (["--max-cost", "nan"], "invalid value for --max-cost"),
        (["--max-fetches", "-1"], "invalid value for --max-fetches"),
        (["--words", "99999999999999999999"], "invalid value for --words"),
        (["--context-window", "0"], "invalid value for --context-window"),
        (["--lang", "\x00"], "invalid value for --lang"),
        (["--base-url", "file:///etc/passwd"], "invalid value for --base-url"),
        (["--home", ""], "invalid value for --home"),
        (["--docs", ""], "invalid value for --docs"),
        (["--output", ""], "invalid value for --output"),
    ],
)
def test_out_of_range_options_are_one_line_and_exit_2(
    argv: list[str],
    message: str,
    error_line: Callable[[], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # an empty path must not quietly mean "here"
    assert (
        run(
            [
                *argv,
                "--no-llm",
                "--search",
                "searxng",
                "--searxng-url",
                "http://127.0.0.1:9",
                "a question",
            ]
        )
        == 2
    )
    assert message in error_line()
    assert list(tmp_path.iterdir()) == []


# -- --docs --------------------------------------------------------------------------------


def test_docs_that_is_a_file_or_unreadable_is_one_line(
    tmp_path: Path, error_line: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder", encoding="utf-8")
    assert run(["--docs", str(a_file), "--no-llm", "a question"]) == 2
    assert "is not a folder" in error_line()

    assert run(["--docs", str(a_file / "sub"), "--no-llm", "a question"]) == 2
    assert "is not a folder" in error_line()

    # Root reads any folder whatever its mode, so the refusal is simulated where it happens.
    locked = tmp_path / "locked"
    locked.mkdir()
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if Path(path) == locked:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert run(["--docs", str(locked), "--no-llm", "a question"]) == 2
    line = error_line()
    assert "cannot read documents folder" in line and str(locked) in line


# -- --home: a disk that is full -------------------------------------------------------------


def _disk_full_after(monkeypatch: pytest.MonkeyPatch, armed: Callable[[], bool]) -> list[str]:
    """Make every store write fail with SQLite's "disk is full" once ``armed()`` is true."""
    refused: list[str] = []
    real_write = Database.write

    def write(self: Database, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        if armed():
            refused.append(getattr(fn, "__name__", "write"))
            raise sqlite3.OperationalError("database or disk is full")
        return real_write(self, fn)

    monkeypatch.setattr(Database, "write", write)
    return refused


@pytest.mark.parametrize("existing", [False, True], ids=["new-home", "existing-store"])
def test_a_home_that_is_full_at_start_is_one_line_and_exit_2(
    existing: bool,
    web: OfflineWeb,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    error_line: Callable[[], str],
) -> None:
    home = tmp_path / "home"
    if existing:  # the store opens, but not even the run record fits any more
        Database(home).close()
        monkeypatch.setattr(Database, "_migrate", lambda self, migrations: [])
    refused = _disk_full_after(monkeypatch, lambda: True)
    web.reset_log()
    assert run(web_args(web, "--home", str(home), "what is WAL?")) == 2
    line = error_line()
    assert "disk is full" in line and str(home) in line
    assert refused and web.requests == []


@pytest.mark.slow
def test_a_home_that_fills_up_mid_run_still_gives_the_report(
    web: OfflineWeb,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sleuth.store import Store

    started: list[str] = []
    real_create = Store.create_run

    def create_run(self: Store, *args: Any, **kwargs: Any) -> str:
        run_id = real_create(self, *args, **kwargs)
        started.append(run_id)
        return run_id

    monkeypatch.setattr(Store, "create_run", create_run)
    refused = _disk_full_after(monkeypatch, lambda: bool(started))  # full once the run began
    out_file = tmp_path / "report.md"
    code = run(
        web_args(web, "--home", str(tmp_path / "home"), "-o", str(out_file), web.topics[0].question)
    )
    _out, err = capsys.readouterr()
    assert "Traceback" not in err
    report = out_file.read_text(encoding="utf-8")
    assert code == 0 and report.startswith("# Research: ") and "[1]" in report
    assert refused, "the store was never written to: the full disk was not exercised"


# -- --output --------------------------------------------------------------------------------


def test_output_onto_a_folder_is_refused_before_the_research(
    web: OfflineWeb, tmp_path: Path, error_line: Callable[[], str]
) -> None:
    web.reset_log()
    assert run(web_args(web, "-o", str(tmp_path), web.topics[0].question)) == 2
    assert "is a folder" in error_line()
    assert web.requests == [], "the research ran although its report could not be written"


@pytest.mark.slow
def test_a_write_that_fails_midway_leaves_the_old_file_intact(
    web: OfflineWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error_line: Callable[[], str]
) -> None:
    out = tmp_path / "report.md"
    out.write_text("the previous report\n", encoding="utf-8")
    real_fdopen = os.fdopen

    class FillsUp:
        """A file that takes a few bytes, then finds the disk full."""

        def __init__(self, handle: TextIO) -> None:
            self.handle = handle

        def __enter__(self) -> FillsUp:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def write(self, text: str) -> int:
            self.handle.write(text[:100])
            self.handle.flush()
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
        handle = real_fdopen(fd, *args, **kwargs)
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(tmp_path)):
            return FillsUp(handle)
        return handle

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to tell the report's file from others")
    monkeypatch.setattr(os, "fdopen", fdopen)
    code = run(web_args(web, "-o", str(out), web.topics[0].question))
    line = error_line()
    assert code == 2
    assert f"cannot write {out}" in line and "No space left on device" in line
    assert out.read_text(encoding="utf-8") == "the previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"], "a temp file was left"


# -- a hostile model reply -------------------------------------------------------------------


@pytest.mark.slow
def test_cutting_a_huge_unbroken_reply_to_fit_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model's 200 kB "summary" without a space (found by bench/hostile.py: the report
    stage spent 100 s cutting one) is cut with work proportional to its length."""
    from sleuth.llm import tokens

    counted = [0]
    real = tokens.count_tokens

    def count_tokens(text: str, model: str | None = None) -> int:
        counted[0] += len(text)
        return real(text, model)

    monkeypatch.setattr(tokens, "count_tokens", count_tokens)
    reply = "[" * 100_000 + "]" * 100_000
    chunks = tokens.chunk_text(reply, 1000)
    assert "".join(chunks) == reply and all(real(c) <= 1000 for c in chunks)
    # Counting the whole rest for every chunk (the old way) reads each character 200 times.
    assert counted[0] < 50 * len(reply)
