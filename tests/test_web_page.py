"""``sleuth serve``: the API and its event stream in process, then the page in a real Chromium."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser import chromium, screenshot_dir, serve_env, served_url
from starlette.testclient import TestClient

from sleuth.cli import run
from sleuth.pipeline import quick
from sleuth.progress import Event
from sleuth.report.waterfall import REPORT_LOADER_HASH, WATERFALL_JS_HASH
from sleuth.settings import Settings, load_settings
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.web import is_loopback
from sleuth.web.app import MAX_BODY_BYTES, create_app


def offline_settings(web: OfflineWeb, home: Path, **extra: Any) -> Settings:
    return load_settings(
        {
            "search": "searxng",
            "searxng_url": web.searxng_url,
            "allow_private_urls": True,
            "timeout": 2,
            "top_wait": 0,
            "no_llm": True,
            "home": str(home),
            **extra,
        },
        env={},
    )


@pytest.fixture
def client(web: OfflineWeb, tmp_path: Path) -> Iterator[TestClient]:
    # One portal (event loop) for the whole test, so a started research keeps running.
    with TestClient(
        create_app(offline_settings(web, tmp_path)), base_url="http://127.0.0.1:8000"
    ) as test_client:
        yield test_client


def sse_messages(body: str) -> list[tuple[str, dict[str, Any]]]:
    messages = []
    for block in body.split("\n\n"):
        fields = dict(
            line.split(": ", 1)
            for line in block.splitlines()
            if ": " in line and not line.startswith(":")
        )
        if "event" in fields:
            messages.append((fields["event"], json.loads(fields["data"])))
    return messages


def test_a_research_streams_progress_then_the_report(client: TestClient, web: OfflineWeb) -> None:
    started = client.post(
        "/api/runs", json={"question": web.topics[0].question, "depth": "1", "max_sources": "3"}
    )
    assert started.status_code == 201
    events = sse_messages(client.get(started.json()["events"]).text)
    names = [name for name, _ in events]
    assert names[-2:] == ["report", "end"]
    kinds = [data["kind"] for name, data in events if name == "progress"]
    assert kinds.index("plan") < kinds.index("search") < kinds.index("fetched")
    report = events[-2][1]
    assert report["html"].startswith('<article class="sleuth-report">')
    assert 'href="#source-1"' in report["html"] and report["sources"] >= 1
    # The finished report can be downloaded as one HTML file or as Markdown.
    run_id = started.json()["id"]
    html = client.get(f"/api/runs/{run_id}/report.html")
    assert html.status_code == 200 and html.text.startswith("<!DOCTYPE html>")
    markdown = client.get(f"/api/runs/{run_id}/report.md")
    assert markdown.text.startswith("# Research:")
    # A page that reconnects replays only what it has not seen.
    again = client.get(started.json()["events"], headers={"Last-Event-ID": str(len(events) - 2)})
    assert [name for name, _ in sse_messages(again.text)] == ["report", "end"]


def test_one_research_at_a_time_and_stop(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def endless(question: str, **kwargs: Any) -> None:
        kwargs["on_event"](Event("plan", "1 queries", {"queries": [question]}))
        await asyncio.Event().wait()

    monkeypatch.setattr(quick, "research", endless)
    first = client.post("/api/runs", json={"question": "first question"})
    assert first.status_code == 201
    second = client.post("/api/runs", json={"question": "second question"})
    assert second.status_code == 409 and "already running" in second.json()["error"]
    assert client.post(f"/api/runs/{first.json()['id']}/stop").json() == {"stopped": True}
    events = sse_messages(client.get(first.json()["events"]).text)
    assert events[-2:] == [("failed", {"message": "stopped"}), ("end", {})]
    assert client.post("/api/runs", json={"question": "third question"}).status_code == 201


def test_a_bad_request_during_a_run_is_told_what_is_wrong(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """400 for what is wrong with the request itself, whether or not a run is going; 409
    only for a good one that must wait."""

    async def endless(question: str, **kwargs: Any) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(quick, "research", endless)
    first = client.post("/api/runs", json={"question": "first question"})
    assert first.status_code == 201
    for body, message in [
        ({"question": "  "}, "the question is empty"),
        ({"question": "ok", "depth": "9"}, "invalid value for --depth"),
        ({"question": "ok", "colour": "blue"}, "unknown field 'colour'"),
    ]:
        reply = client.post("/api/runs", json=body)
        assert reply.status_code == 400 and message in reply.json()["error"], body
    assert client.post("/api/runs", json={"question": "a good one"}).status_code == 409
    client.post(f"/api/runs/{first.json()['id']}/stop")


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"question": "  "}, 400, "the question is empty"),
        ({"question": "ok", "depth": "9"}, 400, "invalid value for --depth"),
        ({"question": "ok", "max_sources": "many"}, 400, "invalid value for --max-sources"),
        # Refused up front like the rest (it was accepted, and the run failed in the stream).
        ({"question": "ok", "search": "nope"}, 400, "unknown search provider 'nope'"),
        ({"question": "ok", "search": "nosuchengine,"}, 400, "unknown search provider"),
        ({"question": "ok", "search": "serper"}, 400, "needs SERPER_API_KEY"),
        ({"question": "ok", "search": "local"}, 400, "needs a documents folder"),
        ({"question": "ok", "colour": "blue"}, 400, "unknown field 'colour'"),
        ({"question": 42}, 400, "the question must be text"),
        (["not", "an", "object"], 400, "JSON object"),
    ],
)
def test_bad_input_is_one_line_error(
    client: TestClient, body: Any, status: int, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    reply = client.post("/api/runs", json=body)
    assert reply.status_code == status and message in reply.json()["error"]
    assert "\n" not in reply.json()["error"]
    assert client.get("/api/history").json().get("runs", []) == []  # no run was started


def test_other_hosts_and_origins_are_refused(client: TestClient) -> None:
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host.
    assert client.get("/api/config", headers={"Host": "evil.example:8000"}).status_code == 400
    cross = client.post(
        "/api/runs", json={"question": "q"}, headers={"Origin": "http://evil.example"}
    )
    assert cross.status_code == 403
    form = client.post(
        "/api/runs",
        content="question=q",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert form.status_code == 415
    page = client.get("/")
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.text)  # nothing external


def test_a_run_reading_a_page_that_decodes_to_a_lone_surrogate_streams_and_downloads(
    client: TestClient, web: OfflineWeb
) -> None:
    """The unicode_escape page (and its search snippet, which holds the escape): the
    events replay on every reconnect, and both downloads answer."""
    url = web.hostile["unicode_escape"]
    started = client.post(
        "/api/runs", json={"question": web.corpus.hostile["unicode_escape"].title, "depth": "1"}
    )
    assert started.status_code == 201
    for _ in range(2):  # the page reconnects: the whole stream again
        events = sse_messages(client.get(started.json()["events"]).text)
        assert [name for name, _ in events][-2:] == ["report", "end"]
        assert url in events[-2][1]["html"]
    run_id = started.json()["id"]
    html = client.get(f"/api/runs/{run_id}/report.html")
    assert html.status_code == 200 and url in html.text
    markdown = client.get(f"/api/runs/{run_id}/report.md")
    assert markdown.status_code == 200 and "\\ud800" in markdown.text


def test_every_response_says_nosniff_and_the_report_sends_its_csp(
    client: TestClient, web: OfflineWeb
) -> None:
    started = client.post(
        "/api/runs", json={"question": web.topics[0].question, "depth": "1", "max_sources": "2"}
    )
    client.get(started.json()["events"])  # to the end of the run
    run_id = started.json()["id"]
    answers = [
        client.get(path)
        for path in (
            "/",
            "/api/config",
            f"/api/runs/{run_id}/report.html",
            f"/api/runs/{run_id}/report.md",
            "/api/runs/nosuchrun/report.md",
            "/api/history",
        )
    ]
    answers.append(client.get("/api/config", headers={"Host": "evil.example"}))
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 404, 200, 400]
    assert all(a.headers["x-content-type-options"] == "nosniff" for a in answers)
    report = answers[2]
    csp = report.headers["content-security-policy"]
    # No script but sleuth's own timeline loader and drawer, allowed by their hashes.
    scripts = [d.strip() for d in csp.split(";") if d.strip().startswith("script-src")]
    assert csp.startswith("default-src 'none'") and scripts == [
        f"script-src '{REPORT_LOADER_HASH}' '{WATERFALL_JS_HASH}'"
    ]
    assert f'content="{csp}"' in report.text  # the same policy as the document's own


async def test_a_request_body_over_the_cap_is_refused_before_it_is_read(
    web: OfflineWeb, tmp_path: Path
) -> None:
    """413 for a body over 64 KiB: a declared length is refused unread, and a streamed
    body of 8 MiB is read no further than the cap."""
    app = create_app(offline_settings(web, tmp_path))
    chunk, chunks = b" " * 16 * 1024, 512
    pulled = 0

    async def endless_body() -> dict[str, Any]:
        nonlocal pulled
        pulled += 1
        return {"type": "http.request", "body": chunk, "more_body": pulled < chunks}

    async def post(headers: list[tuple[bytes, bytes]]) -> int:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/api/runs",
            "raw_path": b"/api/runs",
            "query_string": b"",
            "root_path": "",
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 5),
            "headers": [
                (b"host", b"127.0.0.1:8000"),
                (b"content-type", b"application/json"),
                *headers,
            ],
        }
        await app(scope, endless_body, send)
        return int(sent[0]["status"])

    assert await post([(b"content-length", str(200 * 1024 * 1024).encode())]) == 413
    assert pulled == 0
    assert await post([(b"transfer-encoding", b"chunked")]) == 413
    assert pulled == MAX_BODY_BYTES // len(chunk) + 1  # 80 KiB of the 8 MiB


def test_past_runs_come_from_the_run_store(web: OfflineWeb, tmp_path: Path) -> None:
    from sleuth.pipeline.quick import research_sync

    report = research_sync(
        web.topics[0].question, settings=offline_settings(web, tmp_path, no_store=True)
    )
    with Store(tmp_path) as store:
        run_id = store.create_run("stored question", {"depth": 2})
        store.finish_run(
            run_id, "done", report.to_json_dict(), {"sources": len(report.sources), "tokens": 0}
        )
        failed_id = store.create_run("a run that failed", {})
        store.finish_run(failed_id, "failed")
    with TestClient(
        create_app(offline_settings(web, tmp_path)), base_url="http://127.0.0.1:8000"
    ) as client:
        listed = client.get("/api/history").json()
        assert listed["enabled"] is True
        runs = {entry["id"]: entry for entry in listed["runs"]}
        assert runs[run_id]["question"] == "stored question"
        assert runs[run_id]["sources"] == len(report.sources)
        shown = client.get(f"/api/history/{run_id}").json()
        assert 'href="#source-1"' in shown["html"] and 'id="source-1"' in shown["html"]
        missing = client.get(f"/api/history/{failed_id}")
        assert missing.status_code == 404 and "no report" in missing.json()["error"]
        assert client.get("/api/history/zzzzzz").status_code == 404
    off = create_app(offline_settings(web, tmp_path, no_store=True))
    with TestClient(off, base_url="http://127.0.0.1:8000") as client:
        listed = client.get("/api/history").json()
        assert listed == {"enabled": False, "runs": [], "note": "the run store is off (--no-store)"}


def test_serve_refuses_a_busy_port_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert run(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"sleuth: error: cannot listen on 127.0.0.1:{port}") and err.count("\n") == 1
    )


@pytest.mark.slow
def test_an_explicit_loopback_host_answers_requests_addressed_to_it(
    web: OfflineWeb, tmp_path: Path
) -> None:
    """``--host 127.0.0.2``: requests for 127.0.0.2 are answered, other names still not."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "serve", "--host", "127.0.0.2", "--port", "0"],
        env=serve_env(web, tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(proc)
        assert url.startswith("http://127.0.0.2:")
        with httpx.Client(trust_env=False, timeout=30) as plain:
            assert plain.get(url + "api/config").status_code == 200
            assert plain.get(url).status_code == 200
            evil = plain.get(url + "api/config", headers={"Host": "evil.example"})
            assert evil.status_code == 400
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_loopback_names() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.2", "::", "example.com"))


# ------------------------------------------------------------------ the page in Chromium


@pytest.fixture
def served(web: OfflineWeb, tmp_path: Path) -> Iterator[str]:
    """``sleuth serve --port 0`` in a subprocess."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "serve", "--port", "0"],
        env=serve_env(web, tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(proc)
        assert url.startswith("http://127.0.0.1:")  # loopback unless --host says otherwise
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.slow
def test_the_page_shows_a_research_live_in_chromium(
    served: str, web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    question = web.topics[0].question
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else 0)
        page.goto(served)
        page.wait_for_selector("body[data-ready='1']")
        # The options that matter, filled in from the server's settings.
        assert page.locator("#ui-depth option").count() == 3
        assert page.input_value("#ui-search") == "searxng"
        assert page.input_value("#ui-sources") == "5"
        assert page.locator("#ui-model").is_visible()

        page.fill("#ui-question", question)
        started = time.monotonic()
        page.click("#ui-go")
        page.wait_for_selector("#ui-log li")  # progress appears while the run goes on
        page.wait_for_selector("#ui-report article.sleuth-report", timeout=60_000)
        wall_s = time.monotonic() - started
        first_report_ms = int(page.evaluate("document.body.dataset.firstReportMs"))

        log = page.inner_text("#ui-log")
        assert "plan" in log and "search" in log and "fetched" in log
        assert int(page.inner_text("#ui-c-queries")) >= 1
        assert int(page.inner_text("#ui-c-hits")) >= 1
        read = int(page.inner_text("#ui-c-fetched"))
        cited = page.locator("#ui-report ol.sources li").count()
        assert read >= cited >= 1
        assert "Report ready" in page.inner_text("#ui-status")
        assert (
            page.locator(
                "#ui-report .badge.conf-high, #ui-report .badge.conf-medium, "
                "#ui-report .badge.conf-low"
            ).count()
            == 1
        )
        assert page.locator("#ui-report h2#gaps").count() == 1

        # A citation marker jumps to its source entry (one with a quote shows it first;
        # its popover's link goes on).
        page.locator("#ui-report a.cite[href='#source-1']").first.click()
        page.wait_for_function("() => location.hash === '#source-1'")
        target = page.evaluate("""() => {
            const el = document.getElementById('source-1');
            const box = el.getBoundingClientRect();
            return {target: el.matches(':target'), top: box.top, bottom: box.bottom,
                    height: window.innerHeight};
        }""")
        assert target["target"]
        assert target["top"] >= 0 and target["bottom"] <= target["height"], target

        # The run was stored, and the past-runs list shows it.
        page.wait_for_selector(f"#ui-runs li:has-text({json.dumps(question[:40])})")
        # The report and the past run have an address (?run=ID) that, bookmarked or
        # shared, opens the report again.
        permalink = page.get_attribute("#ui-permalink", "href") or ""
        assert permalink.startswith("?run=") and len(permalink) >= 13, permalink
        assert page.locator("#ui-runs li a").first.get_attribute("href") == permalink
        again = browser.new_page()
        again.goto(served + permalink)
        again.wait_for_selector("body[data-ready='1']")
        assert again.locator("#ui-report ol.sources li").count() == cited
        assert question in again.title()
        again.locator("#ui-report a.cite[href='#source-1']").first.click()  # still jump
        again.wait_for_function("() => location.hash === '#source-1'")
        assert again.url == f"{served}{permalink}#source-1"
        again.goto(f"{served}?run=nosuchrun")
        again.wait_for_selector("body[data-ready='1']")
        assert "no run" in again.inner_text("#ui-report").lower()
        again.close()
        path = screenshot_dir(tmp_path) / "sleuth-serve.png"
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 10_000
        assert not errors, errors
    with capsys.disabled():
        print(
            f"\nscreenshot: {path}\nfirst report shown {first_report_ms} ms after submit "
            f"(test clock {wall_s:.2f} s)"
        )


def test_the_form_as_shown_changes_nothing(web: OfflineWeb, tmp_path: Path) -> None:
    """Sending the defaults back must not make them explicit (--docs keeps to local files)."""
    from sleuth.web.app import run_settings

    base = load_settings({"docs": str(tmp_path), "no_llm": True}, env={})
    same = run_settings(
        base,
        {"depth": "2", "max_sources": "5", "search": "duckduckgo", "model": "", "mode": "quick"},
    )
    assert same.model_fields_set == base.model_fields_set
    chosen = run_settings(base, {"depth": "3", "search": "searxng, duckduckgo", "model": "m"})
    assert (chosen.depth, chosen.search, chosen.model) == (3, ["searxng", "duckduckgo"], "m")
    assert {"depth", "search", "model"} <= chosen.model_fields_set


@pytest.mark.slow
def test_the_warm_up_loads_what_the_first_research_would_wait_for() -> None:
    """`sleuth serve` loads extraction and passage ranking before the first question."""
    code = (
        "import sys\nfrom sleuth.web import _warm_up\n_warm_up()\n"
        "print(' '.join(m for m in ('trafilatura', 'lxml', 'bm25s') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["trafilatura", "lxml", "bm25s"]


@pytest.mark.slow
def test_the_page_counts_tokens_and_cost_with_a_model(web: OfflineWeb, tmp_path: Path) -> None:
    """The live counters the CLI's bar shows are on the page too, the cost included."""
    from sleuth.testing.llm import ScriptedLLM
    from sleuth.testing.researcher import ScriptedResearcher

    previous, web.llm = web.llm, ScriptedLLM(models=["gpt-4o-mini"])
    ScriptedResearcher().install(web.llm)
    env = serve_env(web, tmp_path)
    del env["SLEUTH_NO_LLM"]
    env.update(SLEUTH_BASE_URL=web.llm_url, SLEUTH_MODEL="gpt-4o-mini")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "serve", "--port", "0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(proc)
        with chromium() as browser:
            page = browser.new_page()
            page.goto(url)
            page.wait_for_selector("body[data-ready='1']")
            page.fill("#ui-question", web.topics[0].question)
            page.click("#ui-go")
            page.wait_for_selector("#ui-report article.sleuth-report", timeout=60_000)
            tokens = int(page.inner_text("#ui-c-tokens").replace(",", ""))
            label = page.inner_text("#ui-c-tokens-label")
    finally:
        web.llm = previous
        proc.terminate()
        proc.wait(timeout=20)
    assert tokens > 0
    assert re.fullmatch(r"tokens · \$0\.\d{4}", label, re.IGNORECASE), label
