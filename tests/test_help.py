"""``--help`` lists every option under its group's title, with its choices and readable defaults."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sleuth._options import HELP_GROUPS, cli_options
from sleuth.cli import run


def sections(text: str) -> dict[str, str]:
    """The help's sections by title (a line ``Title:`` starts one)."""
    found: dict[str, str] = {}
    title = ""
    for line in text.splitlines():
        match = re.match(r"^(\w[\w ]*):$", line)
        if match:
            title = match.group(1)
            found[title] = ""
        elif title:
            found[title] += line + "\n"
    return found


def test_research_help_groups_every_option_by_the_settings_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["--help"]) == 0
    shown = sections(capsys.readouterr().out)
    titles = [title for title in shown if title in HELP_GROUPS]
    # The groups come in the table's order, and each holds exactly its settings.
    assert titles == [g for g in HELP_GROUPS if g in titles]
    assert {"Research", "Search", "Fetching", "Model", "Output", "Store", "Budgets"} <= set(titles)
    for row in cli_options():
        if row["group"] == "Agent mode":  # hidden here; `sleuth agent --help` lists them
            assert "Agent mode" not in shown
            continue
        assert re.search(rf"^\s+(-\w, )?{row['flag']}\b", shown[row["group"]], re.MULTILINE), (
            row["flag"],
            row["group"],
        )
    assert "--quiet" in shown["Output"] and "--verbose" in shown["Output"]


def test_choices_and_durations_read_as_the_user_types_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--verify [lexical|llm]" in out
    assert "--format [markdown|json|html]" in out
    assert "--fetch-engine [httpx|playwright]" in out
    assert "[default: 1d]" in out and "86400" not in out
    assert run(["agent", "--help"]) == 0
    agent = sections(capsys.readouterr().out)
    assert "--agent-protocol [auto|tools|json]" in " ".join(agent["Agent mode"].split())
    assert "--resume WORKSPACE" in agent["Agent mode"]


@pytest.mark.parametrize("command", ["mcp", "serve"])
def test_server_options_have_their_own_group(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run([command, "--help"]) == 0
    shown = sections(capsys.readouterr().out)
    assert "--port" in shown["Server"]
    assert "--search" in shown["Search"]


def test_a_bad_option_does_not_load_the_help_library(tmp_path: Path) -> None:
    """cloup lays out --help only: a mistyped command is answered without it."""
    code = (
        "import sys\nfrom sleuth.cli import run\ncode = run(['--depth', '9', 'q'])\n"
        "print('LOADED', 'cloup' in sys.modules, code)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.stdout.splitlines()[-1] == "LOADED False 2", proc.stderr


def test_every_setting_names_a_known_group() -> None:
    from sleuth.settings import Settings, field_meta

    for name in Settings.model_fields:
        assert field_meta(name)["group"] in HELP_GROUPS, name
