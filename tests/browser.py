"""What the tests that drive a real Chromium share: finding it, launching it, and a
``sleuth serve`` started in a subprocess for it to open.

Debian's ``chromium`` (or ``SLEUTH_CHROMIUM``) is driven through Playwright's sync API;
Playwright cannot download its own browsers offline. A test without either skips.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sleuth.testing import OfflineWeb

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
]
NO_CHROMIUM = "no Chromium installed (apt-get install chromium, or set SLEUTH_CHROMIUM)"


def chromium_path() -> str | None:
    """``SLEUTH_CHROMIUM``, else the first Chromium on the PATH."""
    configured = os.environ.get("SLEUTH_CHROMIUM")
    if configured:
        return configured
    for name in ("chromium", "chromium-browser", "chromium-headless-shell"):
        found = shutil.which(name)
        if found:
            return found
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless Chromium (Playwright's ``Browser``), closed at exit; the test
    skips where there is no Chromium or no Playwright."""
    path = chromium_path()
    if path is None:
        pytest.skip(NO_CHROMIUM)
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def serve_env(web: OfflineWeb, tmp_path: Path) -> dict[str, str]:
    """``sleuth serve`` configured like a user would, via the env, against the test web."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEUTH_", "OPENAI_"))}
    env.update(
        SLEUTH_SEARCH="searxng",
        SLEUTH_SEARXNG_URL=web.searxng_url,
        SLEUTH_ALLOW_PRIVATE_URLS="1",
        SLEUTH_TIMEOUT="2",
        SLEUTH_NO_LLM="1",
        SLEUTH_HOME=str(tmp_path / "home"),
    )
    return env


def served_url(proc: subprocess.Popen[str]) -> str:
    """The URL a starting ``sleuth serve`` prints on stderr."""
    assert proc.stderr is not None
    for line in proc.stderr:
        match = re.search(r"serving on (http://\S+/)", line)
        if match:
            return match.group(1)
    raise AssertionError(f"sleuth serve did not start (exit {proc.poll()})")


def screenshot_dir(tmp_path: Path) -> Path:
    """Where a browser test saves its screenshot: ``SLEUTH_SCREENSHOT_DIR``, else ``tmp_path``."""
    configured = os.environ.get("SLEUTH_SCREENSHOT_DIR")
    folder = Path(configured) if configured else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder
