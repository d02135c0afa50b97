"""What reaches stderr: known failures are gaps in the report, tracebacks only with -v.

Each research here runs in a real ``sleuth`` process (a traceback printed by Python's
logging only shows on a real stderr) whose search returns URLs that used to end as
"unexpected error" with a 31-line traceback: bad IDNA hosts (``xn--a-``), a host label
over 63 characters, a port no socket takes, and the offline web's ``charset=undefined``
page. A second provider is a broken plugin, whose traceback is debug information.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sleuth.testing import OfflineWeb

BLOCKED = {
    "http://xn--a-.example/": "invalid IDNA label 'xn--a-'",
    "http://xn--zz.example/": "invalid IDNA label 'xn--zz'",
    "http://" + "a" * 64 + ".example/": "label of 64 characters",
    "http://127.0.0.1:99999/": "invalid port 99999",
}

#: Runs the CLI with two search providers registered: "fixed" answers every query with
#: the URLs given in argv[1] (comma-separated), "broken" raises (a plugin's bug).
PROGRAM = """
import sys
from sleuth.models import SearchHit
from sleuth.search.base import SearchProvider, register

URLS = sys.argv[1].split(",")

@register
class Fixed(SearchProvider):
    name = "fixed"
    async def search(self, query, *, limit):
        return [SearchHit(title=f"result {n}", url=url, snippet="a result", rank=n,
                          provider=self.name, query=query)
                for n, url in enumerate(URLS, start=1)]

@register
class Broken(SearchProvider):
    name = "broken"
    async def search(self, query, *, limit):
        raise RuntimeError("the plugin fell over")

from sleuth.cli import main
sys.argv = ["sleuth", *sys.argv[2:]]
main()
"""


def research(web: OfflineWeb, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    urls = [*BLOCKED, web.hostile["undefined_charset"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEUTH_", "OPENAI_"))}
    args = [
        "--search",
        "broken,fixed",
        "--allow-private-urls",
        "--no-llm",
        "--depth",
        "1",
        "--max-sources",
        "10",
        "--timeout",
        "5",
        "--home",
        str(home),
        "--quiet",
        *extra,
        "How do soybean farmers see the phase one trade deal?",
    ]
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, ",".join(urls), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=home,
    )


@pytest.mark.slow
def test_known_failures_are_gaps_not_tracebacks(web: OfflineWeb, tmp_path: Path) -> None:
    done = research(web, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "unexpected error" not in done.stderr
    assert done.stderr == ""  # --quiet: nothing to say that the report does not say
    gaps = done.stdout.split("## Gaps", 1)[1]
    for url, reason in BLOCKED.items():
        line = next(line for line in gaps.splitlines() if url in line)
        assert "blocked: malformed host" in line or "blocked: invalid port" in line
        assert reason in line.replace("\\", "")
    assert "broken search" in gaps and "RuntimeError: the plugin fell over" in gaps
    # charset=undefined is ignored, and the page read as the cp1252 it is.
    sources = done.stdout.split("## Sources", 1)[1]
    assert web.hostile["undefined_charset"] in sources


@pytest.mark.slow
def test_verbose_shows_the_debug_log_with_tracebacks(web: OfflineWeb, tmp_path: Path) -> None:
    done = research(web, tmp_path, "--verbose")
    assert done.returncode == 0, done.stderr
    # The plugin's bug, with its traceback, is what --verbose is for.
    assert "sleuth: DEBUG sleuth.search: search provider raised" in done.stderr
    assert "Traceback (most recent call last)" in done.stderr
    assert "RuntimeError: the plugin fell over" in done.stderr
    assert "bm25s" not in done.stderr  # other libraries' debug logs stay out
    # The known failures are still no "unexpected error".
    assert "unexpected error fetching" not in done.stderr
