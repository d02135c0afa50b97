"""The pictures of a run, measured: ``python -m bench.pictures``.

For each timing question of a set (``--set heavy``, the tune set; ``heldout`` to judge;
``test --final`` once, for the figures),
one research with the scripted model (depth 2, 5 sources) against the benchmark world at
its latencies, then:

* **size**: the HTML report's bytes, and those of the same report rendered by the
  renderer of commit ``db0aefc`` (the last before timelines and quotes, read from the
  git history: the bench runs in a clone), so the ratio is those features' own cost;
  and what the timeline costs (the report's bytes less the same report's without it);
* **spans**: of the spans backing the report's kept claims, how many are found word for
  word (whitespace aside) in the text the run's store keeps of their source;
* **open**: Chromium opening the file (navigation start to the load event), then opening
  its timeline (a click to the next frame), median of ``--repeat`` loads;
* **live** (``--live``): the same question on ``sleuth serve`` (in this process) with a
  page following it: for every request of the run, the time from the server telling its
  start to its bar appearing on the page (wall clocks of one machine).

Timings depend on the machine's load; say so with the figures. Needs the benchmark data
(``../shared/data``) and Chromium (``SLEUTH_CHROMIUM`` or ``chromium`` on the PATH).
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # python bench/pictures.py
    sys.path.insert(0, str(REPO))

from bench.client import world  # noqa: E402
from bench.splits import refuse_test  # noqa: E402
from bench.topics import split_questions, timing_questions  # noqa: E402

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
]


def chromium() -> str:
    import os

    found = os.environ.get("SLEUTH_CHROMIUM") or shutil.which("chromium")
    if not found:
        raise SystemExit("bench.pictures needs Chromium: set SLEUTH_CHROMIUM")
    return found


#: The commit whose renderer is "before the pictures" (issue 37's size baseline).
BEFORE_PICTURES = "db0aefc"


@functools.cache
def _render_before() -> Callable[[Any], str]:
    """``render_html`` as commit :data:`BEFORE_PICTURES` wrote it, loaded from git."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BEFORE_PICTURES}:sleuth/report/html.py"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(
            f"bench.pictures needs the git history (commit {BEFORE_PICTURES}): {exc}"
        ) from exc
    module = types.ModuleType(f"html_{BEFORE_PICTURES}")
    exec(compile(source, f"{BEFORE_PICTURES}:sleuth/report/html.py", "exec"), module.__dict__)
    render: Callable[[Any], str] = module.render_html
    return render


def sizes(report: Any) -> dict[str, int]:
    """The report's HTML bytes now and before the pictures (same report), and the timeline's."""
    from sleuth.report.html import render_html

    now = len(render_html(report).encode())
    before = len(_render_before()(report).encode())
    untimed = len(render_html(report.model_copy(update={"timeline": None})).encode())
    return {"now": now, "before": before, "waterfall": now - untimed, "spans": _spans(report)}


def verbatim(report: Any, home: Path) -> tuple[int, int]:
    """Of the spans that back the report's kept claims, how many are found word for word
    (whitespace aside) in the text the store keeps of their source, and how many there are."""
    from sleuth.store import Store
    from sleuth.urls import canonicalize

    def normal(text: str) -> str:
        return " ".join(text.split())

    by_id = {s.id: s.url for s in report.sources}
    found = total = 0
    with Store(home) as store:
        for claim in report.claims or []:
            for support in claim.support if claim.verdict == "kept" else ():
                total += 1
                page = store.get_page(canonicalize(by_id[support.source]))
                found += page is not None and normal(support.quote) in normal(page.text)
    return found, total


def _spans(report: Any) -> int:
    return len(report.timeline.spans) if report.timeline is not None else 0


def open_times(browser: Any, path: Path, repeat: int) -> tuple[float, float]:
    """Median ms from navigation start to the load event, and to the timeline drawn open."""
    loads, opens = [], []
    for _ in range(repeat):
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(path.as_uri())
        loads.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
        opens.append(
            page.evaluate(
                """() => new Promise((done) => {
                    const t0 = performance.now();
                    document.querySelector('details.timeline > summary').click();
                    requestAnimationFrame(() => requestAnimationFrame(
                        () => done(performance.now() - t0)));
                })"""
            )
        )
        page.close()
    return statistics.median(loads), statistics.median(opens)


