"""The pictures of a run, in a real Chromium: the HTML report's timing waterfall and its
citations' quotes, and the web page showing every run live.

Screenshots go to ``SLEUTH_SCREENSHOT_DIR`` (else the test's own folder); they are kept
to be looked at, never compared.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_web_page import (
    CHROMIUM_ARGS,
    chromium_path,
    screenshot_dir,
    serve_env,
    served_url,
)

import sleuth
from sleuth.models import Report
from sleuth.report.html import render_html
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import ScriptedResearcher
from sleuth.urls import canonicalize

pytestmark = pytest.mark.slow

MODEL = "scripted-model"
KIND_CLASS = {"search": "s", "download": "d", "extract": "e", "llm": ""}


def normal(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium installed (apt-get install chromium, or set SLEUTH_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def model_run(web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path) -> Report:
    """A run with the scripted model, stored under ``tmp_path / "home"`` (made before the
    browser starts: Playwright's sync API holds an event loop in this thread)."""
    ScriptedResearcher().install(llm)
    home = tmp_path / "home"
    return sleuth.research_sync(
        web.topics[0].question,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=2,
        base_url=web.llm_url,
        model=MODEL,
        max_sources=5,
        home=str(home),
    )


def bars_by_kind(page: Any, scope: str) -> Counter[str]:
    """The waterfall's bars (not its legend nor its axis) by kind class."""
    classes = page.eval_on_selector_all(
        f"{scope} .wf p:not(.a) i", "els => els.map(e => e.className)"
    )
    return Counter(
        next((k for k, c in KIND_CLASS.items() if c and c in cls.split()), "llm") for cls in classes
    )


def test_the_report_draws_its_timeline_and_quotes_its_sources(
    model_run: Report, browser: Any, tmp_path: Path
) -> None:
    home, report = tmp_path / "home", model_run
    line = report.timeline
    assert line is not None and line.critical
    path = tmp_path / "report.html"
    path.write_text(render_html(report), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(path.as_uri())
    assert asked == [path.as_uri()], "the report loads nothing"

    # The timeline opens on click: one bar per recorded request, of its kind.
    assert not page.locator("details.timeline").evaluate("d => d.open")
    page.click("details.timeline > summary")
    assert page.locator("details.timeline").evaluate("d => d.open")
    assert bars_by_kind(page, "article") == Counter(s.kind for s in line.spans)
    assert page.locator("article .wf p:not(.a) i.c").count() == len(line.critical)
    # Every page's row says what became of it: a source, left out, failed, not waited for.
    tags = page.eval_on_selector_all("article .wf em", "els => els.map(e => e.textContent)")
    assert sorted(t for t in tags if t.startswith("source")) == sorted(
        f"source {s.id}" for s in report.sources
    )
    # Hovering a bar shows what it was: for a download its status, size and time.
    download = page.locator("article .wf p:not(.a) i.d:not(.f)").first
    download.hover()
    shown = download.evaluate("e => getComputedStyle(e, '::after').content")
    assert re.search(r"download · HTTP 200 · [\d.,]+ kB · \d+\.\d\d s", shown), shown
    failed = page.locator("article .wf p:not(.a) i.f").first
    assert "failed: " in failed.get_attribute("data-i")
    page.locator("details.timeline").screenshot(path=str(screenshot_dir(tmp_path) / "timeline.png"))

    # A citation shows, on click, the words of its source that back the sentence.
    cites = page.locator("article a.cite[aria-describedby]")
    assert cites.count() >= 4
    by_id = {s.id: s.url for s in report.sources}
    for i in range(cites.count()):
        page.mouse.click(2, 2)  # elsewhere: the quote shown by the last click closes
        cite = cites.nth(i)
        assert page.locator("#" + cite.get_attribute("aria-describedby")).is_hidden()
        cite.click()
        popover = page.locator("#" + cite.get_attribute("aria-describedby"))
        assert popover.is_visible()
        quote = popover.locator("q").inner_text()
        with Store(home) as store:
            stored = store.get_page(canonicalize(by_id[int(cite.inner_text())]))
        assert stored is not None and normal(quote) in normal(stored.text), quote
    page.screenshot(path=str(screenshot_dir(tmp_path) / "report-quote.png"), full_page=True)
    page.close()


@pytest.fixture
def served_with_model(web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path) -> Iterator[str]:
    ScriptedResearcher().install(llm)
    env = serve_env(web, tmp_path)
    del env["SLEUTH_NO_LLM"]
    env.update(SLEUTH_BASE_URL=web.llm_url, SLEUTH_MODEL=MODEL, SLEUTH_TOP_WAIT="0")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "serve", "--port", "0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield served_url(proc)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_the_page_shows_a_run_started_elsewhere_live_with_its_timeline(
    web: OfflineWeb, served_with_model: str, browser: Any, tmp_path: Path
) -> None:
    """A run started by a script (POST /api/runs) while the page is open: the page shows
    it going, its waterfall growing, knows the Research button must wait, and ends with
    the run's timeline (critical path marked) and its report."""
    url = served_with_model
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else 0)
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")
    assert page.locator("#ui-live").is_hidden()
    with httpx.Client(base_url=url, trust_env=False, timeout=30) as client:
        started = client.post(
            "/api/runs", json={"question": web.topics[0].question, "max_sources": "5"}
        )
        assert started.status_code == 201
        # A bad request during the run is told what is wrong with it, not to wait.
        bad = client.post("/api/runs", json={"question": "ok", "depth": "9"})
        assert bad.status_code == 400 and "--depth" in bad.json()["error"]
        busy = client.post("/api/runs", json={"question": "another question"})
        assert busy.status_code == 409
    page.wait_for_selector("#ui-wf [data-group] i")  # the waterfall grows as it goes
    assert page.locator("#ui-go").is_disabled()
    assert "Running" in page.inner_text("#ui-go")
    assert page.inner_text("#ui-asked") == web.topics[0].question
    page.wait_for_selector("#ui-wf [data-group='Pages'] i", timeout=60_000)
    page.screenshot(path=str(screenshot_dir(tmp_path) / "serve-live.png"))
    page.wait_for_selector("#ui-report article.sleuth-report", timeout=120_000)
    page.wait_for_selector("#ui-go:not([disabled])")
    run_id = page.get_attribute("#ui-permalink", "href").split("=", 1)[1]
    with Store(tmp_path / "home") as store:
        info = store.get_run(run_id)
    line = Report.model_validate(info.report).timeline
    assert line is not None
    # The finished timeline: every request, its critical path marked; one copy only.
    assert bars_by_kind(page, "#ui-timeline") == Counter(s.kind for s in line.spans)
    assert page.locator("#ui-timeline .wf p:not(.a) i.c").count() == len(line.critical)
    assert page.locator(".wf").count() == 1
    bar = page.locator("#ui-timeline .wf p:not(.a) i").first
    assert float(bar.evaluate("e => e.getBoundingClientRect().width")) > 0  # placed by the CSSOM
    # A citation's quote, on the page too.
    cite = page.locator("#ui-report a.cite[aria-describedby]").first
    cite.click()
    assert page.locator("#" + cite.get_attribute("aria-describedby")).is_visible()
    page.screenshot(path=str(screenshot_dir(tmp_path) / "serve-done.png"), full_page=True)
    assert not errors, errors
    page.close()


def test_history_shows_a_stored_run_with_its_timeline(
    model_run: Report, served_with_model: str, browser: Any
) -> None:
    report = model_run
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else 0)
    page.goto(f"{served_with_model}?run={report.run_id}")
    page.wait_for_selector("body[data-ready='1']")
    page.click("#ui-report details.timeline > summary")
    assert report.timeline is not None
    assert bars_by_kind(page, "#ui-report") == Counter(s.kind for s in report.timeline.spans)
    widths = page.eval_on_selector_all(
        "#ui-report .wf p:not(.a) i", "els => els.map(e => e.getBoundingClientRect().width)"
    )
    assert all(w >= 1 for w in widths)
    assert not errors, errors  # no style attribute the page's CSP had to refuse
    page.close()
