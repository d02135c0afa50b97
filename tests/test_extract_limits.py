"""What one page's extraction may cost, and that a run's end takes its extraction with it.

A page under the byte cap can still be built to be costly to extract: 4.8 MB of
``<div>tide a</div>`` cost 33 s of CPU and 2.6 GB, and with ``--max-time`` the process
went on extracting long after its report (security issue 21, item 4). Pages are now read
up to their 30,000th element, in worker processes with a deadline and a memory limit,
and an extraction still running when the run ends is killed with its worker.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sleuth
from sleuth.extraction.workers import ExtractLimits, run_bounded, shutdown, start_pool
from sleuth.fetch import extract
from sleuth.models import Report
from sleuth.testing import OfflineWeb

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="RLIMIT_DATA and /proc are Linux's"
)
#: Far above what the floods need once cut (about 200 MB), far below what they took before.
RSS_BOUND_MB = 1000


@pytest.fixture
def web(full_web: OfflineWeb) -> OfflineWeb:
    """The offline web whose search finds the floods: this module's researches meet them."""
    return full_web


def research(web: OfflineWeb, case: str, **extra: Any) -> Report:
    """A research (no model) whose question is the case's own title: it ranks first."""
    options: dict[str, Any] = {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 10.0,
        "depth": 1,
        "max_sources": 20,
        "no_store": True,
        **extra,
    }
    return sleuth.research_sync(web.corpus.hostile[case].title, **options)


def gap_reason(report: Report, url: str) -> str | None:
    return {f.url: f.reason for f in report.failures}.get(url)


