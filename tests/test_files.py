"""Files sleuth writes: a report is a document to share, the run store stays private."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth._files import write_atomic
from sleuth.cli import run
from sleuth.testing import OfflineWeb


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("umask_022")
def test_a_report_file_gets_the_users_umask_and_the_store_stays_private(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "new-home"
    report = tmp_path / "report.html"
    code = run(
        [
            "--search",
            "searxng",
            "--searxng-url",
            web.searxng_url,
            "--allow-private-urls",
            "--no-llm",
            "--depth",
            "1",
            "--max-sources",
            "2",
            "--home",
            str(home),
            "--format",
            "html",
            "-o",
            str(report),
            "-q",
            web.topics[0].question,
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert mode(report) == 0o644  # as `> report.html` would make it, not 0600
    assert mode(home) == 0o700  # questions, pages and replies: the owner's only
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".report.html")]


@pytest.mark.usefixtures("umask_022")
def test_a_replaced_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    write_atomic(target, "first\n")
    assert mode(target) == 0o644
    target.chmod(0o600)  # the user made it private: a rerun must not open it up
    write_atomic(target, "second\n")
    assert target.read_text(encoding="utf-8") == "second\n"
    assert mode(target) == 0o600


def test_a_home_the_user_made_keeps_its_mode(tmp_path: Path) -> None:
    from sleuth.store import Store

    home = tmp_path / "shared-home"
    home.mkdir()
    home.chmod(0o755)
    with Store(home):
        pass
    assert mode(home) == 0o755
