"""The docs site says what sleuth does: its generated CLI reference is current, and every
exit code, web route and JSON field it documents is the one the code has."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.routing import Route

from sleuth.cli import _common
from sleuth.settings import load_settings
from sleuth.web.app import create_app

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_the_cli_reference_is_generated_from_the_commands_and_the_settings() -> None:
    from sleuth.cli.reference import DOCS_PAGE, cli_reference_markdown

    assert DOCS_PAGE == DOCS / "reference" / "cli.md"
    assert page("reference/cli.md") == cli_reference_markdown(), (
        "docs/reference/cli.md is stale: run python -m sleuth.cli.reference"
    )


def test_the_cli_reference_lists_every_option_of_every_command() -> None:
    import click

    from sleuth.cli import cli

    text = page("reference/cli.md")
    for name, command in cli.commands.items():
        assert f"## sleuth {name}" in text, name
        subcommands = command.commands.values() if isinstance(command, click.Group) else [command]
        for sub in subcommands:
            for param in sub.params:
                if isinstance(param, click.Option) and not param.hidden:
                    assert f"`{param.opts[0]}" in text or f", {param.opts[0]}" in text, (
                        name,
                        param.opts,
                    )


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s+([\w/-]+\.md)\s*$", config, re.MULTILINE))
    pages = {
        str(path.relative_to(DOCS))
        for path in DOCS.rglob("*.md")
        if "_pending" not in path.relative_to(DOCS).parts
    }
    assert listed == pages
    assert "_pending/" in config  # the helpers' notes stay out of the site


def test_every_exit_code_is_documented() -> None:
    codes = {value for name, value in vars(_common).items() if name.startswith("EXIT_")}
    assert codes == {0, 1, 2, 70, 130}
    table = page("reference/exit-codes.md")
    documented = {int(n) for n in re.findall(r"^\| `(\d+)` \|", table, re.MULTILINE)}
    assert documented == codes
    assert "resume with: sleuth resume ID" in table


def test_every_route_of_the_web_page_is_documented(tmp_path: Path) -> None:
    app = create_app(load_settings({"home": str(tmp_path), "no_llm": True}, env={}))
    api = page("guides/web.md")
    paths = [route.path for route in app.routes if isinstance(route, Route)]
    assert "/api/runs" in paths
    for path in paths:
        if path == "/":
            continue
        shown = path.replace("{run_id}", "ID").replace(".{fmt:str}", ".html")
        assert f"`GET {shown}" in api or f"`POST {shown}" in api, shown


def test_every_field_of_the_json_report_is_documented() -> None:
    import sleuth

    text = page("reference/json.md")
    for record in (
        sleuth.Report,
        sleuth.Source,
        sleuth.Failure,
        sleuth.Stats,
        sleuth.CitationCheck,
        sleuth.TreeNode,
        sleuth.Section,
    ):
        start = text.index(f"## {record.__name__}\n")
        end = text.find("\n## ", start + 1)
        table = text[start : end if end != -1 else None]
        documented = set(re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE))
        fields = set(record.model_fields) - {"quality_score"}  # not in the JSON object
        assert documented == fields, record.__name__


def test_the_model_extra_comes_before_any_model_example() -> None:
    text = page("getting-started/models.md")
    assert text.index("pip install '.[llm]'") < text.index("OPENAI_API_KEY=")


def test_install_upgrades_pip_first_and_keeps_an_editable_install_editable() -> None:
    text = page("getting-started/install.md")
    assert text.index("pip install --upgrade pip") < text.index("pip install .\n")
    assert "pip install -e '.[dev,ray]'" in text
    for name in ("guides/batch.md", "development.md"):
        assert "pip install -e '.[" in page(name), name


def test_the_claude_desktop_example_runs_the_venvs_sleuth_by_its_absolute_path() -> None:
    """Claude Desktop starts servers without the venv on PATH: a bare "sleuth" is not found."""
    text = page("guides/mcp.md")
    example = re.search(r"```json\n(.*?)```", text, re.DOTALL)
    assert example is not None
    assert re.search(r'"command": "/[^"]*/\.venv/bin/sleuth"', example.group(1))
    assert "which sleuth" in text
