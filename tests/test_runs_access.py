"""Finding a past run: short id prefixes, ``last``, and a home that can only be read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import sleuth
from sleuth.cli import run
from sleuth.store import Store
from sleuth.testing import OfflineWeb


def web_options(web: OfflineWeb, home: Path, **extra: Any) -> dict[str, Any]:
    return {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 2,
        "home": str(home),
        "no_llm": True,
        "depth": 1,
        "max_sources": 2,
        **extra,
    }


@pytest.fixture
def two_runs(web: OfflineWeb, tmp_path: Path) -> tuple[Path, list[str]]:
    """A home holding two finished runs made one right after the other."""
    home = tmp_path / "home"
    ids = [
        sleuth.research_sync(web.topics[n].question, **web_options(web, home)).run_id or ""
        for n in (3, 1)
    ]
    return home, ids


def test_a_few_characters_name_a_run_made_a_moment_after_another(
    two_runs: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    home, ids = two_runs
    # Ids differ from their first characters on (they used to share the first 8).
    assert ids[0][:4] != ids[1][:4]
    for run_id in ids:
        assert run(["show", run_id[:4], "--home", str(home), "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["run_id"] == run_id


def test_last_is_the_latest_run(
    two_runs: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    home, ids = two_runs
    assert run(["show", "last", "--home", str(home), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == ids[1]
    assert run(["resume", "last", "--home", str(home), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["run_id"] == ids[1]
    assert f"run {ids[1]} is already done" in err


def test_last_in_an_empty_home_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["show", "last", "--home", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no run yet" in err


def _pretend_read_only(monkeypatch: pytest.MonkeyPatch, *folders: Path) -> None:
    """os.access as a user who may not write ``folders`` sees it (root may write anything)."""
    real = os.access

    def access(path: Any, mode: int, **kw: Any) -> bool:
        if mode & os.W_OK and any(Path(path) == f or f in Path(path).parents for f in folders):
            return False
        return real(path, mode, **kw)

    monkeypatch.setattr(os, "access", access)


def test_runs_and_show_only_read_a_home_that_cannot_be_written(
    two_runs: tuple[Path, list[str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, ids = two_runs
    home.chmod(0o500)
    try:
        _pretend_read_only(monkeypatch, home)
        assert run(["runs", "--home", str(home), "--format", "json"]) == 0
        assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ids[::-1]
        assert run(["show", ids[0][:5], "--home", str(home)]) == 0
        assert capsys.readouterr().out.startswith("# Research: ")
        # Writing commands say so, once, with the way out.
        for argv in (
            ["--home", str(home), "what is WAL?"],
            ["--home", str(home / "sub"), "what is WAL?"],
            ["cache", "clear", "--home", str(home)],
        ):
            assert run(argv) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1, err
            assert err.startswith(f"sleuth: error: cannot write to sleuth home {home}")
            assert err.rstrip().endswith("choose another with --home or SLEUTH_HOME"), err
    finally:
        home.chmod(0o700)


def _can_mount_read_only() -> bool:
    if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount --bind /tmp /mnt && mount -o remount,bind,ro /mnt"],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _can_mount_read_only(), reason="needs root and unshare to mount")
def test_a_read_only_file_system(two_runs: tuple[Path, list[str]], tmp_path: Path) -> None:
    """A real read-only mount (EROFS, which root cannot write either): the WAL database
    is read without its shared-memory file, and both a home on it and a folder that
    would be made in it get the same one line."""
    home, ids = two_runs
    script = (
        'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && "$@"; echo "rc=$?"'
    )

    def sleuth_ro(*argv: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLEUTH_")}
        return subprocess.run(
            [
                "unshare",
                "-m",
                "sh",
                "-c",
                script,
                "sh",
                str(home),
                sys.executable,
                "-m",
                "sleuth",
                *argv,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    listed = sleuth_ro("runs", "--home", str(home))
    assert "rc=0" in listed.stdout, listed.stderr
    assert ids[0] in listed.stdout and ids[1] in listed.stdout
    shown = sleuth_ro("show", "last", "--home", str(home))
    assert "rc=0" in shown.stdout and shown.stdout.startswith("# Research: "), shown.stderr
    for where in (home, home / "sub"):
        failed = sleuth_ro("--home", str(where), "--no-llm", "what is WAL?")
        assert "rc=2" in failed.stdout
        assert failed.stderr.strip() == (
            f"sleuth: error: cannot write to sleuth home {where}: "
            "read-only file system; choose another with --home "
            "or SLEUTH_HOME"
        ), failed.stderr
    with Store(home) as store:  # nothing was marked or migrated through the read-only mount
        assert [r.id for r in store.list_runs()] == ids[::-1]
