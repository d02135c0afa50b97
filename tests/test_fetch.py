"""The fetch stage against the offline web (real pages, hostile pages) and scripted servers."""

from __future__ import annotations

import asyncio
import collections
import gzip
import importlib.util
import re
import socket
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from sleuth.errors import BlockedURLError, ConfigError, FetchError
from sleuth.fetch import Fetcher, fetch_page
from sleuth.fetch.browser import Fetched, Rendered, looks_like_script_shell
from sleuth.fetch.fetcher import DEFAULT_USER_AGENT
from sleuth.models import FetchFailure, Page
from sleuth.settings import Settings
from sleuth.testing import OfflineWeb

PDF = (Path(__file__).parent / "data" / "extract" / "tidal-locking.pdf").read_bytes()
TIMEOUT = 2.0


def settings(**overrides: object) -> Settings:
    """Settings for tests: loopback allowed (the offline web lives there), short deadline."""
    values: dict[str, object] = {"allow_private_urls": True, "timeout": TIMEOUT}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


async def fetch_one(url: str, **overrides: object) -> Page | FetchFailure:
    async with Fetcher(settings(**overrides)) as fetcher:
        return await fetcher.fetch(url)


def words(text: str) -> collections.Counter[str]:
    return collections.Counter(re.findall(r"\w+", text.lower()))


# ---------------------------------------------------------------- real pages


async def test_real_pages_become_pages_with_their_text(web: OfflineWeb) -> None:
    docs = web.docs[:6]
    async with Fetcher(settings()) as fetcher:
        results = await asyncio.gather(*(fetcher.fetch(doc.url) for doc in docs))
    for doc, page in zip(docs, results, strict=True):
        assert isinstance(page, Page), page
        assert page.status == 200 and page.engine == "httpx"
        assert page.final_url == doc.url and page.canonical_url == doc.url.rstrip("/")
        assert page.content_type == "text/html" and page.title
        assert page.elapsed_s > 0
        want = words(doc.text)
        assert sum((words(page.text) & want).values()) / sum(want.values()) >= 0.8


async def test_loopback_is_refused_without_allow_private(web: OfflineWeb) -> None:
    url = web.page_urls[0]
    web.reset_log()
    result = await fetch_one(url, allow_private_urls=False)
    assert isinstance(result, FetchFailure)
    assert result.reason.startswith("blocked: loopback address 127.0.1.")
    assert web.requests_for(url) == []


async def test_one_request_per_canonical_url(web: OfflineWeb) -> None:
    url = web.page_urls[1]
    web.reset_log()
    async with Fetcher(settings()) as fetcher:
        first, second = await asyncio.gather(fetcher.fetch(url), fetcher.fetch(url + "#top"))
        third = await fetcher.fetch(url + "?utm_source=newsletter")
    assert len(web.requests_for(url)) == 1
    assert isinstance(first, Page) and isinstance(second, Page) and isinstance(third, Page)
    assert first.text == second.text == third.text
    assert third.url == url + "?utm_source=newsletter"  # each caller sees the URL it asked for


# ---------------------------------------------------------------- hostile pages


HOSTILE_FAILURES = {
    "slow_drip": f"timed out after {TIMEOUT:g}s",
    "not_found": "HTTP 404",
    "forbidden": "HTTP 403",
    "server_error": "HTTP 500",
    "redirect_loop": "redirect loop",
    "endless": "too large (over 1,000,000 bytes)",
    "gzip_bomb": "too large (over 1,000,000 bytes)",
    "binary_html": "binary content",
    "nav_only": "no main text",
    "empty": "empty response",
}


@pytest.mark.parametrize(("case", "reason"), HOSTILE_FAILURES.items())
async def test_hostile_page_fails_quickly_with_a_reason(
    web: OfflineWeb, case: str, reason: str
) -> None:
    result = await fetch_one(web.hostile[case], max_page_bytes=1_000_000)
    assert isinstance(result, FetchFailure), result
    # The reason says which bound ended it (the slow drip: the page deadline).
    assert result.reason == reason
    assert result.url == web.hostile[case]
    if reason.startswith("HTTP "):
        assert result.status == int(reason.split()[1])


