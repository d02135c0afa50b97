"""A missing extra is one line and exit 2 on every entry point, with a hint that installs it.

The extras are installed in the test environment, so a missing one is simulated in a
subprocess: ``sys.modules[name] = None`` makes ``import name`` fail as it does when the
package is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sleuth._extras import install_hint

ROOT = Path(__file__).resolve().parents[1]


def run_without(
    package: str, argv: list[str], home: Path, cwd: Path = ROOT, **env: str
) -> subprocess.CompletedProcess[str]:
    """``sleuth ARGV`` in a subprocess in which ``package`` cannot be imported."""
    code = (
        f"import sys\nsys.modules[{package!r}] = None\n"
        "from sleuth.cli import run\nsys.exit(run(sys.argv[1:]))\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("SLEUTH_", "OPENAI_"))}
    environ.update(SLEUTH_HOME=str(home), PYTHONPATH=str(ROOT), **env)
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
    )


def assert_hint(proc: subprocess.CompletedProcess[str], extra: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("sleuth: error: ")
    assert f"the '{extra}' extra" in lines[0]
    # Run from the checkout: the hint installs the extra into it, not a name no index has.
    assert f"pip install -e '.[{extra}]'" in lines[0], lines[0]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("package", "argv", "extra"),
    [
        ("openai", ["agent", "What is WAL mode?"], "llm"),
        ("mcp", ["mcp"], "mcp"),
        ("starlette", ["serve", "--port", "0"], "web"),
        ("uvicorn", ["serve", "--port", "0"], "web"),
    ],
)
def test_every_entry_point_names_the_missing_extra(
    package: str, argv: list[str], extra: str, tmp_path: Path
) -> None:
    assert_hint(run_without(package, argv, tmp_path), extra)


@pytest.mark.slow
def test_a_configured_model_without_openai_fails_before_a_run_is_recorded(
    tmp_path: Path, closed_port: int
) -> None:
    proc = run_without(
        "openai",
        [
            "--model",
            "gpt-4o",
            "--search",
            "searxng",
            "--searxng-url",
            f"http://127.0.0.1:{closed_port}",
            "What is WAL mode?",
        ],
        tmp_path,
        OPENAI_API_KEY="sk-test",
    )
    assert_hint(proc, "llm")
    listed = run_without("openai", ["runs", "--format", "json"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []  # no 'failed' run left behind by a setup error


def _fake_install(site: Path, direct_url: dict[str, object] | None) -> Path:
    """A site-packages folder whose sleuth-research metadata says where it came from."""
    info = site / "sleuth_research-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: sleuth-research\nVersion: 0.1.0\n", encoding="utf-8"
    )
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url), encoding="utf-8")
    return site


def test_install_hint_follows_where_sleuth_came_from(tmp_path: Path) -> None:
    checkout = tmp_path / "my checkout"
    checkout.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    url = checkout.as_uri()
    # `pip install .`: in the checkout, '.'; anywhere else, the checkout's path.
    site = _fake_install(tmp_path / "site1", {"url": url, "dir_info": {}})
    assert install_hint("web", root=site, cwd=checkout) == "pip install '.[web]'"
    assert install_hint("web", root=site, cwd=elsewhere) == f"pip install '{checkout}[web]'"
    # `pip install -e .`
    site = _fake_install(tmp_path / "site2", {"url": url, "dir_info": {"editable": True}})
    assert install_hint("mcp", root=site, cwd=checkout) == "pip install -e '.[mcp]'"
    # From a package index (no direct URL): the package's name.
    site = _fake_install(tmp_path / "site3", None)
    assert install_hint("llm", root=site, cwd=checkout) == "pip install 'sleuth-research[llm]'"
    # This test runs from a checkout: the hint installs into it, editably.
    assert install_hint("browser", cwd=ROOT) == "pip install -e '.[browser]'"
