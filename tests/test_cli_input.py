"""Bad input gets one line on stderr and exit code 2, in-process and as a real subprocess."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sleuth.cli import run


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([""], "the question is empty"),
        (["   \t "], "the question is empty"),
        (["?!?!"], "no words"),
        (["x" * 5000], "characters long"),
        (["--depth", "7", "q"], "invalid value for --depth"),
        (["--depth", "two", "q"], "invalid value for --depth"),
        (["--max-sources", "0", "q"], "invalid value for --max-sources"),
        (
            ["--read-tokens", "100", "q"],
            "--read-tokens: must be 0 (read pages whole) or at least 256",
        ),
        (["--search", "nosuch", "q"], "unknown search provider 'nosuch'"),
        (["--search", "serper", "q"], "SERPER_API_KEY"),
        (["--search", "searxng", "q"], "searxng"),
        (["--format", "yaml", "q"], "invalid value for --format"),
        (
            ["--searxng-url", "ftp://x", "--search", "searxng", "q"],
            "invalid value for --searxng-url",
        ),
        (["--no-such-option", "q"], "no-such-option"),
        ([], "QUESTION"),
        (["--quality-rules", "/nonexistent/rules.toml", "q"], "cannot read quality rules"),
        (["-o", "/nonexistent-dir/report.md", "q"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    monkeypatch.delenv("SLEUTH_SEARXNG_URL", raising=False)
    assert run(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("sleuth: error: ")
    assert message in lines[0]


def test_bad_environment_value_is_reported_by_name(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLEUTH_ALLOW_PRIVATE_URLS", "perhaps")
    assert run(["q"]) == 2
    assert "SLEUTH_ALLOW_PRIVATE_URLS" in capsys.readouterr().err


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    from sleuth import __version__

    assert run(["--version"]) == 0
    assert __version__ in capsys.readouterr().out
    assert run(["--help-all"]) == 0
    out = capsys.readouterr().out
    for flag in [
        "--depth",
        "--max-sources",
        "--search",
        "--searxng-url",
        "--format",
        "--output",
        "--allow-private-urls",
        "--fetch-engine",
        "SLEUTH_SEARCH",
    ]:
        assert flag in out
    # Agent-only options are kept for `sleuth agent --help`, where they mean something.
    assert "--round-minutes" not in out
    # The commands are discoverable from the top-level help, and each one exists.
    assert run(["--help"]) == 0
    top = capsys.readouterr().out
    listed = re.findall(r"^  (\w+)", top.split("Commands:", 1)[1].split("\n\n")[0], re.MULTILINE)
    assert set(listed) >= {"agent", "runs", "resume", "cache", "mcp", "serve"}
    for name in listed:
        assert run([name, "--help"]) == 0
        assert f"Usage: sleuth {name}" in capsys.readouterr().out
    assert run(["agent", "--help"]) == 0
    assert "--round-minutes" in capsys.readouterr().out


@pytest.mark.slow
def test_subprocess_has_no_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sleuth", "--depth", "7", "question"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip() == ("sleuth: error: invalid value for --depth: must be at most 3")


def test_help_loads_no_heavy_library(tmp_path: Path) -> None:
    """`sleuth --help` must start fast: the event loop, HTTP and extraction load lazily."""
    code = (
        "import sys\nfrom sleuth.cli import run\nrun(['--help'])\n"
        "heavy = ('asyncio', 'httpx', 'openai', 'trafilatura', 'lxml', 'numpy', 'bm25s',"
        " 'rich', 'sqlite3', 'mcp', 'starlette', 'pydantic')\n"
        "print('LOADED', sorted(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "LOADED []"


def test_options_before_a_command_go_to_it_as_in_git(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sleuth --home DIR runs` lists the runs (it researched the word "runs"), and
    `sleuth --home DIR show last` shows the last report (it was "unexpected extra argument")."""
    home = str(tmp_path / "home")
    assert run(["--home", home, "runs"]) == 0
    assert capsys.readouterr().out == "no runs yet\n"
    assert run(["--home", home, "show", "last"]) == 2
    err = capsys.readouterr().err
    assert "there is no run yet" in err and "unexpected extra argument" not in err
    assert run([f"--home={home}", "runs", "--format", "json"]) == 0
    assert capsys.readouterr().out.strip() == "[]"
    # An option the command does not take: one line naming the command's help.
    assert run(["--depth", "2", "runs"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--depth" in err and "sleuth runs --help" in err
