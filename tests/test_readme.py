"""What the README tells a newcomer matches what sleuth does: install, a first run, the
extras and the offline demo, in at most 200 lines (the rest is in docs/)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(f"\n## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def test_it_is_short() -> None:
    assert len(README.splitlines()) <= 200


def test_it_starts_with_installing_into_a_venv_and_a_first_run() -> None:
    first = re.search(r"```bash\n(.*?)```", README, re.DOTALL)
    assert first is not None
    lines = first.group(1).splitlines()
    assert lines[0].startswith("python3 -m venv")
    # pip 23.2 (Python 3.11's venv) warns about justext's 'lxml[html_clean]': upgrade first.
    assert lines[1:3] == ["pip install --upgrade pip", "pip install ."]
    assert lines[3].startswith('sleuth "')
    assert README.index("## Install and a first run") < README.index("## Documentation")


def test_the_llm_extra_comes_before_any_model_example() -> None:
    text = section("Install and a first run")
    assert text.index("pip install '.[llm]'") < text.index("OPENAI_API_KEY=")


def test_install_hints_name_what_pip_can_install() -> None:
    """'sleuth-research' is not on the package index: from the checkout it is '.[extra]'."""
    assert "sleuth-research[" not in README
    for extra in ("llm", "web"):
        assert f"pip install '.[{extra}]'" in README


def test_an_editable_install_is_kept_editable() -> None:
    """After pip install -e, a plain pip install '.[ray]' replaces the editable install:
    every extra added to an editable install is added with -e."""
    text = section("Install and a first run")
    assert "pip install -e '.[dev,ray]'" in text
    for line in README.splitlines():
        if "pip install -e" in line:
            assert "pip install '.[" not in line.split("pip install -e")[0], line


def test_the_offline_demo_is_the_module_that_exists() -> None:
    text = section("Install and a first run")
    assert "python -m sleuth.testing" in text
    assert "--searxng-url http://127.0.0.1:PORT --allow-private-urls" in text


def test_every_link_to_a_file_of_the_checkout_exists() -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README):
        assert (ROOT / target).exists(), target
