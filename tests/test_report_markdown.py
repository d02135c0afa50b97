"""Markdown that renders everywhere: contents links by GitHub's heading ids (sleuth's HTML
gives the same), follow-up subsections in the contents, citations in reading order."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from records import BRIDGE_DOCS, BRIDGE_QUESTION

import sleuth
from sleuth._slug import Slugger, heading_text
from sleuth.lang import labels_for
from sleuth.models import Report
from sleuth.report.html import render_fragment
from sleuth.stages.sections import _with_contents
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import ScriptedResearcher
from sleuth.urls import canonicalize

# What github-slugger (GitHub's own rule, in JavaScript) gives for each heading.
GITHUB = [
    ("Riemann's functional equation", "riemanns-functional-equation"),
    ("Lee–Yang theorem", "leeyang-theorem"),
    ("1+1 = 2", "11--2"),
    ("a  b", "a--b"),
    (" x ", "-x-"),
    ("Привет non-latin 你好", "привет-non-latin-你好"),
    ("snake_case and kebab-case", "snake_case-and-kebab-case"),
    ("😄 emoji", "-emoji"),
]


@pytest.mark.parametrize(("heading", "slug"), GITHUB)
def test_a_heading_gets_the_id_github_gives_it(heading: str, slug: str) -> None:
    assert Slugger().slug(heading) == slug


def test_repeated_headings_are_numbered_as_github_numbers_them() -> None:
    slugs = Slugger()
    assert [slugs.slug(t) for t in ("foo", "foo", "bar", "foo", "foo-1")] == [
        "foo",
        "foo-1",
        "bar",
        "foo-2",
        "foo-1-1",
    ]
    assert heading_text(r"The *Moon*, \[Europa\] and [Titan](https://x.test/) `now`") == (
        "The Moon, [Europa] and Titan now"
    )


def test_a_long_section_title_is_linked_by_its_whole_id() -> None:
    # Ids cut at 40 characters were dead links outside sleuth's own HTML.
    title = "How the Federal Reserve's rate decisions moved bond markets in 2019"
    lines = _with_contents(
        "# Research: q", [(title, "Body.")], labels_for("en"), lead=[("Answer", "- A. [1]")]
    )
    slug = Slugger().slug(heading_text(title))
    assert len(slug) > 40 and f"](#{slug})" in "\n".join(lines)


def options(web: OfflineWeb, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 5,
        "home": str(tmp_path / "home"),
        "mode": "deep",
        **extra,
    }


def markdown_headings(markdown: str) -> list[tuple[int, str, str]]:
    """(level, plain text, GitHub id) of every heading, in order."""
    slugs = Slugger()
    found = []
    for match in re.finditer(r"^(#{1,6}) (.+)$", markdown, re.MULTILINE):
        text = heading_text(match.group(2))
        found.append((len(match.group(1)), text, slugs.slug(text)))
    return found


def contents_links(markdown: str) -> list[tuple[int, str, str]]:
    """(indent, text, target) of each contents entry."""
    contents = markdown.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    return [
        (len(m.group(1)), m.group(2), m.group(3))
        for m in re.finditer(r"^( *)(?:\d+\.|-) \[(.+)\]\(#(.+)\)$", contents, re.MULTILINE)
    ]


def first_citations(markdown: str) -> list[int]:
    body = re.split(r"^## Sources", markdown, maxsplit=1, flags=re.MULTILINE)[0]
    order: list[int] = []
    for n in re.findall(r"(?<!\\)\[(\d+)\]", body):
        if int(n) not in order:
            order.append(int(n))
    return order


def check_anchors(report: Report) -> list[tuple[int, str, str]]:
    """Every contents link goes to a heading's GitHub id, in the Markdown and in the HTML."""
    links = contents_links(report.markdown)
    ids = {slug for _, _, slug in markdown_headings(report.markdown)}
    assert links and all(target in ids for _, _, target in links), (links, ids)
    html = render_fragment(report)
    html_ids = set(re.findall(r'<h[1-6][^>]* id="([^"]+)"', html))
    assert all(target in html_ids for _, _, target in links), (links, html_ids)
    for _, _, target in links:
        assert f'href="#{target}"' in html
    return links


def test_a_deep_report_without_a_model_links_its_follow_ups(tmp_path: Path) -> None:
    # A two-hop question over notes: the follow-up "Ilsa Varenne" finds the answer's page.
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in BRIDGE_DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    report = sleuth.research_sync(
        BRIDGE_QUESTION,
        mode="deep",
        docs=str(folder),
        no_llm=True,
        top_wait=3.0,
        breadth=2,
        levels=2,
        max_sources=6,
        home=str(tmp_path / "home"),
    )
    links = check_anchors(report)
    subsections = [text for indent, text, _ in links if indent]
    follow_ups = [n.question for n in report.tree or [] if n.level == 2 and n.sources]
    assert follow_ups and len(subsections) == len(follow_ups)
    order = first_citations(report.markdown)
    assert order == list(range(1, len(order) + 1)), order


def test_a_deep_report_by_a_model_cites_in_reading_order(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    ScriptedResearcher().install(llm)
    report = sleuth.research_sync(
        web.topics[3].question,
        **options(web, tmp_path, base_url=web.llm_url, model="scripted-model", breadth=2, levels=2),
    )
    assert report.writer == "llm"
    check_anchors(report)
    order = first_citations(report.markdown)
    assert len(order) >= 3 and order == list(range(1, len(order) + 1)), order
    # Every number still names the page it named: sources, sections, tree and claims.
    ids = {s.id for s in report.sources}
    assert [s.id for s in report.sources] == list(range(1, len(ids) + 1))
    assert {n for s in report.sections or [] for n in s.sources} <= ids
    assert {n for node in report.tree or [] for n in node.sources} <= ids
    by_id = {s.id: s.url for s in report.sources}
    claims = [c for c in report.claims or [] if c.support]
    assert claims
    with Store(tmp_path / "home") as store:
        for claim in claims:
            for support in claim.support:
                page = store.get_page(canonicalize(by_id[support.source]))
                assert page is not None and page.text
                assert " ".join(support.quote.split()) in " ".join(page.text.split()), claim
