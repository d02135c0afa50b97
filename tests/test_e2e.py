"""The whole pipeline against the offline web: in-process CLI, Python API and a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import sleuth
from sleuth.cli import run
from sleuth.models import SearchHit
from sleuth.stages.plan import keyword_query, rule_queries
from sleuth.testing import OfflineWeb

# What each misbehaving page must be reported as, in the report's Gaps.
HOSTILE_REASONS = {
    "slow_drip": "timed out",
    "not_found": "HTTP 404",
    "forbidden": "HTTP 403",
    "server_error": "HTTP 500",
    "redirect_loop": "redirect",
    "endless": "too large",
    "gzip_bomb": "too large",
    "binary_html": "binary",
    "nav_only": "no main text",
    "empty": "empty",
    "cookie_wall": "cookie wall",
}
PAGE_TIMEOUT = 2.0


def web_args(web: OfflineWeb, *extra: str) -> list[str]:
    return [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        str(PAGE_TIMEOUT),
        "--quiet",
        *extra,
    ]


def page_requests(web: OfflineWeb) -> Counter[str]:
    """GETs that reached a page host (not the search endpoint), by URL."""
    main = urlsplit(web.base_url).netloc
    return Counter(
        f"http://{r.host}{r.path}" for r in web.requests if r.method == "GET" and r.host != main
    )


def test_cli_json_report_cites_only_fetched_pages(web: OfflineWeb, tmp_path: Path) -> None:
    topic = web.topics[0]
    web.reset_log()
    out = tmp_path / "report.json"
    assert run(web_args(web, "--format", "json", "-o", str(out), topic.question)) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report) >= {
        "topic",
        "depth",
        "queries",
        "sources",
        "failures",
        "confidence",
        "markdown",
        "stats",
    }
    assert report["topic"] == topic.question and report["queries"][0] == topic.question
    assert 1 <= len(report["sources"]) <= 5
    fetched = page_requests(web)
    for n, source in enumerate(report["sources"], start=1):
        assert source["id"] == n
        assert set(source) == {"id", "url", "title", "quality", "score", "passages", "providers"}
        assert source["providers"] == ["searxng"]
        assert fetched[source["url"]] == 1, f"{source['url']} was cited but not fetched once"
        assert source["passages"] and f"[{n}]" in report["markdown"]
    assert f"[{len(report['sources']) + 1}]" not in report["markdown"]
    assert report["stats"]["searches"] >= len(report["queries"])
    assert report["stats"]["fetches"] >= len(report["sources"])


@pytest.mark.slow
def test_the_right_pages_are_found(web: OfflineWeb) -> None:
    """A topic's expected pages are among its sources: ranking and reading work together."""
    for topic in web.topics[:3]:
        report = sleuth.research_sync(
            topic.question,
            search="searxng",
            searxng_url=web.searxng_url,
            allow_private_urls=True,
            timeout=PAGE_TIMEOUT,
            max_sources=5,
        )
        expected = {web.doc(doc_id).url for doc_id in topic.expected}
        cited = {s.url for s in report.sources}
        assert len(cited & expected) >= 3, (topic.id, cited, expected)
        assert report.confidence in ("MEDIUM", "HIGH")


@pytest.mark.slow
def test_misbehaving_pages_are_named_in_gaps_and_nothing_is_fetched_twice(
    full_web: OfflineWeb,
) -> None:
    web = full_web  # every misbehaving page among the results, the slow drip too
    seen: dict[str, str] = {}
    for topic in web.topics:
        web.reset_log()
        report = sleuth.research_sync(
            topic.question,
            search="searxng",
            searxng_url=web.searxng_url,
            allow_private_urls=True,
            timeout=PAGE_TIMEOUT,
            max_sources=20,
            depth=1,
        )
        counts = page_requests(web)
        # (A later topic's pages may all be in the store already: none fetched at all.)
        assert max(counts.values(), default=1) == 1, counts.most_common(3)
        gaps = report.markdown.split("## Gaps", 1)[1]
        for failure in report.failures:
            if failure.url:
                assert failure.url in gaps
                seen[failure.url] = failure.reason
        # (A page off-topic for one question may be a source for another.)
        failed = {f.url for f in report.failures}
        assert all(s.url not in failed for s in report.sources)
    for case, reason in HOSTILE_REASONS.items():
        url = web.hostile[case]
        assert url in seen, f"{case} never reached the Gaps"
        assert reason in seen[url], (case, seen[url])


def test_pdf_and_mislabelled_charset_are_read(web: OfflineWeb) -> None:
    report = sleuth.research_sync(
        "LayoutParser unified toolkit deep learning document image analysis",
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=PAGE_TIMEOUT,
        max_sources=10,
        depth=1,
    )
    # max_sources above the candidate count: every candidate is fetched, so the
    # assertion does not depend on which pages happen to finish first.
    assert web.hostile["pdf"] in {s.url for s in report.sources}


