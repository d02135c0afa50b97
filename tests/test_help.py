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
    assert run(["--help-all"]) == 0
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
    assert run(["research", "--help-all"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--verify [lexical|llm]" in out
    assert "--format [markdown|json|html]" in out
    assert "--fetch-engine [httpx|playwright]" in out
    assert "[default: 1d]" in out and "86400" not in out
    assert run(["agent", "--help-all"]) == 0
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


# -- a help a person can read ----------------------------------------------------------


def test_sleuth_help_shows_the_commands_first_then_the_common_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: sleuth [OPTIONS] QUESTION\n       sleuth COMMAND")
    shown = sections(out)
    assert list(shown)[:2] == ["Commands", "Common options"]
    for command in ("research", "deep", "agent", "batch", "runs", "show", "resume", "mcp"):
        assert re.search(rf"^  {command}\b", shown["Commands"], re.MULTILINE), command
    assert "--max-sources" in shown["Common options"]
    assert "--fetch-engine" not in out  # the rest: sleuth --help-all
    assert "sleuth --help-all" in out and 'sleuth "' in shown["Examples"]
    assert len(out.splitlines()) <= 60


@pytest.mark.parametrize("command", ["research", "deep", "agent", "batch", "mcp", "serve"])
def test_each_commands_help_is_grouped_and_short_with_the_rest_behind_help_all(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run([command, "--help"]) == 0
    short = capsys.readouterr().out
    assert run([command, "--help-all"]) == 0
    every = capsys.readouterr().out
    assert len(short.splitlines()) < 100 < len(every.splitlines())
    assert f"sleuth {command} --help-all" in short
    titles = [title for title in sections(short) if title in HELP_GROUPS]
    assert len(titles) >= 3  # grouped, not one flat list


def test_deep_help_shows_deep_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["deep", "--help-all"]) == 0
    shown = sections(capsys.readouterr().out)
    assert re.search(r"--max-sources N .*?\[default: 20\]", " ".join(shown["Research"].split()))
    assert re.search(r"--words N .*?\[default: 3000\]", " ".join(shown["Model"].split()))
    assert "--mode" not in " ".join(shown)


def test_agent_help_lists_only_what_agent_mode_uses(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["agent", "--help-all"]) == 0
    out = capsys.readouterr().out
    for flag in ("--breadth", "--levels", "--mode", "--depth", "--max-sources", "--docs"):
        assert not re.search(rf"^\s+{flag}\b", out, re.MULTILINE), flag
    assert "--max-rounds" in out and "--search" in out and "--report" in out
    # Nor may they be given: one line, exit 2.
    assert run(["agent", "--breadth", "3", "goal"]) == 2


def test_bare_sleuth_points_at_help_and_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert run([]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "sleuth --help" in err and 'sleuth "' in err


def test_a_usage_error_says_where_the_help_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["deep"]) == 2
    assert "see 'sleuth deep --help'" in capsys.readouterr().err