def eventually(check: Callable[[], bool], seconds: float = 60.0) -> bool:
    """Whether ``check`` holds within ``seconds`` (a bound for a slow machine, not a timing)."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_page_is_read_up_to_its_element_limit() -> None:
    page = (
        "<html><body>"
        + "".join(f"<p>Paragraph number {n} of the page.</p>" for n in range(1, 41))
        + "</body></html>"
    )
    whole, cut = extract(page), extract(page, max_elements=12)
    assert "Paragraph number 40 " in whole.text and not whole.truncated
    assert "Paragraph number 5 " in cut.text and "Paragraph number 40 " not in cut.text
    assert cut.truncated


@pytest.mark.slow
@linux_only
def test_a_page_over_the_memory_limit_is_a_gap_and_the_run_goes_on(web: OfflineWeb) -> None:
    url = web.hostile["div_flood"]
    # Five sources (eight results asked): with twenty, thirty results are asked for and the
    # other heavy pages' extractions can hold this one past its 10 s deadline first.
    report = research(web, "div_flood", extract_memory_mb=20, max_sources=5)
    # libxml2 may abort() on a failed allocation instead of reporting it: either way the
    # page is a gap with a reason, and the run goes on.
    assert gap_reason(report, url) in (
        "too complex to extract: needed over 20 MB",
        "extraction crashed (signal 6)",
    )
    assert url in report.markdown.split("## Gaps", 1)[1]
    assert report.sources, "the other pages were still read"


@pytest.mark.slow
def test_a_page_past_the_extraction_deadline_is_a_gap(web: OfflineWeb) -> None:
    url = web.hostile["paragraph_flood"]
    report = research(web, "paragraph_flood", extract_timeout=0.1)
    assert gap_reason(report, url) == "too complex to extract: took over 0.1s"
    assert report.sources, "the other pages were still read"


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@linux_only
async def test_cancelling_an_extraction_kills_the_worker_running_it(tmp_path: Path) -> None:
    """A run that ends (--max-time, enough pages) cancels its extractions: the worker
    busy with one is killed, not left to finish, and a fresh one takes its place."""
    limits = ExtractLimits(seconds=600, memory_mb=300, workers=1)
    entry = start_pool(1)
    assert entry is not None
    await asyncio.wrap_future(entry.ready)
    noted = tmp_path / "pid"
    # A page that never ends: the worker notes its pid, then sleeps for an hour.
    forever = (
        f"import os, pathlib, time; pathlib.Path({str(noted)!r}).write_text("
        "str(os.getpid())); time.sleep(3600)"
    )
    task = asyncio.create_task(run_bounded(exec, forever, {}, limits=limits))
    assert await asyncio.to_thread(eventually, lambda: noted.exists() and noted.read_text())
    pid = int(noted.read_text())
    assert _alive(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(eventually, lambda: not _alive(pid)), "the worker lives on"
    assert await run_bounded(sum, (2, 3), limits=limits) == 5  # a fresh worker took over


async def test_a_run_cancelled_while_the_pool_starts_leaves_the_pool_usable() -> None:
    """A run that ends (Ctrl-C, --max-time) while the workers are still starting must not
    take the pool down with it: the next page is extracted in a worker, and exit is quiet."""
    limits = ExtractLimits(seconds=60, memory_mb=300, workers=3)  # a pool of its own
    entry = start_pool(limits.workers)
    assert entry is not None and not entry.ready.done()
    task = asyncio.create_task(run_bounded(sum, (1, 1), limits=limits))
    await asyncio.sleep(0)  # let it start waiting for the pool
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await run_bounded(os.getpid, limits=limits) != os.getpid()
    assert not entry.ready.cancelled()
    shutdown()


@pytest.mark.slow
def test_a_script_without_a_main_guard_runs_once(tmp_path: Path) -> None:
    """Workers never import the user's script: one that calls sleuth at its top level
    (no ``if __name__ == "__main__":``) must not run again in every worker."""
    script = tmp_path / "top_level.py"
    script.write_text(
        "import asyncio, os\n"
        "from sleuth.extraction.workers import ExtractLimits, run_bounded\n"
        "print('script ran', flush=True)\n"
        "pid = asyncio.run(run_bounded(os.getpid, limits=ExtractLimits(workers=2)))\n"
        "print('worker is another process:', pid != os.getpid(), flush=True)\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["script ran", "worker is another process: True"]


def _marked(mark: str) -> list[int]:
    """Processes whose environment carries ``mark`` (the CLI's children inherit it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _alive(int(entry.name)):
            try:
                if mark.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _run_cli(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, float, str]:
    """Run the CLI to its end: exit code, peak RSS in MB (its own), stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    try:
        err = proc.stderr.read()  # to its end: the CLI has exited or closed it
        # wait4, not wait(): its rusage holds the exited process's peak memory.
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        if proc.poll() is None and proc.returncode is None:
            proc.kill()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024, err


@linux_only
@pytest.mark.slow
def test_max_time_ends_the_run_and_its_extraction(web: OfflineWeb, tmp_path: Path) -> None:
    """The report comes at --max-time with the flood among the candidates, the process then
    ends with nothing left running, and the flood never made it big (2.6 GB before)."""
    mark = f"sleuth-test-{uuid.uuid4()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLEUTH_")}
    env["SLEUTH_TEST_MARK"] = mark
    out = tmp_path / "report.md"
    code, rss_mb, err = _run_cli(
        [
            "--search",
            "searxng",
            "--searxng-url",
            web.searxng_url,
            "--allow-private-urls",
            "--no-llm",
            "--quiet",
            "--no-store",
            "--depth",
            "1",
            "--max-sources",
            "20",
            "--max-time",
            "5",
            "-o",
            str(out),
            web.corpus.hostile["div_flood"].title,
        ],
        env,
        tmp_path,
    )
    assert code in (0, 1), err
    assert "Traceback" not in err
    report = out.read_text(encoding="utf-8")
    assert "## Gaps" in report
    assert eventually(lambda: not _marked(mark)), "a process of the run outlived it"
    assert rss_mb < RSS_BOUND_MB


async def test_pages_wait_for_extraction_before_they_are_downloaded(web: OfflineWeb) -> None:
    """While extraction is busy (a flood on the one worker), downloads stop once
    ``concurrency + extract_workers`` pages are between their download and the end of
    their extraction: the bodies of pages nobody can read yet do not pile up in memory."""
    from sleuth.fetch import Fetcher
    from sleuth.settings import load_settings

    settings = load_settings(
        {
            "allow_private_urls": True,
            "timeout": 30.0,
            "concurrency": 3,
            "extract_workers": 1,
            "extract_timeout": 120.0,
            "host_delay": 0,
        },
        env={},
    )
    urls = [web.hostile["div_flood"]]
    urls += [url for url in web.page_urls if "127.0.2." not in url][:20]
    ended: dict[str, float] = {}
    web.reset_log()
    async with Fetcher(settings) as fetcher:
        tasks = []
        for url in urls:
            task = asyncio.ensure_future(fetcher.fetch(url))
            task.add_done_callback(lambda _, url=url: ended.setdefault(url, time.time()))
            tasks.append(task)
        await asyncio.gather(*tasks)
    # The most pages at once between the arrival of their request and their end (the
    # server's and this process's wall clocks; 2 of slack for the order of the two logs).
    events = sorted(
        [(web.requests_for(url)[0].time, 1) for url in urls] + [(t, -1) for t in ended.values()]
    )
    held = most = 0
    for _, step in events:
        held += step
        most = max(most, held)
    assert most <= 3 + 1 + 2, most