def test_private_addresses_are_refused_by_default(web: OfflineWeb) -> None:
    """Without --allow-private-urls, search results pointing at loopback are not fetched."""
    web.reset_log()
    report = sleuth.research_sync(
        web.topics[0].question,
        search="searxng",
        searxng_url=web.searxng_url,
        timeout=PAGE_TIMEOUT,
        depth=1,
    )
    assert report.sources == []
    assert report.failures and all("blocked" in f.reason for f in report.failures if f.url)
    assert not page_requests(web), "a blocked URL reached the network"
    assert report.confidence == "LOW"


def test_no_source_at_all_exits_1_with_gaps(
    web: OfflineWeb, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run(
        [
            "--search",
            "searxng",
            "--searxng-url",
            web.searxng_url,
            "--quiet",
            "--depth",
            "1",
            web.topics[1].question,
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "## Gaps" in out and "blocked" in out and "## Confidence: LOW" in out


def test_search_outage_is_recorded_not_fatal(web: OfflineWeb) -> None:
    web.search_failures = 100
    try:
        report = sleuth.research_sync(
            web.topics[2].question,
            search="searxng",
            searxng_url=web.searxng_url,
            allow_private_urls=True,
            depth=1,
        )
    finally:
        web.search_failures = 0
    assert report.sources == []
    assert any(f.stage == "search" and "HTTP 500" in f.reason for f in report.failures)
    assert "searxng search" in report.markdown.split("## Gaps", 1)[1]


@pytest.mark.slow
def test_subprocess_markdown_report(web: OfflineWeb, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLEUTH_")}
    proc = subprocess.run(
        [sys.executable, "-m", "sleuth", *web_args(web)[:-1], web.topics[3].question],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"# Research: {web.topics[3].question}")
    assert "## Key Findings" in proc.stdout and "## Sources" in proc.stdout
    assert "[1] [UNVERIFIED]" in proc.stdout
    assert "Traceback" not in proc.stderr
    assert "search" in proc.stderr, "progress goes to stderr"


def test_fetch_budget_stops_gathering_and_still_reports(web: OfflineWeb) -> None:
    web.reset_log()
    report = sleuth.research_sync(
        web.topics[4].question,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=PAGE_TIMEOUT,
        max_sources=10,
        max_fetches=2,
        depth=1,
    )
    assert report.stats.fetches == 2 and sum(page_requests(web).values()) <= 2
    assert report.stopped_by == "fetch budget reached (--max-fetches 2)"
    assert "fetch budget reached" in report.markdown.split("## Gaps", 1)[1]
    assert 1 <= len(report.sources) <= 2


def test_time_budget_ends_a_run_waiting_on_a_slow_page(web: OfflineWeb) -> None:
    """With every page slow, --max-time ends gathering at the budget, not the page deadline."""
    web.latency = 30.0
    try:
        report = sleuth.research_sync(
            web.topics[5].question,
            search="searxng",
            searxng_url=web.searxng_url,
            allow_private_urls=True,
            timeout=60,
            max_time="1s",
            depth=1,
        )
    finally:
        web.latency = 0.0
    # Every page comes after 30 s: none read, and the budget, not a page, ended the run.
    assert report.sources == [] and report.stopped_by is not None
    assert report.stopped_by.startswith("time budget reached")


async def test_pages_download_while_slower_queries_are_still_searched(
    web: OfflineWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The question's own results are fetched without waiting for its variant queries."""
    from sleuth.search import base as search_base
    from sleuth.search.searxng import SearxngProvider

    fetching = asyncio.Event()

    class Gated(SearxngProvider):
        name = "gated"

        async def search(self, query: str, *, limit: int) -> list[SearchHit]:
            if query != topic.question:
                # Answers only once a page download has begun: a pipeline that waits for
                # every query before fetching would stall here until the search timeout.
                await asyncio.wait_for(fetching.wait(), timeout=PAGE_TIMEOUT * 3)
            return await super().search(query, limit=limit)

    def on_event(event: sleuth.Event) -> None:
        if event.kind == "fetch_start":
            fetching.set()

    monkeypatch.setitem(search_base._REGISTRY, "gated", Gated)
    topic = web.topics[0]
    report = await sleuth.research(
        topic.question,
        search="gated",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=PAGE_TIMEOUT,
        depth=2,
        max_sources=3,
        no_store=True,
        on_event=on_event,
    )
    assert len(report.queries) > 1
    assert not [f for f in report.failures if f.stage == "search"], report.failures
    assert len(report.sources) == 3


async def test_a_variant_holding_the_whole_question_can_start_the_fetching(
    web: OfflineWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the keyword query ("China responding protests Hong Kong") answers before the
    question itself, its hits are fetched at once: they rank the same pages, so there is
    nothing to wait for."""
    from sleuth.search import base as search_base
    from sleuth.search.searxng import SearxngProvider

    fetching = asyncio.Event()
    [topic] = [t for t in web.topics if t.id == "hong-kong"]
    keywords = keyword_query(topic.question)
    assert keywords == "China responding protests Hong Kong"

    class Gated(SearxngProvider):
        name = "gated"

        async def search(self, query: str, *, limit: int) -> list[SearchHit]:
            if query != keywords:
                # The question answers only once a download has begun: waiting for
                # the question itself would stall here.
                await asyncio.wait_for(fetching.wait(), timeout=PAGE_TIMEOUT * 3)
            return await super().search(query, limit=limit)

    def on_event(event: sleuth.Event) -> None:
        if event.kind == "fetch_start":
            fetching.set()

    monkeypatch.setitem(search_base._REGISTRY, "gated", Gated)
    report = await sleuth.research(
        topic.question,
        search="gated",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=PAGE_TIMEOUT,
        depth=2,
        max_sources=3,
        no_store=True,
        on_event=on_event,
    )
    assert report.queries == [topic.question, keywords]
    assert not [f for f in report.failures if f.stage == "search"], report.failures
    assert len(report.sources) == 3


async def test_the_sides_of_a_split_question_never_start_the_fetching(
    web: OfflineWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parts' queries ("… markets", "… trade talks") rank one part's pages first:
    even when they answer first, fetching waits for a query that holds the whole question."""
    from sleuth.search import base as search_base
    from sleuth.search.searxng import SearxngProvider

    topic = web.topics[2]
    fragments = rule_queries(topic.question, 2)[1:]  # one per part: markets, trade talks
    fragments_in = asyncio.Event()
    answered: list[str] = []
    order: list[str] = []

    class Ordered(SearxngProvider):
        name = "ordered"

        async def search(self, query: str, *, limit: int) -> list[SearchHit]:
            if query not in fragments:
                await asyncio.wait_for(fragments_in.wait(), timeout=PAGE_TIMEOUT * 3)
            hits = await super().search(query, limit=limit)
            answered.append(query)
            order.append("fragment" if query in fragments else "whole")
            if set(fragments) <= set(answered):
                fragments_in.set()
            return hits

    def on_event(event: sleuth.Event) -> None:
        if event.kind == "fetch_start":
            order.append("fetch")

    monkeypatch.setitem(search_base._REGISTRY, "ordered", Ordered)
    report = await sleuth.research(
        topic.question,
        search="ordered",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=PAGE_TIMEOUT,
        depth=2,
        max_sources=3,
        no_store=True,
        on_event=on_event,
    )
    assert len(fragments) == 2 and order[:2] == ["fragment", "fragment"]
    assert order.index("fetch") > order.index("whole"), order
    assert len(report.sources) == 3


def test_top_wait_holds_the_run_for_the_best_ranked_page_up_to_the_runs_own_bound(
    full_web: OfflineWeb,
) -> None:
    """--top-wait: the slow-drip page ranks first for this topic and is still coming when
    enough pages are read; given up to 600 s it is waited for, but not past the bound this
    run's own page times set (issue 26: a few times as long as its pages took), so it is
    cut there, not held until its own deadline (the suite runs with SLEUTH_TOP_WAIT=0, see
    conftest.py). Three sources: this topic has four on-topic pages that download, and
    with five wanted gathering would wait for every page anyway (the off-topic ones are
    set aside); a longer page deadline, so that three are read first on a loaded machine
    too."""
    web = full_web  # the slow drip among the results
    events: list[Any] = []
    report = sleuth.research_sync(
        web.topics[0].question,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=3 * PAGE_TIMEOUT,
        no_store=True,
        top_wait=600,
        max_sources=3,
        on_event=events.append,
    )
    waits = [e.data for e in events if e.kind == "info" and "better-ranked" in e.message]
    assert len(waits) == 1 and waits[0]["pages"] == 1
    # The bound, not --top-wait, ends the wait: held to --top-wait, the announced wait would
    # be 600 s less the time gathering had taken, which is less than the whole run took.
    assert waits[0]["seconds"] < 600 - report.stats.elapsed_s
    reasons = {f.url: f.reason for f in report.failures}
    # (Its deadline may still come first where a loaded machine made every page slow.)
    assert reasons[web.hostile["slow_drip"]] in (
        "not waited for: enough sources were read first",
        f"timed out after {3 * PAGE_TIMEOUT:g}s",
    )
    assert report.sources
