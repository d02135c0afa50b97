"""The offline test web: addresses, corpus pages, search, hostile cases, log, shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import html
import io
import ipaddress
import json
import re
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import pytest_socket

from sleuth.testing import OfflineWeb
from sleuth.testing.web import COSTLY, FLOODS

CORPUS_DIR = Path(__file__).parent / "data" / "corpus"
MANIFEST = json.loads((CORPUS_DIR / "manifest.json").read_text(encoding="utf-8"))
HOSTILE_NAMES = {
    "slow_drip",
    "not_found",
    "forbidden",
    "server_error",
    "redirect_loop",
    "endless",
    "gzip_bomb",
    "binary_html",
    "wrong_charset",
    "nav_only",
    "pdf",
    "empty",
    "html_as_pdf",
    "truncated_gzip",
    "meta_charset",
    "no_charset",
    "cookie_wall",
    "long_line",
    "injection",
    "robots_disallowed",
    "div_flood",
    "br_flood",
    "paragraph_flood",
    "unicode_escape",
    "undefined_charset",
}
TIMEOUT = httpx.Timeout(5.0)


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=TIMEOUT, trust_env=False) as session:
        yield session


def search(client: httpx.Client, web: OfflineWeb, query: str, **params: str) -> httpx.Response:
    return client.get(web.url("/search"), params={"q": query, "format": "json", **params})


def host(url: str) -> str:
    return urlsplit(url).hostname or ""


# -- addresses and corpus ----------------------------------------------------------------------


def test_every_site_has_its_own_loopback_address(web: OfflineWeb) -> None:
    assert web.searxng_url == web.base_url
    assert host(web.base_url) == "127.0.0.1"
    doc_hosts = [host(url) for url in web.page_urls]
    hostile_hosts = [host(url) for url in web.hostile.values()]
    assert set(web.hostile) == HOSTILE_NAMES
    assert len(set(doc_hosts)) == len(doc_hosts) == len(web.docs) >= 30
    assert len(set(hostile_hosts)) == len(hostile_hosts)
    assert all(h.startswith("127.0.1.") for h in doc_hosts)
    assert all(h.startswith("127.0.2.") for h in hostile_hosts)
    for url in [web.base_url, *web.page_urls, *web.hostile.values()]:
        assert ipaddress.ip_address(host(url)).is_loopback
    assert web.url("search") == web.url("/search") == web.base_url + "/search"


def test_corpus_is_described_and_licensed(web: OfflineWeb) -> None:
    assert 30 <= len(web.docs) <= 60
    assert any(doc.content_type == "application/pdf" for doc in web.docs)
    for doc in web.docs:
        assert doc.title and len(doc.text) > 300 and doc.licence and doc.source
    licences = (CORPUS_DIR / "LICENSES.md").read_text(encoding="utf-8")
    assert all(doc.id in licences for doc in web.docs)
    size = sum(path.stat().st_size for path in CORPUS_DIR.rglob("*") if path.is_file())
    assert size < 3_000_000


def test_each_doc_url_serves_its_page(web: OfflineWeb, client: httpx.Client) -> None:
    for doc in web.docs:
        response = client.get(doc.url)
        assert response.status_code == 200, doc.id
        assert response.headers["content-type"] == doc.content_type
        if doc.content_type == "application/pdf":
            assert response.content.startswith(b"%PDF")
        else:
            page = html.unescape(response.content.decode("utf-8"))
            assert doc.title[:15] in page, doc.id
    assert client.get(web.page_urls[0] + "-missing").status_code == 404


def test_topics_cover_at_least_three_clusters_of_four(web: OfflineWeb) -> None:
    ids = {doc.id for doc in web.docs}
    big = [topic for topic in web.topics if len(topic.expected) >= 4]
    assert len(big) >= 3
    for topic in web.topics:
        assert set(topic.expected) <= ids and topic.question.endswith("?")


# -- search ------------------------------------------------------------------------------------


def test_search_answers_like_searxng(web: OfflineWeb, client: httpx.Client) -> None:
    response = search(client, web, "Hong Kong protests")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    data = response.json()
    assert data["query"] == "Hong Kong protests"
    assert isinstance(data["number_of_results"], int) and data["number_of_results"] > 0
    assert data["results"]
    for result in data["results"]:
        assert {"url", "title", "content", "engine", "score", "category"} <= set(result)
        assert result["engine"] == "offline" and result["category"] == "general"
        assert result["url"].startswith("http://127.")
    scores = [result["score"] for result in data["results"]]
    assert scores == sorted(scores, reverse=True)


def test_search_accepts_post(web: OfflineWeb, client: httpx.Client) -> None:
    response = client.post(web.url("/search"), data={"q": "wework", "format": "json"})
    assert response.status_code == 200 and response.json()["results"]


def test_search_pages_and_empty_answers(web: OfflineWeb, client: httpx.Client) -> None:
    first = search(client, web, "the trade war and markets").json()["results"]
    second = search(client, web, "the trade war and markets", pageno="2").json()["results"]
    assert not {r["url"] for r in first} & {r["url"] for r in second}
    nothing = search(client, web, "zzyzx qwxlpt").json()
    assert nothing["results"] == [] and nothing["number_of_results"] == 0
    assert search(client, web, "   ").status_code == 400


@pytest.mark.parametrize("fmt", ["html", "csv", "rss", None])
def test_search_formats_other_than_json_are_forbidden(
    web: OfflineWeb, client: httpx.Client, fmt: str | None
) -> None:
    params = {"q": "firefox"} | ({"format": fmt} if fmt else {})
    assert client.get(web.url("/search"), params=params).status_code == 403


@pytest.mark.parametrize("topic_id", [topic["id"] for topic in MANIFEST["topics"]])
def test_topic_question_finds_four_corpus_sites(
    full_web: OfflineWeb, client: httpx.Client, topic_id: str
) -> None:
    web = full_web  # every hostile page its topic claims, the costly ones included
    (topic,) = [topic for topic in web.topics if topic.id == topic_id]
    urls = [result["url"] for result in search(client, web, topic.question).json()["results"]]
    expected = {web.doc(doc_id).url for doc_id in topic.expected}
    found = [url for url in urls if url in expected]
    assert len(found) >= 4, (topic.question, found)
    assert len({urlsplit(url).netloc for url in found}) == len(found)
    claimed = [name for name, case in MANIFEST["hostile"].items() if case["topic"] == topic_id]
    assert all(web.hostile[name] in urls for name in claimed), claimed


def test_search_failures_toggle(web: OfflineWeb, client: httpx.Client) -> None:
    web.search_failures = 2
    try:
        assert search(client, web, "wework").status_code == 500
        assert web.search_failures == 1
        assert search(client, web, "wework").status_code == 500
        assert search(client, web, "wework").status_code == 200
    finally:
        web.search_failures = 0


# -- request log and latency -------------------------------------------------------------------


def test_request_log_records_requests(web: OfflineWeb, client: httpx.Client) -> None:
    web.reset_log()
    doc = web.docs[0]
    client.get(doc.url)
    search(client, web, "stadia")
    records = web.requests_for(doc.url)
    assert len(records) == 1
    record = records[0]
    assert (record.method, record.path) == ("GET", urlsplit(doc.url).path)
    assert record.host == urlsplit(doc.url).netloc
    assert abs(record.time - time.time()) < 60
    searches = web.requests_for(web.url("/search"))
    assert len(searches) == 1 and "q=stadia" in searches[0].query
    assert web.requests_for(web.docs[1].url) == []
    assert len(web.requests) == 2
    web.reset_log()
    assert web.requests == []


def test_latency_delays_corpus_pages(web: OfflineWeb, client: httpx.Client) -> None:
    web.latency = 0.3
    try:
        started = time.monotonic()
        assert client.get(web.docs[0].url).status_code == 200
        assert time.monotonic() - started >= 0.3
    finally:
        web.latency = 0.0


# -- hostile cases -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "status"), [("not_found", 404), ("forbidden", 403), ("server_error", 500)]
)
def test_error_statuses(web: OfflineWeb, client: httpx.Client, name: str, status: int) -> None:
    assert client.get(web.hostile[name]).status_code == status


async def test_slow_drip_sends_about_one_byte_per_second(web: OfflineWeb) -> None:
    received = b""
    async with (
        httpx.AsyncClient(timeout=TIMEOUT, trust_env=False) as session,
        session.stream("GET", web.hostile["slow_drip"]) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.5):
                async for chunk in response.aiter_raw():
                    received += chunk
    assert 1 <= len(received) <= 3


def test_redirect_loop_never_ends(web: OfflineWeb, client: httpx.Client) -> None:
    url = web.hostile["redirect_loop"]
    first = client.get(url)
    assert first.status_code == 302
    second = client.get(httpx.URL(url).join(first.headers["location"]))
    assert second.status_code == 302
    assert str(httpx.URL(url).join(second.headers["location"])) == url
    with pytest.raises(httpx.TooManyRedirects):
        client.get(url, follow_redirects=True)


async def test_endless_streams_html_without_blocking_others(web: OfflineWeb) -> None:
    streaming = asyncio.Event()

    async def drain(session: httpx.AsyncClient) -> int:
        received = 0
        async with session.stream("GET", web.hostile["endless"]) as response:
            assert response.headers["content-type"].startswith("text/html")
            assert "content-length" not in response.headers
            async for chunk in response.aiter_raw():
                if not received:
                    assert chunk.startswith(b"<!DOCTYPE html>")
                    streaming.set()
                received += len(chunk)
                if received > 8_000_000:
                    break
        return received

    async with (
        httpx.AsyncClient(timeout=TIMEOUT, trust_env=False) as first,
        httpx.AsyncClient(timeout=TIMEOUT, trust_env=False) as second,
    ):
        reader = asyncio.create_task(drain(first))
        await streaming.wait()
        other = await second.get(web.docs[0].url)  # served while the stream still runs
        assert other.status_code == 200
        assert await reader > 8_000_000


def test_gzip_bomb_inflates_to_a_gibibyte(web: OfflineWeb, client: httpx.Client) -> None:
    with client.stream("GET", web.hostile["gzip_bomb"]) as response:
        assert response.headers["content-encoding"] == "gzip"
        assert response.headers["content-type"].startswith("text/html")
        body = b"".join(response.iter_raw())
    assert len(body) == int(response.headers["content-length"]) < 1_100_000
    assert int.from_bytes(body[-4:], "little") == 1 << 30  # gzip ISIZE: 1 GiB inflated
    inflater = zlib.decompressobj(31)
    inflated, data = 0, body[: 64 * 1024]
    while data:
        out = inflater.decompress(data, 4 << 20)
        assert out.count(0) == len(out)
        inflated += len(out)
        data = inflater.unconsumed_tail
    assert inflated > 60 * (1 << 20)  # 64 KiB on the wire is already over 60 MiB


def test_binary_html_is_not_text(web: OfflineWeb, client: httpx.Client) -> None:
    response = client.get(web.hostile["binary_html"])
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.content.startswith(b"\x89PNG")
    with pytest.raises(UnicodeDecodeError):
        response.content.decode("utf-8")


def test_wrong_charset_still_holds_utf8_text(web: OfflineWeb, client: httpx.Client) -> None:
    response = client.get(web.hostile["wrong_charset"])
    assert response.headers["content-type"] == "text/html; charset=iso-8859-1"
    expect = MANIFEST["hostile"]["wrong_charset"]["expect_text"]
    assert expect not in response.text  # what trusting the header gives: mojibake
    assert expect in response.content.decode("utf-8")
    assert b"charset=" not in response.content[:4000].lower()


def test_nav_only_has_links_and_no_text(web: OfflineWeb, client: httpx.Client) -> None:
    response = client.get(web.hostile["nav_only"])
    assert response.status_code == 200 and response.text.count("<a ") >= 20
    body = response.text.split("<body>", 1)[1]
    outside_links = re.sub(r"<[^>]+>", "", re.sub(r"<a .*?</a>", "", body, flags=re.S))
    assert outside_links.strip() == ""  # every word on the page is a link label


def test_pdf_is_a_readable_pdf(web: OfflineWeb, client: httpx.Client) -> None:
    pypdf = pytest.importorskip("pypdf")
    response = client.get(web.hostile["pdf"])
    assert response.headers["content-type"] == "application/pdf"
    reader = pypdf.PdfReader(io.BytesIO(response.content))
    assert "LayoutParser" in reader.pages[0].extract_text()


def test_empty_is_empty(web: OfflineWeb, client: httpx.Client) -> None:
    response = client.get(web.hostile["empty"])
    assert response.status_code == 200 and response.content == b""


def test_hostile_pages_are_findable(full_web: OfflineWeb, client: httpx.Client) -> None:
    for name, case in MANIFEST["hostile"].items():
        urls = [r["url"] for r in search(client, full_web, case["title"]).json()["results"]]
        assert full_web.hostile[name] in urls[:5], name


def test_unlisted_cases_are_left_out_of_search_and_still_served(
    web: OfflineWeb, client: httpx.Client
) -> None:
    """The suite's web leaves the costly cases out of its searches: the floods and the
    slow drip, which its tests meet through full_web."""
    assert web.unlisted == COSTLY == FLOODS | {"slow_drip"}
    assert {"div_flood", "br_flood", "paragraph_flood"} == FLOODS
    for name in sorted(COSTLY):
        title = MANIFEST["hostile"][name]["title"]
        urls = [r["url"] for r in search(client, web, title).json()["results"]]
        assert urls and web.hostile[name] not in urls, name
        with client.stream("GET", web.hostile[name]) as response:
            assert response.status_code == 200
            assert next(response.iter_raw())  # the page, as before


# -- life cycle and isolation ------------------------------------------------------------------


def test_stop_ends_streams_in_flight_promptly() -> None:
    def servers() -> int:
        return sum(thread.name == "offline-web" for thread in threading.enumerate())

    before = servers()
    with contextlib.ExitStack() as stack:
        web = stack.enter_context(OfflineWeb(CORPUS_DIR))
        assert servers() == before + 1
        session = stack.enter_context(httpx.Client(timeout=TIMEOUT, trust_env=False))
        streams = [
            stack.enter_context(session.stream("GET", web.hostile[name]))
            for name in ("slow_drip", "endless")
        ]
        assert all(response.status_code == 200 for response in streams)
        stopping = time.monotonic()
        web.stop()
        for response in streams:  # each body ends (cut short) instead of going on
            with contextlib.suppress(httpx.HTTPError):
                for _ in response.iter_raw():
                    pass
        # "Ends", not "is fast": a generous bound that only a hang can miss.
        assert time.monotonic() - stopping < 30
    assert servers() == before
    with pytest.raises(httpx.ConnectError):
        httpx.get(web.base_url, timeout=1, trust_env=False)


def test_non_loopback_connections_are_blocked() -> None:
    with (
        pytest.warns(UserWarning, match="93.184.216.34"),
        pytest.raises(pytest_socket.SocketConnectBlockedError),
    ):
        socket.create_connection(("93.184.216.34", 80), timeout=1)


@pytest.mark.slow
def test_the_offline_demo_prints_a_command_that_works(tmp_path: Path) -> None:
    """``python -m sleuth.testing`` serves the test web and prints a ``sleuth`` line to paste:
    run as printed, it writes a cited report with no network at all."""
    import shlex
    import subprocess
    import sys

    from sleuth.cli import run

    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth.testing"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        command = next(line.strip() for line in proc.stdout if line.strip().startswith("sleuth "))
        argv = shlex.split(command)
        assert argv[:2] == ["sleuth", "--search"] and "--allow-private-urls" in argv
        out = tmp_path / "report.json"
        assert (
            run(
                [
                    *argv[1:],
                    "--home",
                    str(tmp_path / "home"),
                    "--no-llm",
                    "--quiet",
                    "--format",
                    "json",
                    "-o",
                    str(out),
                ]
            )
            == 0
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["sources"] and report["topic"] == argv[-1]


def test_the_offline_demo_without_the_web_extra_says_so_in_one_line() -> None:
    import subprocess
    import sys

    code = (
        "import runpy, sys; sys.modules['uvicorn'] = None; "
        "runpy.run_module('sleuth.testing', run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "needs the 'web' extra" in done.stderr and "[web]" in done.stderr
