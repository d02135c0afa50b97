"""What a user without a network reads: one plain line, not a resolver's error per query.

When every search fails because the search engine cannot be reached, the report's Gaps
and the progress say so in one line with what works offline; the raw errors stay in the
JSON report's ``detail`` (and ``--verbose``).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from sleuth.cli import run
from sleuth.pipeline.quick import research
from sleuth.testing import OfflineWeb

QUESTION = "How does the Rust borrow checker work?"


class FakeDDGS:
    """Stands in for ``ddgs.DDGS`` (no network): every search raises ``error``."""

    error: Exception = RuntimeError("set by the test")

    def __init__(self, timeout: int | None = 5, **kwargs: object) -> None:
        self.timeout = timeout

    def text(self, query: str, **kwargs: object) -> list[dict[str, str]]:
        raise self.error


def closed_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_searxng_is_one_plain_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    out = tmp_path / "report.json"
    assert (
        run(
            [
                "--search",
                "searxng",
                "--searxng-url",
                url,
                "--no-llm",
                "--no-store",
                "--format",
                "json",
                "-o",
                str(out),
                QUESTION,
            ]
        )
        == 1
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    [failure] = report["failures"]
    assert failure["reason"] == (
        f"could not reach the search engine (searxng): is SearXNG running at {url}?"
    )
    assert "request failed" in failure["detail"] and QUESTION in failure["detail"]
    gaps = report["markdown"].split("## Gaps", 1)[1].strip()
    assert gaps == f"- search — {failure['reason']}"
    err = capsys.readouterr().err
    assert failure["reason"] in err
    assert "request failed" not in err  # the raw error is for --verbose


async def test_duckduckgo_without_network_suggests_what_works_offline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ddgs
    from ddgs.exceptions import DDGSException

    class Offline(FakeDDGS):
        # What ddgs raises on a machine without DNS (its message, as seen in the wild).
        error = DDGSException(
            "DNSError: DNSError('error sending request for url (https://search.yahoo.com/"
            "search;_ylt=x?p=rust) > error resolving DNS > DNS error: no records found for "
            'Query { name: Name("search.yahoo.com."), query_type: A, query_class: IN }\')'
        )

    monkeypatch.setattr(ddgs, "DDGS", Offline)
    report = await research(QUESTION, search="duckduckgo", no_llm=True, no_store=True)
    assert report.sources == []
    [failure] = report.failures
    assert failure.reason.startswith("could not reach the search engine (duckduckgo): no network?")
    assert "--search searxng --searxng-url URL" in failure.reason
    assert "--docs DIR" in failure.reason
    assert failure.detail.count("search.yahoo.com") >= 2  # every query's raw error is kept
    gaps = report.markdown.split("## Gaps", 1)[1]
    assert "yahoo" not in gaps and "\\_" not in gaps and "\\>" not in gaps
    assert gaps.strip().count("\n") == 0  # one line, whatever the number of queries


async def test_a_search_that_fails_for_another_reason_is_reported_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ddgs
    from ddgs.exceptions import DDGSException

    class Forbidden(FakeDDGS):
        error = DDGSException("https://html.duckduckgo.com 403 Forbidden")

    monkeypatch.setattr(ddgs, "DDGS", Forbidden)
    report = await research(QUESTION, search="duckduckgo", no_llm=True, no_store=True)
    assert report.queries and len(report.failures) == len(report.queries)  # one per query
    assert all("403 Forbidden" in f.reason and f.detail == "" for f in report.failures)


def test_searches_that_find_nothing_say_so(web: OfflineWeb, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    assert (
        run(
            [
                "--search",
                "searxng",
                "--searxng-url",
                web.searxng_url,
                "--no-llm",
                "--no-store",
                "--quiet",
                "--depth",
                "1",
                "--format",
                "json",
                "-o",
                str(out),
                "zqxv wyvrn plugh",
            ]
        )
        == 1
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    asked = len(report["queries"])
    assert [f["reason"] for f in report["failures"]] == [
        f"no search found anything (searxng, {asked} quer{'y' if asked == 1 else 'ies'}): "
        "try other words"
    ]
    assert "Every source that was tried could be read" not in report["markdown"]


@pytest.mark.slow
async def test_a_page_over_the_size_cap_reads_plainly_in_gaps(web: OfflineWeb) -> None:
    """It read 'too large (\\> 5000000 bytes)' in the Markdown: no escape, and separators."""
    report = await research(
        web.topics[0].question,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=5,
        no_llm=True,
        no_store=True,
    )
    gaps = report.markdown.split("## Gaps", 1)[1]
    assert "— too large (over 5,000,000 bytes)" in gaps
    assert "\\>" not in gaps
