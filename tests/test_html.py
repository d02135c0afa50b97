"""``--format html``: one self-contained file, working citation links, untrusted text escaped."""

from __future__ import annotations

from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from sleuth.cli import run
from sleuth.models import Failure, Quality, Report, Source, Stats
from sleuth.report.html import render_fragment, render_html, report_from_data
from sleuth.report.waterfall import DATA_TYPE, REPORT_LOADER, REPORT_SCRIPT, unpack
from sleuth.stages.write import confidence, render_markdown
from sleuth.testing import OfflineWeb


class Parsed(HTMLParser):
    """Every tag with its attributes (entities already decoded), and the page's text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        #: Each script element's attributes and text.
        self.scripts: list[tuple[dict[str, str], str]] = []
        self._script: dict[str, str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        if tag == "script":
            self._script = self.tags[-1][1]
            self.scripts.append((self._script, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
            return
        self.text.append(data)

    def hrefs(self) -> list[str]:
        return [a["href"] for tag, a in self.tags if tag == "a" and "href" in a]

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if "id" in a}


def source(
    n: int, title: str, url: str, tier: Quality = Quality.PRIMARY, passages: list[str] | None = None
) -> Source:
    return Source(
        id=n,
        url=url,
        title=title,
        quality=tier,
        quality_score=4,
        score=1.0,
        passages=passages or [f"Passage of source {n}."],
    )


def make_report(
    sources: list[Source], failures: list[Failure] | None = None, markdown: str | None = None
) -> Report:
    failures = failures or []
    level, reason = confidence(sources)
    return Report(
        topic="What is WAL mode?",
        depth=2,
        queries=["What is WAL mode?"],
        sources=sources,
        failures=failures,
        confidence=level,
        confidence_reason=reason,
        markdown=markdown or render_markdown("What is WAL mode?", sources, failures, level, reason),
        stats=Stats(searches=2, fetches=3, elapsed_s=1.5),
    )


def assert_self_contained(parsed: Parsed) -> None:
    """Nothing is loaded from anywhere: no image, frame, stylesheet link or src; no script
    but sleuth's own (the timeline's, its CSP allows it by its hash) and data blocks."""
    for tag, attrs in parsed.tags:
        assert tag not in {"img", "iframe", "link", "object", "embed", "base"}, tag
        assert "src" not in attrs and "srcset" not in attrs, (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
    for href in parsed.hrefs():
        assert href.startswith(("#", "http://", "https://", "mailto:")), href
    for attrs, text in parsed.scripts:
        if attrs == {"type": DATA_TYPE}:
            data = unpack(text)  # data, never run: what the drawing script reads
            assert data["j"] == REPORT_SCRIPT  # the script the loader runs, by its hash
        else:
            assert attrs == {} and text == REPORT_LOADER, (attrs, text[:80])


def test_citation_markers_link_to_their_source_entries() -> None:
    sources = [
        source(1, "SQLite WAL", "https://sqlite.org/wal.html"),
        source(2, "A blog", "https://blog.example/wal", Quality.UNVERIFIED),
    ]
    prose = (
        "# Research: What is WAL mode?\n\nWAL appends changes to a log [1]. Readers do not "
        "block writers [1, 2]. A claim with an unknown number [7] stays text.\n\n"
        "## Confidence: MEDIUM — two sources\n\n## Sources\n\n[1] x\n[2] y\n\n## Gaps\n\n"
        "_Every source that was tried could be read._\n"
    )
    report = make_report(sources, markdown=prose)
    parsed = Parsed(render_html(report))
    cites = [a for tag, a in parsed.tags if tag == "a" and "cite" in a.get("class", "")]
    assert [a["href"] for a in cites] == ["#source-1", "#source-1", "#source-2"]
    assert {"source-1", "source-2", "gaps", "confidence"} <= parsed.ids()
    assert "[7]" in "".join(parsed.text)  # not a source: not a link
    # The Markdown's own Sources list is replaced by the linked, badged one: listed once.
    text = "".join(parsed.text)
    assert text.count("SQLite WAL") == 1 and "[1] x" not in text
    assert cites[0]["title"] == "SQLite WAL"  # hovering a marker names its source


def test_sections_are_found_in_the_report_language() -> None:
    sources = [source(1, "SQLite WAL", "https://sqlite.org/wal.html")]
    prose = (
        "# 研究: 什么是 WAL?\n\nWAL 把修改写入日志 [1]。\n\n## 可信度: LOW — 一个来源\n\n"
        "## 参考来源\n\n[1] [PRIMARY] SQLite WAL — <https://sqlite.org/wal.html>\n\n"
        "## 未能获取的内容\n\n- <https://down.example/> — HTTP 503\n"
    )
    parsed = Parsed(render_html(make_report(sources, markdown=prose)))
    assert {"source-1", "gaps", "confidence"} <= parsed.ids()
    assert "".join(parsed.text).count("SQLite WAL") == 1  # its own list was replaced
    assert ("h2", {"id": "confidence", "class": "confidence low"}) in parsed.tags


def test_template_report_shows_tiers_confidence_and_gaps() -> None:
    sources = [
        source(1, "SQLite WAL", "https://sqlite.org/wal.html"),
        source(2, "Stack Overflow answer", "https://stackoverflow.com/q/1", Quality.SECONDARY),
        source(3, "Some blog", "https://blog.example/x", Quality.UNVERIFIED),
    ]
    failures = [
        Failure(url="https://down.example/page", reason="HTTP 503"),
        Failure(url="", reason="searxng search for “wal” failed: timed out", stage="search"),
    ]
    report = make_report(sources, failures)
    html = render_html(report)
    parsed = Parsed(html)
    badges = [a["class"] for _, a in parsed.tags if "badge" in a.get("class", "").split()]
    assert {"badge tier-primary", "badge tier-secondary", "badge tier-unverified"} <= set(badges)
    assert f"badge conf-{report.confidence.lower()}" in badges
    assert f"confidence {report.confidence.lower()}" in [a.get("class") for _, a in parsed.tags]
    text = " ".join(parsed.text)
    assert "HTTP 503" in text and "timed out" in text  # the Gaps section
    assert "https://down.example/page" in parsed.hrefs()
    entries = {a["id"]: a for _, a in parsed.tags if a.get("id", "").startswith("source-")}
    assert set(entries) == {"source-1", "source-2", "source-3"}
    assert_self_contained(parsed)
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](java&#x73;cript:alert(1))",
    "<javascript:alert(1)>",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "![pixel](https://tracker.example/p.png)",
    '"><svg onload=alert(1)>',
]


@pytest.mark.parametrize("payload", HOSTILE)
def test_page_text_can_never_become_markup_or_a_script_link(payload: str) -> None:
    evil = source(1, f"Title {payload}", "https://ok.example/a", passages=[f"Text {payload}"])
    bad_url = source(2, "Bad URL", "javascript:alert(2)")
    # Page text reaches the HTML both through the template writer's Markdown and raw,
    # as an LLM-written report might quote it.
    for markdown in (None, f"# Research: q\n\n{payload} [1]\n\n## Gaps\n\n- {payload}\n"):
        report = make_report(
            [evil, bad_url], [Failure(url="https://x.example", reason=payload)], markdown=markdown
        )
        parsed = Parsed(render_html(report))
        assert_self_contained(parsed)
        for href in parsed.hrefs():
            assert not unescape(href).strip().lower().startswith(("javascript:", "data:"))


def test_fragment_and_json_round_trip() -> None:
    report = make_report([source(1, "SQLite WAL", "https://sqlite.org/wal.html")])
    again = report_from_data(report.to_json_dict())  # what the run store and --format json keep
    assert render_fragment(again) == render_fragment(report)
    assert render_fragment(report).startswith('<article class="sleuth-report">')


def test_cli_writes_one_html_file_from_the_offline_web(web: OfflineWeb, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    code = run(
        [
            "--search",
            "searxng",
            "--searxng-url",
            web.searxng_url,
            "--allow-private-urls",
            "--timeout",
            "2",
            "--no-store",
            "--no-llm",
            "--quiet",
            "--format",
            "html",
            "-o",
            str(out),
            web.topics[0].question,
        ]
    )
    assert code == 0
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    parsed = Parsed(html)
    assert_self_contained(parsed)
    targets = [h[1:] for h in parsed.hrefs() if h.startswith("#source-")]
    assert targets and set(targets) <= parsed.ids()
    assert any(a.get("class", "").startswith("badge conf-") for _, a in parsed.tags)
    assert "gaps" in parsed.ids()


def test_tiers_read_calmly_and_say_what_they_mean() -> None:
    """Every source of a typical run showed a grey "UNVERIFIED" badge, read as a warning
    about the page: it says "unlisted", the legend under the sources says once what each
    tier shown means (no tooltip repeats it on every badge), and the JSON keeps the
    tier's name."""
    sources = [
        source(1, "SQLite WAL", "https://sqlite.org/wal.html"),
        source(2, "Some blog", "https://blog.example/x", Quality.UNVERIFIED),
    ]
    report = make_report(sources)
    parsed = Parsed(render_html(report))
    badges = {a["class"]: a for _, a in parsed.tags if "tier-" in a.get("class", "")}
    assert set(badges) == {"badge tier-primary", "badge tier-unverified"}
    assert not any("title" in attrs for attrs in badges.values())
    text = " ".join(parsed.text)
    assert "UNVERIFIED" not in text and "unlisted" in text
    # The legend under the sources: each tier shown, once, with what it means.
    assert text.count("says nothing against the page itself") == 1
    assert text.count("an official site, standard or documentation") == 1
    assert [s["quality"] for s in report.to_json_dict()["sources"]] == ["PRIMARY", "UNVERIFIED"]


def test_the_counts_read_well_and_no_gaps_is_not_a_link() -> None:
    report = make_report([source(1, "SQLite WAL", "https://sqlite.org/wal.html")])
    report = report.model_copy(
        update={"stats": Stats(searches=1, fetches=12_345, elapsed_s=1234.5)}
    )
    parsed = Parsed(render_html(report))
    text = " ".join(parsed.text)
    assert "0 gaps" in text and "#gaps" not in parsed.hrefs()  # nothing to go to
    assert "1 source read" in text and "1 search" in text and "12,345 pages fetched" in text
    failed = make_report([], [Failure(url="https://big.example/", reason="too large")])
    parsed = Parsed(render_html(failed))
    assert "#gaps" in parsed.hrefs() and "1 gap" in " ".join(parsed.text)
