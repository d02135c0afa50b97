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
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from browser import chromium, screenshot_dir, serve_env, served_url

import sleuth
from sleuth.models import Report
from sleuth.report.html import render_html
from sleuth.report.waterfall import KEY
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import ScriptedResearcher
from sleuth.urls import canonicalize

pytestmark = pytest.mark.slow

MODEL = "scripted-model"
T = TypeVar("T")
KIND_CLASS = {"search": "s", "download": "d", "extract": "e", "llm": ""}


def normal(text: str) -> str:
    return " ".join(text.split())


def words(text: str) -> str:
    return " " + " ".join(re.findall(r"\w+", text.lower())) + " "


def sentence_before(cite: Any) -> str:
    """The text of the sentence a citation marker ends (as the page shows it)."""
    before = cite.evaluate(
        """e => { const r = document.createRange(); r.setStart(e.closest('li, p'), 0);
                  r.setEndBefore(e.closest('.cw') || e); return r.toString(); }"""
    )
    before = re.sub(r"\[[\d\]\[ ]*$", "", before.rstrip()).rstrip(" [")
    # A sentence ends at its stop, or at the quotation mark or bracket closing after it.
    return re.split(r"(?<=[.!?])\s+|(?<=[.!?][\"”’')\]])\s+", before.strip())[-1]


def check_verbatim(page: Any, scope: str, home: Path, by_id: dict[int, str]) -> int:
    """Each marker whose sentence is its source's own words: it says so on hover, links to
    the source, and the sentence's words are in that source's stored text, in order."""
    verbatim = page.locator(f"{scope} a.cite.v")
    for i in range(verbatim.count()):
        cite = verbatim.nth(i)
        cite.focus()  # as a keyboard reaches it (a hover shows the same)
        said = cite.evaluate("e => getComputedStyle(e, '::after').content")
        assert "word for word" in said, said
        n = int(cite.inner_text())
        assert cite.get_attribute("href") == f"#source-{n}"
        with Store(home) as store:
            stored = store.get_page(canonicalize(by_id[n]))
        sentence = sentence_before(cite)
        assert stored is not None and words(sentence) in words(stored.text), sentence
    return int(verbatim.count())


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module; each test opens its own pages (each its own context)."""
    with chromium() as launched:
        yield launched


def in_thread(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` run in another thread: Playwright's sync API holds an
    event loop in this one while the browser is open, and a research starts its own."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(func, *args, **kwargs).result()


@pytest.fixture
def model_run(web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path) -> Report:
    """A run with the scripted model, stored under ``tmp_path / "home"``."""
    ScriptedResearcher().install(llm)
    home = tmp_path / "home"
    return in_thread(
        sleuth.research_sync,
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


def key_labels(page: Any, scope: str) -> list[str]:
    """The drawn timeline's key under ``scope``: what each sample bar means."""
    labels: list[str] = page.eval_on_selector_all(
        f"{scope} .wf .y > span", "els => els.map(e => e.textContent)"
    )
    return labels


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
    page.wait_for_selector(".wf[data-d='2']")  # drawn from its packed data
    assert bars_by_kind(page, "article") == Counter(s.kind for s in line.spans)
    assert page.locator("article .wf p:not(.a) i.c").count() == len(line.critical)
    assert key_labels(page, "article") == [label for _, label in KEY]
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

    # A citation shows, on click, the words of its source that back the sentence; one
    # whose sentence is the source's own words says so, and links to it.
    cites = page.locator("article a.cite[aria-describedby]")
    by_id = {s.id: s.url for s in report.sources}
    assert cites.count() + check_verbatim(page, "article", home, by_id) >= 4
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
    # A citation's quote, on the page too; a sentence that is its source's own words
    # says so instead (the scripted writer, given passages, often quotes them whole).
    quoted = page.locator("#ui-report a.cite[aria-describedby]")
    if quoted.count():
        quoted.first.click()
        assert page.locator("#" + quoted.first.get_attribute("aria-describedby")).is_visible()
    else:
        own = page.locator("#ui-report a.cite.v").first
        own.focus()
        assert "word for word" in own.evaluate("e => getComputedStyle(e, '::after').content")
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
    assert key_labels(page, "#ui-report") == [label for _, label in KEY]
    assert not errors, errors  # no style attribute the page's CSP had to refuse
    page.close()


# -- a deep research's tree of questions ---------------------------------------------------

STATUS_WORDS = {"done": "done", "empty": "nothing new", "failed": "failed", "skipped": "skipped"}


def deep_report(web: OfflineWeb, llm: ScriptedLLM, home: Path, model: bool) -> Report:
    extra: dict[str, Any] = {"base_url": web.llm_url, "model": MODEL} if model else {}
    if model:
        ScriptedResearcher().install(llm)
    return in_thread(
        sleuth.research_sync,
        web.topics[3].question,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=5,
        mode="deep",
        breadth=2,
        levels=2,
        max_sources=6,
        no_llm=not model,
        home=str(home),
        **extra,
    )


@pytest.fixture(params=["model", "no-model"])
def deep_run(request: Any, web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path) -> Report:
    """A deep research with the scripted model and one without."""
    return deep_report(web, llm, tmp_path / "home", request.param == "model")


def nodes_shown(page: Any, scope: str) -> dict[str, tuple[str, str]]:
    """Each node of the tree under ``scope``: its status and the status word it shows."""
    found = page.eval_on_selector_all(
        f"{scope} li[data-node]",
        "els => els.map(e => [e.dataset.node, e.dataset.status,"
        " e.querySelector(':scope > div > .st').textContent])",
    )
    return {node: (status, word) for node, status, word in found}