async def test_gzip_bomb_is_stopped_without_inflating_it(web: OfflineWeb) -> None:
    tracemalloc.start()
    try:
        result = await fetch_one(web.hostile["gzip_bomb"], max_page_bytes=1_000_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(result, FetchFailure) and result.reason.startswith("too large")
    # The bomb inflates to 1 GiB; we never hold much more than the 1 MB cap.
    assert peak < 16_000_000


async def test_pdf_becomes_a_page(web: OfflineWeb) -> None:
    page = await fetch_one(web.hostile["pdf"])
    assert isinstance(page, Page), page
    assert page.content_type == "application/pdf"
    assert "LayoutParser" in page.text and "Document Image Analysis" in page.text


async def test_wrong_charset_is_decoded_correctly(web: OfflineWeb) -> None:
    page = await fetch_one(web.hostile["wrong_charset"])
    assert isinstance(page, Page), page
    assert "This “on-ramp” to CLPS was specifically designed" in page.text
    assert "â€" not in page.text  # the mojibake a latin-1 reading would give


async def test_slow_drip_ends_at_the_deadline(web: OfflineWeb) -> None:
    started = time.monotonic()
    result = await fetch_one(web.hostile["slow_drip"], timeout=1.0)
    assert isinstance(result, FetchFailure) and result.reason == "timed out after 1s"
    # Not given up early (a loaded machine only makes this longer; bench/ times it).
    assert time.monotonic() - started >= 0.9


# ---------------------------------------------------------------- scripted servers

Handler = (
    Callable[[httpx.Request], httpx.Response]
    | Callable[[httpx.Request], Coroutine[None, None, httpx.Response]]
)


async def fetch_mock(handler: Handler, url: str, **overrides: object) -> Page | FetchFailure:
    values: dict[str, object] = {"allow_private_urls": False}
    values.update(overrides)
    async with Fetcher(settings(**values), transport=httpx.MockTransport(handler)) as fetcher:
        return await fetcher.fetch(url)


def html_page(body: str, title: str = "A page") -> httpx.Response:
    return httpx.Response(
        200,
        html=f"<html><head><title>{title}</title></head>"
        f"<body><article>{body}</article></body></html>",
    )


ARTICLE = "<p>" + "Tidal locking makes the Moon show one face to the Earth. " * 5 + "</p>"


async def test_waiting_for_an_extraction_worker_does_not_fail_a_page_that_arrived(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deadline is the download's: a page behind a big one in the extraction queue is read."""
    from sleuth.fetch import _reading as fetcher_module

    real = fetcher_module.run_bounded

    async def queued_behind_a_big_page(
        func: Callable[..., object], *args: object, **kwargs: Any
    ) -> object:
        await asyncio.sleep(0.6)  # stands in for another page's long extraction
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(fetcher_module, "run_bounded", queued_behind_a_big_page)
    page = await fetch_mock(
        lambda request: html_page(ARTICLE), "https://moon.example/a", timeout=0.2
    )
    assert isinstance(page, Page), page
    assert "Tidal locking" in page.text


@pytest.mark.parametrize(
    "target",
    [
        "http://10.0.0.7/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://2130706433/",
        "http://[::ffff:192.168.0.1]/",
        "http://localhost:6379/",
        "file:///etc/passwd",
    ],
)
async def test_redirect_to_a_private_address_is_blocked(target: str) -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return httpx.Response(302, headers={"Location": target})

    result = await fetch_mock(handler, "https://news.example.com/story")
    assert isinstance(result, FetchFailure)
    assert result.reason.startswith("blocked: ")
    assert asked == ["https://news.example.com/story"]  # the private hop was never requested


async def test_redirect_into_rebinding_dns_is_blocked_at_connect_time(
    monkeypatch: pytest.MonkeyPatch, unused_server: Callable[[], Awaitable[int]]
) -> None:
    """A public-looking name that resolves to loopback: only the connect-time guard sees it."""
    port = await unused_server()
    real = socket.getaddrinfo

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> list:
        if host == "cdn.example.net":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    result = await fetch_one(f"http://cdn.example.net:{port}/page", allow_private_urls=False)
    assert isinstance(result, FetchFailure)
    assert result.reason == "blocked: loopback address 127.0.0.1"


@pytest.fixture
async def unused_server() -> AsyncIterator[Callable[[], Awaitable[int]]]:
    """Start a TCP server that fails the test if anything connects to it."""
    servers: list[asyncio.Server] = []
    connected: list[bool] = []

    async def start() -> int:
        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            connected.append(True)
            writer.close()

        server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
        servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()
    assert not connected, "the guard let a connection through"


async def test_redirects_are_followed_and_recorded() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/old":
            return httpx.Response(301, headers={"Location": "/new?utm_source=x"})
        if request.url.path == "/new":
            return httpx.Response(302, headers={"Location": "https://www.example.org/final/"})
        return html_page(ARTICLE, "Final")

    page = await fetch_mock(handler, "http://example.org/old")
    assert isinstance(page, Page), page
    assert page.url == "http://example.org/old"
    assert page.final_url == "https://www.example.org/final/"
    assert page.canonical_url == "https://www.example.org/final"
    assert page.title == "Final" and page.status == 200


async def test_too_many_redirects() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        n = int(request.url.path.strip("/") or 0)
        return httpx.Response(302, headers={"Location": f"/{n + 1}"})

    result = await fetch_mock(handler, "https://example.org/0", max_redirects=3)
    assert isinstance(result, FetchFailure) and result.reason == "too many redirects"


@asynccontextmanager
async def redirecting_server(location: bytes) -> AsyncIterator[str]:
    """A loopback server that answers every request with a 302 to ``location``, sent as
    given (httpx's mock transport would parse it first)."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n"
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/start"
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(
    "location",
    [b"http:127.0.0.1:9/x", b"https:example.org", b"http://[::1", b"http://[v1.x]/"],
)
async def test_a_malformed_redirect_is_a_named_failure(location: bytes) -> None:
    async with redirecting_server(location) as url:
        result = await fetch_one(url, allow_private_urls=True)
    assert isinstance(result, FetchFailure), result
    assert result.reason.startswith("bad redirect: the Location header is not a usable URL")
    assert "unexpected" not in result.reason


async def test_declared_content_length_over_the_cap_is_not_read() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"Content-Type": "text/html", "Content-Length": "9000000"},
            content=b"<p>x</p>",
        )

    result = await fetch_mock(handler, "https://example.org/big", max_page_bytes=5_000_000)
    assert isinstance(result, FetchFailure) and result.reason == "too large (over 5,000,000 bytes)"


@pytest.mark.parametrize(
    ("content_type", "body", "reason"),
    [
        ("image/png", b"\x89PNG\r\n\x1a\n", "unsupported content type image/png"),
        ("application/zip", b"PK\x03\x04", "unsupported content type application/zip"),
        ("application/octet-stream", bytes(range(256)), "binary content"),
        ("text/html", b"<html>\x00\x01\x02\x03\x04</html>" * 50, "binary content"),
        ("text/plain", b"OK", "no main text"),
    ],
)
async def test_refused_content(content_type: str, body: bytes, reason: str) -> None:
    result = await fetch_mock(
        lambda r: httpx.Response(200, headers={"Content-Type": content_type}, content=body),
        "https://example.org/thing",
    )
    assert isinstance(result, FetchFailure) and result.reason == reason


async def test_plain_text_and_markdown_are_kept_as_they_are() -> None:
    body = "# Notes\n\nThe   Moon is   tidally locked.\n\n\n\nIt shows one face.\n"
    for content_type in ("text/plain; charset=utf-8", "text/markdown"):

        def handler(request: httpx.Request, ct: str = content_type) -> httpx.Response:
            return httpx.Response(200, headers={"Content-Type": ct}, content=body.encode())

        page = await fetch_mock(handler, "https://example.org/notes.md")
        assert isinstance(page, Page), page
        assert page.text == "# Notes\n\nThe Moon is tidally locked.\n\nIt shows one face."
        assert page.title == "# Notes"


async def test_pdf_is_recognised_by_its_bytes() -> None:
    page = await fetch_mock(
        lambda r: httpx.Response(
            200, headers={"Content-Type": "application/octet-stream"}, content=PDF
        ),
        "https://example.org/download?id=7",
    )
    assert isinstance(page, Page), page
    assert page.content_type == "application/pdf" and page.title == "Tidal Locking Notes"
    assert "same face to the Earth" in page.text and page.date == "2024-03-15"


async def test_corrupt_pdf_is_a_failure() -> None:
    result = await fetch_mock(
        lambda r: httpx.Response(
            200, headers={"Content-Type": "application/pdf"}, content=b"%PDF-1.7\n not really"
        ),
        "https://example.org/x.pdf",
    )
    assert isinstance(result, FetchFailure) and result.reason.startswith("unreadable PDF")


def streamed(data: bytes, chunk: int = 100) -> AsyncIterator[bytes]:
    """A body the transport has not read yet, so the fetcher decodes it itself."""

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(data), chunk):
            yield data[start : start + chunk]

    return chunks()


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


PAGE = f"<html><body><article>{ARTICLE}</article></body></html>".encode()


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        ("gzip", gzip.compress(PAGE)),
        ("gzip", gzip.compress(PAGE[:100]) + gzip.compress(PAGE[100:])),  # two gzip members
        ("deflate", zlib.compress(PAGE)),
        ("deflate", raw_deflate(PAGE)),  # "deflate" as many servers really send it
        ("identity", PAGE),
    ],
)
async def test_compressed_bodies_are_decoded(encoding: str, body: bytes) -> None:
    page = await fetch_mock(
        lambda r: httpx.Response(
            200,
            headers={"Content-Type": "text/html", "Content-Encoding": encoding},
            content=streamed(body),
        ),
        "https://example.org/gz",
    )
    assert isinstance(page, Page), page
    assert page.text.count("Tidal locking") == 5


@pytest.mark.parametrize(
    ("encoding", "body", "reason"),
    [
        ("gzip", b"\x1f\x8b\x08\x00garbage-garbage-garbage", "corrupt compressed body"),
        ("br", b"\x00\x01", "unsupported content encoding br"),
        (
            "gzip",
            gzip.compress(b"<p>" + b"a" * 3_000_000 + b"</p>"),
            "too large (over 1,000,000 bytes)",
        ),
    ],
)
async def test_bad_compressed_bodies_are_failures(encoding: str, body: bytes, reason: str) -> None:
    result = await fetch_mock(
        lambda r: httpx.Response(
            200,
            headers={"Content-Type": "text/html", "Content-Encoding": encoding},
            content=streamed(body, 4096),
        ),
        "https://example.org/gz",
        max_page_bytes=1_000_000,
    )
    assert isinstance(result, FetchFailure) and result.reason == reason


async def test_long_text_is_truncated_with_a_marker() -> None:
    # Sixty different paragraphs, so that nothing in them reads as a copy.
    paragraphs = "".join(
        f"<p>Paragraph {i}: "
        + " ".join(f"on day {i * 20 + j} the Moon showed face {j}." for j in range(20))
        + "</p>"
        for i in range(60)
    )
    page = await fetch_mock(
        lambda r: html_page(paragraphs), "https://example.org/long", max_chars=2000
    )
    assert isinstance(page, Page), page
    assert page.truncated
    assert page.text.endswith("[… truncated at 2000 characters]")
    assert len(page.text) <= 2000 + len("\n\n[… truncated at 2000 characters]")


async def test_user_agent_is_honest_unless_set() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["user-agent"])
        return html_page(ARTICLE)

    await fetch_mock(handler, "https://example.org/a")
    await fetch_mock(handler, "https://example.org/a", user_agent="MyBot/2.0")
    assert seen == [DEFAULT_USER_AGENT, "MyBot/2.0"]
    assert re.fullmatch(r"sleuth/\S+ \(\+https://github\.com/sleuth-research/sleuth\)", seen[0])


async def test_concurrency_limits_hold() -> None:
    active: collections.Counter[str] = collections.Counter()
    peak: collections.Counter[str] = collections.Counter()

    async def handler(request: httpx.Request) -> httpx.Response:
        for key in (request.url.host, "*"):
            active[key] += 1
            peak[key] = max(peak[key], active[key])
        for _ in range(20):  # yield so other fetches can start if the limits let them
            await asyncio.sleep(0)
        for key in (request.url.host, "*"):
            active[key] -= 1
        return html_page(ARTICLE)

    urls = [f"https://site{i % 3}.example/{i}" for i in range(18)]
    # host_delay=0: spacing the starts would keep these instant requests from overlapping.
    async with Fetcher(
        settings(concurrency=4, per_host_concurrency=2, host_delay=0),
        transport=httpx.MockTransport(handler),
    ) as fetcher:
        results = await asyncio.gather(*(fetcher.fetch(u) for u in urls))
    assert all(isinstance(r, Page) for r in results)
    assert peak["*"] == 4
    assert max(peak[f"site{i}.example"] for i in range(3)) == 2


async def test_a_cancelled_fetch_can_be_retried() -> None:
    calls = 0
    started, release = asyncio.Event(), asyncio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            started.set()
            await release.wait()  # never set: the first fetch hangs until cancelled
        return html_page(ARTICLE)

    async with Fetcher(settings(), transport=httpx.MockTransport(handler)) as fetcher:
        task = asyncio.ensure_future(fetcher.fetch("https://example.org/a"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        page = await fetcher.fetch("https://example.org/a")
    assert isinstance(page, Page) and calls == 2


async def test_network_errors_are_failures() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    result = await fetch_mock(handler, "https://example.org/")
    assert isinstance(result, FetchFailure)
    assert result.reason == "could not connect (Connection refused)"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("not a url", "blocked: scheme '(none)' is not allowed"),
        ("ftp://example.org/file.txt", "blocked: scheme 'ftp' is not allowed"),
        ("javascript:alert(1)", "blocked: scheme 'javascript' is not allowed"),
        ("http://user:secret@example.org/", "blocked: credentials in URL"),
        ("http://[::1", "blocked: invalid URL"),
    ],
)
async def test_unfetchable_urls_are_failures_not_errors(url: str, reason: str) -> None:
    result = await fetch_mock(lambda r: html_page(ARTICLE), url)
    assert isinstance(result, FetchFailure) and result.reason.startswith(reason)


async def test_fetcher_must_be_entered() -> None:
    with pytest.raises(RuntimeError, match="async with"):
        await Fetcher(settings()).fetch("https://example.org/")


# ---------------------------------------------------------------- fetch_page


async def test_fetch_page_returns_or_raises(web: OfflineWeb) -> None:
    page = await fetch_page(web.page_urls[2], settings())
    assert page.text
    with pytest.raises(FetchError, match="HTTP 404") as info:
        await fetch_page(web.hostile["not_found"], settings())
    assert not isinstance(info.value, BlockedURLError)
    with pytest.raises(BlockedURLError) as blocked:
        await fetch_page(web.page_urls[2], settings(allow_private_urls=False))
    assert blocked.value.reason.startswith("loopback address")


# ---------------------------------------------------------------- browser engine


async def test_playwright_engine_without_playwright_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Pretend the optional package is absent, whatever this environment has.
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "playwright" else real_find_spec(name, *a),
    )
    from sleuth._extras import install_hint

    # The hint installs the extra where sleuth came from (here: this checkout).
    with pytest.raises(ConfigError, match=re.escape(install_hint("browser"))):
        async with Fetcher(settings(fetch_engine="playwright")):
            pass


def test_script_shell_detection() -> None:
    shell = (
        "<html><head><script src='/a.js'></script><script src='/b.js'></script></head>"
        "<body><div id='root'></div><noscript>You need to enable JavaScript to run "
        "this app.</noscript><script>window.__DATA__={}</script></body></html>"
    )
    assert looks_like_script_shell(shell)
    article = f"<html><body><script src='/a.js'></script><article>{ARTICLE}</article></body></html>"
    assert not looks_like_script_shell(article)
    assert not looks_like_script_shell("<html><body><p>Short page.</p></body></html>")


class FakeBrowser:
    """Stands in for Chromium: 'renders' a script shell into the article it would show."""

    rendered: ClassVar[list[str]] = []

    def __init__(self, fetch: object, max_bytes: int) -> None:
        pass

    async def start(self) -> None:
        pass

    async def render(self, document: Fetched, limit_s: float) -> Rendered:
        FakeBrowser.rendered.append(document.url)
        return Rendered(
            final_url=document.url,
            status=200,
            content_type="text/html",
            html=f"<html><head><title>Rendered</title></head><body>{ARTICLE}</body>",
        )

    async def close(self) -> None:
        pass


async def test_script_shell_is_rendered_when_a_browser_is_available(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sleuth.fetch.fetcher as fetcher_module

    monkeypatch.setattr(fetcher_module, "playwright_installed", lambda: True)
    monkeypatch.setattr(fetcher_module, "Browser", FakeBrowser)
    FakeBrowser.rendered = []
    shell = (
        "<html><head><script src='/app.js'></script></head><body><div id='root'></div>"
        "<script>boot()</script></body></html>"
    )

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/app":
            return httpx.Response(200, html=shell)
        return html_page(ARTICLE, "Plain")

    page = await fetch_mock(handler, "https://spa.example/app")
    plain = await fetch_mock(handler, "https://spa.example/plain")
    assert isinstance(page, Page) and page.engine == "playwright" and page.title == "Rendered"
    assert isinstance(plain, Page) and plain.engine == "httpx"
    assert FakeBrowser.rendered == ["https://spa.example/app"]
