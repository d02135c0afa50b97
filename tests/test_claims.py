"""Every cited sentence with the words of its source that back it (``Report.claims``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import sleuth
from sleuth.cli import run
from sleuth.models import Report
from sleuth.report.waterfall import DATA_TYPE, REPORT_LOADER, unpack
from sleuth.stages.evidence import Evidence
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import ScriptedResearcher
from sleuth.urls import canonicalize

MODEL = "scripted-model"


def normal(text: str) -> str:
    return " ".join(text.split())


def stored_text(home: Path, url: str) -> str:
    with Store(home) as store:
        page = store.get_page(canonicalize(url))
    assert page is not None and page.text, url
    return page.text


def research(web: OfflineWeb, question: str, home: Path, **extra: Any) -> Report:
    return sleuth.research_sync(
        question,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=5,
        base_url=web.llm_url,
        model=MODEL,
        home=str(home),
        **extra,
    )


@pytest.mark.slow
def test_every_claim_quotes_the_stored_text_of_the_source_it_cites(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """Over every topic of the offline web, with the scripted model: each kept sentence
    has a span of each source it cites, found verbatim (whitespace aside) in the text
    the store keeps of that source."""
    ScriptedResearcher().install(llm)
    home = tmp_path / "home"
    seen = 0
    for topic in web.topics:
        report = research(web, topic.question, home, max_sources=4)
        claims = report.claims or []
        kept = [c for c in claims if c.verdict == "kept"]
        assert report.citations is not None and len(kept) == report.citations.kept
        by_id = {s.id: s.url for s in report.sources}
        for claim in kept:
            assert claim.support, claim
            assert {s.source for s in claim.support} <= set(claim.sources)
            for support in claim.support:
                assert 0 < support.score <= 1
                text = stored_text(home, by_id[support.source])
                assert normal(support.quote) in normal(text), (claim.text, support.quote)
                seen += 1
    assert seen >= 2 * len(web.topics)


def test_the_best_span_is_the_sentence_holding_the_claim() -> None:
    text = (
        "Stadia launched on Tuesday.\n"
        "The service costs $9.99 a month. Games are bought at retail prices, "
        "and a free tier comes next year.\n"
        "Reviews were mixed."
    )
    evidence = Evidence.build(text)
    found = evidence.support("The Stadia Pro service costs $9.99 a month.", 3)
    assert found is not None and found.source == 3
    assert found.quote == "The service costs $9.99 a month."
    assert found.score == pytest.approx(4 / 6, abs=0.001)  # not "Stadia", not "Pro"
    both = evidence.support("It costs $9.99 a month and a free tier comes next year.", 3)
    assert both is not None and both.score == 1.0
    assert both.quote.startswith("The service costs") and both.quote.endswith("next year.")
    assert evidence.support("Quantum cryptography", 3) is None


def test_json_lists_the_claims_with_their_spans_and_scores(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ScriptedResearcher().install(llm)
    home = tmp_path / "home"
    args = ["--search", "searxng", "--searxng-url", web.searxng_url, "--allow-private-urls"]
    args += ["--base-url", web.llm_url, "--model", MODEL, "--home", str(home), "--quiet"]
    assert run([web.topics[3].question, *args, "--format", "json", "--max-sources", "3"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["claims"], "the JSON lists the claims"
    for claim in data["claims"]:
        assert set(claim) == {"text", "sources", "verdict", "support"}
        assert claim["verdict"] in ("kept", "unverified", "removed", "invented")
        for support in claim["support"]:
            assert set(support) == {"source", "quote", "score"}
            assert support["source"] in claim["sources"]


def test_quotes_and_timings_from_pages_stay_text_in_the_html() -> None:
    """A page's words shown as a quote, and URLs, queries and reasons on the timeline,
    are escaped: they never become markup, and the file still runs no script."""
    from sleuth.models import Claim, Quality, Source, Span, Stats, Support, Timeline
    from sleuth.report.html import render_html

    evil = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    source = Source(
        id=1,
        url="https://a.test/",
        title=evil,
        quality=Quality.UNVERIFIED,
        quality_score=2,
        score=1.0,
        passages=[evil],
    )
    span = Span.model_validate(
        {
            "id": 1,
            "kind": "download",
            "stage": "fetch",
            "name": f"https://a.test/{evil}",
            "queued": 0,
            "start": 0,
            "end": 1,
            "outcome": "failed",
            "detail": evil,
        }
    )
    report = Report(
        topic="q",
        depth=1,
        queries=[evil],
        sources=[source],
        failures=[],
        confidence="LOW",
        confidence_reason="r",
        markdown="# Research: q\n\n## Findings\n\nThe claim is here [1].\n",
        stats=Stats(),
        claims=[
            Claim(
                text="The claim is here.",
                sources=[1],
                verdict="kept",
                support=[Support(source=1, quote=evil, score=1.0)],
            )
        ],
        timeline=Timeline(spans=[span], wall_s=1.0),
    )
    html = render_html(report)
    # Two script elements: the timeline's packed data (the hostile text inside it, as
    # JSON) and sleuth's own loader; none made of page text.
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S | re.I)
    assert [attrs for attrs, _ in scripts] == [f' type="{DATA_TYPE}"', ""]
    row = unpack(scripts[0][1])["g"][0][2][0]
    assert row[0] == f"a.test/{evil}" and row[2][0][-1] == f"failed: {evil}"
    assert scripts[1][1] == REPORT_LOADER
    assert "<img" not in html and 'onerror="' not in html
    assert "&lt;img src=x onerror=" in html  # the quote, shown as text
    assert 'class="qt"' in html and "&lt;script&gt;" in html