def test_the_deep_report_draws_its_tree_of_questions(
    deep_run: Report, browser: Any, tmp_path: Path
) -> None:
    report = deep_run
    assert report.tree and {n.level for n in report.tree} == {1, 2}
    path = tmp_path / "deep.html"
    path.write_text(render_html(report), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(path.as_uri())
    tree = page.locator("details.qtree")
    assert not tree.evaluate("d => d.open")
    page.click("details.qtree > summary")
    # One node per sub-question and follow-up, with its status; follow-ups under theirs.
    assert nodes_shown(page, "article .qtree") == {
        n.id: (n.status, STATUS_WORDS[n.status]) for n in report.tree
    }
    for node in report.tree:
        li = page.locator(f'article .qtree li[data-node="{node.id}"]')
        if node.parent:
            parent = li.evaluate("e => e.parentElement.closest('li').dataset.node")
            assert parent == node.parent
        # Its sources, linked to the Sources list; the section it fed, linked to it.
        cited = li.locator(":scope > div .m a[href^='#source-']").all_inner_texts()
        assert sorted(int(n) for n in cited) == sorted(node.sources)
        for href in li.locator(":scope > div .m a").evaluate_all("els => els.map(a => a.hash)"):
            assert page.locator(f'[id="{href[1:]}"]').count() == 1, href
        if node.sources:
            assert li.locator(":scope > div .m a:not([href^='#source-'])").count() >= 1
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        tree.screenshot(path=str(screenshot_dir(tmp_path) / f"tree-{scheme}.png"))
    page.close()


def test_the_answer_quotes_its_sources_on_click(
    web: OfflineWeb, browser: Any, tmp_path: Path
) -> None:
    """A report without a model: each citation of its Answer shows the words of that
    source which say it."""
    home = tmp_path / "home"
    report = in_thread(
        sleuth.research_sync,
        web.topics[0].question,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=5,
        no_llm=True,
        max_sources=5,
        home=str(home),
    )
    assert report.answer is not None and report.answer.sentences
    path = tmp_path / "answer.html"
    path.write_text(render_html(report), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(path.as_uri())
    cites = page.locator("h2#answer + ul a.cite[aria-describedby]")
    cited = sum(len(s.sources) for s in report.answer.sentences)
    by_id = {s.id: s.url for s in report.sources}
    # Each sentence is its first source's own words: that marker says so.
    verbatim = check_verbatim(page, "h2#answer + ul", home, by_id)
    assert verbatim == len(report.answer.sentences)
    assert verbatim + cites.count() <= cited
    for i in range(cites.count()):
        page.mouse.click(2, 2)
        cite = cites.nth(i)
        cite.click()
        popover = page.locator("#" + cite.get_attribute("aria-describedby"))
        assert popover.is_visible()
        quote = popover.locator("q").inner_text()
        with Store(home) as store:
            stored = store.get_page(canonicalize(by_id[int(cite.inner_text())]))
        assert stored is not None and normal(quote) in normal(stored.text), quote
    page.screenshot(path=str(screenshot_dir(tmp_path) / "answer-quote.png"))
    page.close()


@pytest.fixture
def served_deep(web: OfflineWeb, tmp_path: Path) -> Iterator[str]:
    env = serve_env(web, tmp_path)
    env.update(SLEUTH_BREADTH="2", SLEUTH_LEVELS="2", SLEUTH_TIMEOUT="5")
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


def test_the_page_grows_a_deep_research_tree_live(
    web: OfflineWeb, served_deep: str, browser: Any, tmp_path: Path
) -> None:
    url = served_deep
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else 0)
    # Each question's last status in the live tree, as the page drew it.
    page.add_init_script(
        """new MutationObserver((changes) => {
             window.live = window.live || {};
             for (const c of changes)
               if (c.target.closest && c.target.closest('#ui-tree') && c.target.dataset.node)
                 window.live[c.target.dataset.node] = c.target.dataset.status;
           }).observe(document, {attributes: true, subtree: true,
                                 attributeFilter: ['data-status']});"""
    )
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")
    with httpx.Client(base_url=url, trust_env=False, timeout=30) as client:
        started = client.post(
            "/api/runs",
            json={"question": web.topics[3].question, "mode": "deep", "max_sources": "6"},
        )
        assert started.status_code == 201
    page.wait_for_selector("#ui-tree li[data-node]")  # the tree grows as branches start
    page.screenshot(path=str(screenshot_dir(tmp_path) / "serve-tree-live.png"))
    page.wait_for_selector("#ui-report article.sleuth-report", timeout=120_000)
    run_id = page.get_attribute("#ui-permalink", "href").split("=", 1)[1]
    with Store(tmp_path / "home") as store:
        report = Report.model_validate(store.get_run(run_id).report)
    assert report.tree
    # The live tree ended with every question's own status; the report's own tree (its
    # sources linked) takes its place, where the user watched it grow.
    assert page.evaluate("window.live") == {n.id: n.status for n in report.tree}
    want = {n.id: (n.status, STATUS_WORDS[n.status]) for n in report.tree}
    assert nodes_shown(page, "#ui-tree") == want
    assert page.locator("#ui-report .qtree").count() == 0
    linked = page.locator("#ui-tree .m a[href^='#source-']").count()
    assert linked == sum(len(n.sources) for n in report.tree)
    page.screenshot(path=str(screenshot_dir(tmp_path) / "serve-tree-done.png"), full_page=True)
    assert not errors, errors
    page.close()
