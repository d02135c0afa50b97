"""Stages 5 and 6: passage selection and the report's shape."""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from sleuth.models import Failure, Quality, Report, SearchHit, Source, Stats
from sleuth.report.html import render_fragment
from sleuth.stages.rank import rank
from sleuth.stages.read import best_passages, split_passages
from sleuth.stages.write import confidence, render_markdown

PAGE = "\n".join(
    [
        "Welcome to our site. Subscribe to the newsletter for weekly updates about everything.",
        "Our company was founded in 1999 and has offices in several countries around the world.",
        "The authorization code flow exchanges a short-lived code for an access token at the "
        "token endpoint, after the user approves the client at the authorization server.",
        "Cookies help us improve your experience; by continuing you accept our cookie "
        "policy today.",
        "PKCE protects the authorization code flow for public clients by binding the code to a "
        "verifier that only the client knows, so an intercepted code is useless.",
        "Follow us on social media and share this page with your friends and family members.",
    ]
)


def source(n: int, quality: Quality = Quality.UNVERIFIED, score: int = 2) -> Source:
    return Source(
        id=n,
        url=f"https://s{n}.example/",
        title=f"Title {n}",
        quality=quality,
        quality_score=score,
        score=1.0,
        passages=[f"passage {n}"],
    )


def test_passages_are_the_relevant_ones_in_page_order() -> None:
    chosen = best_passages(PAGE, ["authorization code flow", "PKCE access token"], 2)
    assert len(chosen) == 2
    assert chosen[0].startswith("The authorization code flow")
    assert chosen[1].startswith("PKCE protects")


# Runs in a fresh interpreter: which modules a process loads is the thing under test.
_READ_IN_A_FRESH_PROCESS = """
import json, sys
from sleuth.stages.read import best_passages
chosen = best_passages(sys.argv[1], ["authorization code flow", "PKCE access token"], 2)
print(json.dumps({"chosen": chosen, "modules": sorted(m for m in sys.modules
                                                      if m.split(".")[0] in ("scipy", "bm25s"))}))
"""