def live_lags(browser: Any, question: str, settings: Any) -> list[float]:
    """For every request of a run on the page: ms from the server telling its start to
    its bar appearing on the page."""
    import asyncio

    import uvicorn

    from sleuth.web import app as web_app

    told: dict[int, float] = {}
    tell = web_app.LiveRun.on_event

    def stamped(run: Any, event: Any) -> None:
        if event.kind == "span" and "end" not in event.data:
            told.setdefault(int(event.data["id"]), time.time() * 1000)
        tell(run, event)

    web_app.LiveRun.on_event = stamped  # type: ignore[method-assign]
    server = uvicorn.Server(
        uvicorn.Config(web_app.create_app(settings), host="127.0.0.1", port=0, log_level="error")
    )
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        page = browser.new_page(bypass_csp=True)
        page.add_init_script(
            """new MutationObserver((changes) => {
                 window.seen = window.seen || {};
                 for (const c of changes) for (const n of c.addedNodes)
                   if (n.tagName === 'I' && n.dataset.id && !(n.dataset.id in window.seen))
                     window.seen[n.dataset.id] = Date.now();
               }).observe(document, {childList: true, subtree: true});"""
        )
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector("body[data-ready='1']")
        page.fill("#ui-question", question)
        page.click("#ui-go")
        page.wait_for_selector("#ui-report article.sleuth-report", timeout=300_000)
        seen = page.evaluate("window.seen || {}")
        page.close()
    finally:
        web_app.LiveRun.on_event = tell  # type: ignore[method-assign]
        server.should_exit = True
        thread.join(10)
    return [seen[str(i)] - at for i, at in told.items() if str(i) in seen]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pictures", description=__doc__)
    parser.add_argument(
        "--set", default="heavy", help="timing questions: heavy (tune), heldout (dev), test"
    )
    parser.add_argument("--final", action="store_true", help="the test set may run (once)")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5, help="loads per report (open time)")
    parser.add_argument("--live", action="store_true", help="measure the live page too")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    import sleuth
    from sleuth.report.html import render_html
    from sleuth.settings import load_settings

    if args.set == "test":
        questions = split_questions(refuse_test("test", args.final))
    else:
        questions = timing_questions(args.set)
    rows: list[dict[str, Any]] = []
    folder = Path(tempfile.mkdtemp(prefix="sleuth-pictures-"))
    with world(args.seed) as w, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        for label, question in questions:
            # In a thread of its own: Playwright's sync API holds an event loop in this one.
            home = folder / f"{label}-home"  # a store of its own: the spans are checked in it
            options = w.options(llm=True, no_store=False, home=str(home))
            with ThreadPoolExecutor(1) as pool:
                report = pool.submit(sleuth.research_sync, question, **options).result()
            path = folder / f"{label}.html"
            path.write_text(render_html(report), encoding="utf-8")
            row: dict[str, Any] = {"label": label, **sizes(report)}
            row["spans_verbatim"], row["spans_total"] = verbatim(report, home)
            row["load_ms"], row["open_ms"] = open_times(browser, path, args.repeat)
            if args.live:
                settings = load_settings({**w.options(llm=True), "top_wait": 3}, env={})
                lags = live_lags(browser, question, settings)
                row["live_ms_median"] = statistics.median(lags) if lags else None
                row["live_ms_max"] = max(lags) if lags else None
                row["live_bars"] = len(lags)
            rows.append(row)
            print(json.dumps(row), flush=True)
        browser.close()
    shutil.rmtree(folder, ignore_errors=True)
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| question | requests | before B | now B | now / before | waterfall B | load ms "
        "| open ms | live ms (median, max) | claim spans verbatim |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        live = (
            f"{r['live_ms_median']:.0f}, {r['live_ms_max']:.0f}"
            if r.get("live_ms_median") is not None
            else "-"
        )
        lines.append(
            f"| {r['label']} | {r['spans']} | {r['before']:,} | {r['now']:,} | "
            f"{r['now'] / r['before']:.2f} | {r['waterfall']:,} | {r['load_ms']:.0f} | "
            f"{r['open_ms']:.0f} | {live} | "
            f"{r.get('spans_verbatim', '-')}/{r.get('spans_total', '-')} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
