"""What the README tells a newcomer matches what sleuth does (issue 27: the first ten minutes)."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.routing import Route

from sleuth.cli import _common
from sleuth.settings import load_settings
from sleuth.web.app import create_app

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(f"\n## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def test_it_starts_with_installing_into_a_venv_and_a_first_run() -> None:
    first = re.search(r"```bash\n(.*?)```", README, re.DOTALL)
    assert first is not None
    lines = first.group(1).splitlines()
    assert lines[0].startswith("python3 -m venv") and lines[1] == "pip install ."
    assert lines[2].startswith('sleuth "')
    assert README.index("## Install and a first run") < README.index("## Performance")


def test_the_llm_extra_comes_before_any_model_example() -> None:
    for title in ("Install and a first run", "Models"):
        text = section(title)
        assert text.index("pip install '.[llm]'") < text.index("OPENAI_API_KEY=")


def test_install_hints_name_what_pip_can_install() -> None:
    """'sleuth-research' is not on the package index: from the checkout it is '.[extra]'."""
    assert "sleuth-research[" not in README
    for extra in ("llm", "web", "mcp"):
        assert f"pip install '.[{extra}]'" in README


def test_every_exit_code_is_documented() -> None:
    codes = {value for name, value in vars(_common).items() if name.startswith("EXIT_")}
    assert codes == {0, 1, 2, 70, 130}
    table = section("Using it")
    documented = {int(n) for n in re.findall(r"^\| `(\d+)` \|", table, re.MULTILINE)}
    assert documented == codes
    assert "resume with: sleuth resume ID" in table


def test_the_offline_demo_is_the_module_that_exists() -> None:
    text = section("Install and a first run")
    assert "python -m sleuth.testing" in text
    assert "--searxng-url http://127.0.0.1:PORT --allow-private-urls" in text


def test_every_route_of_the_web_page_is_documented(tmp_path: Path) -> None:
    app = create_app(load_settings({"home": str(tmp_path), "no_llm": True}, env={}))
    api = section("In your browser: `sleuth serve`")
    paths = [route.path for route in app.routes if isinstance(route, Route)]
    assert "/api/runs" in paths
    for path in paths:
        if path == "/":
            continue
        shown = path.replace("{run_id}", "ID").replace(".{fmt:str}", ".html")
        assert f"`GET {shown}" in api or f"`POST {shown}" in api, shown