def test_reading_never_loads_scipy_even_where_it_is_installed(tmp_path: Path) -> None:
    """bm25s would load scipy.sparse (~10 MB) just for being installed; sleuth reads without."""
    fake = tmp_path / "scipy"
    fake.mkdir()
    # A scipy that cannot be loaded unnoticed: importing it at all fails the run.
    (fake / "__init__.py").write_text("raise SystemExit('scipy was imported')\n")
    (fake / "sparse.py").write_text("raise SystemExit('scipy.sparse was imported')\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    done = subprocess.run(
        [sys.executable, "-c", _READ_IN_A_FRESH_PROCESS, PAGE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [p[:12] for p in result["chosen"]] == ["The authoriz", "PKCE protect"]
    assert "bm25s" in result["modules"]
    assert not [m for m in result["modules"] if m.startswith("scipy")]


# Eight threads read their first page at the same moment, in a fresh interpreter.
_READ_IN_EIGHT_THREADS = """
import sys, threading
from sleuth.stages.read import best_passages
start, errors = threading.Barrier(8), []
def read():
    start.wait()
    try:
        best_passages(sys.argv[1], ["authorization code flow"], 1)
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=read) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(errors)
"""


def test_pages_first_read_in_several_threads_at_once_all_get_their_passages() -> None:
    """The first page read loads bm25s: the others wait for it, never take it half-loaded
    (the CLI died with 'partially initialized module bm25s' when two pages raced)."""
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", _READ_IN_EIGHT_THREADS, PAGE],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "[]"


def test_unrelated_questions_fall_back_to_the_opening() -> None:
    chosen = best_passages(PAGE, ["zeppelin"], 1)
    assert chosen == [split_passages(PAGE)[0]]


def test_long_paragraphs_are_cut_at_sentences() -> None:
    long = " ".join(f"Sentence number {i} talks about tokens." for i in range(200))
    parts = split_passages(long)
    assert len(parts) > 5 and all(len(p) <= 600 for p in parts)
    assert all(p.endswith(".") for p in parts[:-1])


def test_a_short_line_never_costs_the_next_paragraph_its_end() -> None:
    paragraph = "Tokens expire after an hour. " * 19 + "The refresh token lasts a week."
    parts = split_passages(f"Updated today at noon.\n{paragraph}")  # 605 characters
    assert parts == ["Updated today at noon.", " ".join(paragraph.split())]


def test_confidence_follows_grip_counting_only_read_sources() -> None:
    assert confidence([])[0] == "LOW"
    assert confidence([source(1, Quality.PRIMARY, 5)])[0] == "MEDIUM"
    assert confidence([source(1)])[0] == "LOW"
    assert confidence([source(1), source(2)])[0] == "MEDIUM"
    three_primary = [source(i, Quality.PRIMARY, 4) for i in (1, 2, 3)]
    assert confidence(three_primary)[0] == "HIGH"
    assert confidence([source(1), source(2), source(3)])[0] == "MEDIUM"


def test_report_sections_and_citations() -> None:
    sources = [source(1, Quality.PRIMARY, 5), source(2)]
    failures = [Failure(url="http://bad.example/", reason="HTTP 404")]
    md = render_markdown("What is X?", sources, failures, "MEDIUM", "2 sources read")
    assert md.startswith("# Research: What is X?\n")
    assert "## Key Findings" in md and "**[1] Title 1 (PRIMARY)**" in md
    assert "## Confidence: MEDIUM — 2 sources read" in md
    assert "[1] [PRIMARY] Title 1 — <https://s1.example/>" in md
    assert "[2] [UNVERIFIED] Title 2 — <https://s2.example/>" in md
    assert "- <http://bad.example/> — HTTP 404" in md.split("## Gaps")[1]


def test_page_text_cannot_inject_markdown_or_fake_citations() -> None:
    evil = Source(
        id=1,
        url="https://e.example/",
        title="**Bold** [9](javascript:alert(1))",
        quality=Quality.UNVERIFIED,
        quality_score=2,
        score=1.0,
        passages=["# Heading\n<script>alert(1)</script> see [12] and [citation needed]"],
    )
    md = render_markdown("q", [evil], [], "LOW", "r")
    findings = md.split("## Confidence")[0]
    assert "<script>" not in findings and "\\<script\\>" in findings
    assert "[12]" not in findings and "citation needed" not in findings
    assert "\\*\\*Bold\\*\\*" in findings and "\\[9\\]" in findings
    assert "\n# Heading" not in md


def test_ranking_passages_logs_no_debug_lines_to_an_app_that_logs_warnings() -> None:
    """bm25s sets its own logger to DEBUG when imported: an application that logs at the
    default level (``logging.basicConfig()``: warnings up) got a "Building index from
    tokens" line for every page read, and pytest showed them as captured logs."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    root, handler = logging.getLogger(), Keep()
    level = root.level
    root.setLevel(logging.WARNING)
    root.addHandler(handler)
    try:
        text = "\n\n".join(
            f"Paragraph {i} is about PKCE verifiers and tokens." * 5 for i in range(8)
        )
        assert best_passages(text, ["PKCE verifier"], 2)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert [r.getMessage() for r in records if r.levelno < logging.WARNING] == []


def test_a_source_names_every_provider_that_found_it_markdown_html_and_json() -> None:
    def hit(url: str, provider: str, query: str) -> SearchHit:
        return SearchHit(title="DPR", url=url, rank=1, provider=provider, query=query)

    paper = "https://arxiv.org/abs/2004.04906"
    candidates = rank(
        [
            hit(paper, "arxiv", "q1"),
            hit("https://news.example/a", "duckduckgo", "q1"),
            hit(paper, "duckduckgo", "q2"),
            hit(paper, "arxiv", "q2"),
        ]
    )
    assert {c.url: c.providers for c in candidates} == {
        paper: ["arxiv", "duckduckgo"],
        "https://news.example/a": ["duckduckgo"],
    }
    sources = [
        Source(
            id=1,
            url=paper,
            title="Dense Passage Retrieval",
            quality=Quality.PRIMARY,
            quality_score=4,
            score=1.0,
            passages=["Dense representations alone."],
            providers=["arxiv", "duckduckgo"],
        ),
        Source(
            id=2,
            url="https://agent.example/",
            title="Read by agent mode",
            quality=Quality.UNVERIFIED,
            quality_score=2,
            score=1.0,
            passages=["A page given by URL."],
        ),
    ]
    markdown = render_markdown("What is DPR?", sources, [], "MEDIUM", "2 sources")
    tail = markdown.split("## Sources", 1)[1]
    assert f"[1] [PRIMARY] Dense Passage Retrieval — <{paper}> (via arxiv, duckduckgo)  " in tail
    assert "[2] [UNVERIFIED] Read by agent mode — <https://agent.example/>  " in tail
    report = Report(
        topic="What is DPR?",
        depth=1,
        queries=["What is DPR?"],
        sources=sources,
        failures=[],
        confidence="MEDIUM",
        confidence_reason="2 sources",
        markdown=markdown,
        stats=Stats(),
    )
    assert '<span class="via">via arxiv, duckduckgo</span>' in render_fragment(report)
    assert json.loads(report.model_dump_json())["sources"][0]["providers"] == [
        "arxiv",
        "duckduckgo",
    ]
