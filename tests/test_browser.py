"""The browser engine (Playwright + a real Chromium) against an attacker and an "internal" host.

Loopback servers, each on its own address: the attacker's site and an honest news site,
which the tests allow with ``--allow-domains`` (so they may be private), and an internal
service, which nothing allows. Every TCP connection and UDP datagram the internal service
gets is logged, so a test can say "nothing reached it" even of a connection that never
sent a request (a preconnect), whatever the browser did with the answer. (The offline
web logs HTTP requests only, hence servers of our own.) Skipped when Playwright or
Chromium is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sleuth.fetch import Fetcher
from sleuth.models import FetchFailure, Page
from sleuth.settings import Settings

pytest.importorskip("playwright.async_api", reason="playwright is not installed")
if not any(
    shutil.which(name) for name in ("chromium", "chromium-browser", "chromium-headless-shell")
):
    pytest.skip("no Chromium installed (apt-get install chromium)", allow_module_level=True)

#: Every test here drives a real Chromium (or skips without one).
pytestmark = pytest.mark.slow

ATTACKER_IP = "127.0.4.1"
INTERNAL_IP = "127.0.4.2"
NEWS_IP = "127.0.4.3"  # an honest site whose page needs its scripts run
SECRET = "INTERNAL-ADMIN-SECRET"
TIMEOUT = 10.0  # generous: a loaded CI box starts Chromium slowly, and no case waits it out
ARTICLE = ("Tidal locking makes the Moon show one face to the Earth. " * 6).strip()
#: A page that is all script: what the automatic fallback re-renders.
SHELL = (
    "<!DOCTYPE html><html><head><title>App</title>{head}</head><body><div id='root'>"
    "</div><script>{script}</script></body></html>"
)


@dataclass
class Site:
    """One loopback server: its URL, the paths it answers, and what reached it."""

    base: str
    routes: dict[str, Callable[[BaseHTTPRequestHandler], None]] = field(default_factory=dict)
    #: Accepted TCP connections ("tcp <peer>") and UDP datagrams ("udp <peer>"), in order.
    connections: list[str] = field(default_factory=list)
    udp_port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    changed: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)

    def url(self, path: str) -> str:
        return self.base + path

    def log(self, entry: str) -> None:
        with self.changed:
            self.connections.append(entry)
            self.changed.notify_all()

    def reset(self) -> None:
        with self.lock:
            self.connections.clear()


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 3  # a connection that never sends a request (a preconnect) ends here

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _answer(self) -> None:
            route = site.routes.get(self.path.split("?", 1)[0])
            if route is None:
                send(self, 404, "text/html", "<h1>not found</h1>")
            else:
                route(self)

        do_GET = do_POST = do_HEAD = _answer

    return Handler


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the default 5 drops bursts of connections (1 s SYN retries)

    def __init__(self, address: tuple[str, int], site: Site) -> None:
        self.site = site
        super().__init__(address, _handler(site))

    def verify_request(self, request: object, client_address: object) -> bool:
        self.site.log(f"tcp {client_address}")  # every connection, whatever it sends after
        return True


def send(
    handler: BaseHTTPRequestHandler,
    status: int,
    mime: str,
    body: str,
    headers: dict[str, str] | None = None,
) -> None:
    data = body.encode("utf-8")
    handler.send_response(status)
    handler.send_header("Content-Type", f"{mime}; charset=utf-8")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(data)


def html(body: str, status: int = 200) -> Callable[[BaseHTTPRequestHandler], None]:
    return lambda h: send(h, status, "text/html", body)


def redirect(to: str) -> Callable[[BaseHTTPRequestHandler], None]:
    return lambda h: send(h, 302, "text/html", "moved", {"Location": to})


def page(body: str, head: str = "") -> str:
    return (
        f"<!DOCTYPE html><html><head><title>Attacker page</title>{head}</head><body>"
        f"<article><p>{ARTICLE}</p></article>{body}</body></html>"
    )


def settled(site: Site) -> list[str]:
    """Every TCP connection and UDP datagram ``site`` got so far, its queues drained first.

    A connection the kernel queued but the server has not accepted yet (or a datagram
    not read yet) would be missed; both are taken in order, so once a sentinel sent now
    is logged, everything sent before it is too. No sleep, no guess at "long enough".
    """
    parts = urlsplit(site.base)
    assert parts.hostname is not None and parts.port is not None
    sentinels = []
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as tcp:
        sentinels.append(f"tcp {tcp.getsockname()}")
        if site.udp_port:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                udp.bind(("127.0.0.1", 0))
                udp.sendto(b"sentinel", (parts.hostname, site.udp_port))
                sentinels.append(f"udp {udp.getsockname()}")
        with site.changed:
            assert site.changed.wait_for(
                lambda: all(s in site.connections for s in sentinels), timeout=10
            ), "a sentinel never arrived"
            site.connections[:] = [c for c in site.connections if c not in sentinels]
            return list(site.connections)


@dataclass
class Web:
    attacker: Site
    internal: Site
    news: Site
    #: ``/slow.js`` sets ``asked`` when Chromium asks for it, then waits for ``go_on``.
    asked: threading.Event = field(default_factory=threading.Event)
    go_on: threading.Event = field(default_factory=threading.Event)

    def reset(self) -> None:
        for site in (self.attacker, self.internal, self.news):
            site.reset()


def _start(ip: str, stack: list[_Server]) -> Site:
    site = Site(base="")
    server = _Server((ip, 0), site)
    site.base = f"http://{ip}:{server.server_address[1]}"
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    stack.append(server)
    return site


def _listen_udp(site: Site, udp: socket.socket) -> None:
    """Log every datagram ``udp`` receives (a STUN request, say) until it is closed."""
    site.udp_port = udp.getsockname()[1]

    def receive() -> None:
        with contextlib.suppress(OSError):
            while True:
                site.log(f"udp {udp.recvfrom(2048)[1]}")

    threading.Thread(target=receive, daemon=True).start()


def _internal_routes(internal: Site) -> None:
    internal.routes.update(
        {
            "/admin": html(page(f"<p>{SECRET}: the admin console of the internal service.</p>")),
            "/lib.js": lambda h: send(
                h,
                200,
                "application/javascript",
                f"document.body.insertAdjacentText('beforeend', '{SECRET}');",
            ),
            "/ws": html("no websocket here"),
        }
    )


def _attacker_routes(web: Web, dead_port: int) -> None:
    attacker, internal, news = web.attacker, web.internal, web.news
    admin = internal.url("/admin")
    ws = internal.base.replace("http://", "ws://")

    def chrome_gets_a_redirect(handler: BaseHTTPRequestHandler) -> None:
        # What the issue saw: a shell for sleuth's own request, a 302 for Chromium's; and
        # should the shell be shown after all, its script goes there through a redirect.
        if "Chrome" in (handler.headers.get("User-Agent") or ""):
            redirect(admin)(handler)
        else:
            html(SHELL.format(head="", script="location.href = '/hop';"))(handler)

    attacker.routes.update(
        {
            "/doc-redirect": chrome_gets_a_redirect,
            "/script-nav": html(page("<script>location.href = '/hop';</script>")),
            "/script-nav-shell": html(SHELL.format(head="", script="location.href = '/hop';")),
            "/hop": redirect(admin),
            "/subresource": html(page("<script src='/lib.js'></script>")),
            "/lib.js": redirect(internal.url("/lib.js")),
            "/iframe": html(page(f"<iframe src='{admin}'></iframe>")),
            "/meta-refresh": html(page("", f"<meta http-equiv='refresh' content='0;url={admin}'>")),
            "/form": html(
                page(
                    f"<form method='post' action='{admin}'><input name='a' value='b'>"
                    "</form><script>document.forms[0].submit();</script>"
                )
            ),
            "/websocket": html(page(f"<script>new WebSocket('{ws}/ws');</script>")),
            "/preconnect": html(
                page(
                    "",
                    head=f"<link rel='preconnect' href='{internal.base}'>"
                    f"<link rel='prefetch' href='{admin}'>",
                )
            ),
            "/fetch": html(
                page(
                    f"<script>fetch('{admin}', {{mode: 'no-cors'}});"
                    f"navigator.sendBeacon('{admin}', 'x');</script>"
                )
            ),
            # STUN over UDP and TURN over TCP, both at the internal host.
            "/webrtc": html(
                page(
                    "<script>const pc = new RTCPeerConnection({iceServers: ["
                    f"{{urls: 'stun:{INTERNAL_IP}:{internal.udp_port}'}}, {{urls: "
                    f"'turn:{urlsplit(internal.base).netloc}?transport=tcp', username: 'u', "
                    "credential: 'p'}]}); pc.createDataChannel('x');"
                    "pc.createOffer().then(offer => pc.setLocalDescription(offer));</script>"
                )
            ),
            "/blocked-nav": html(page(f"<script>location.href = '{admin}';</script>")),
            "/dead-nav": html(
                page(f"<script>location.href = 'http://{ATTACKER_IP}:{dead_port}/';</script>")
            ),
            "/search": lambda h: send(
                h,
                200,
                "application/json",
                json.dumps(
                    {
                        "results": [
                            {
                                "url": url,
                                "title": f"Tidal locking explained {n}",
                                "content": (
                                    "Why the Moon shows one face to the Earth: tidal locking."
                                ),
                            }
                            for n, url in enumerate(
                                (attacker.url("/doc-redirect"), news.url("/app"))
                            )
                        ]
                    }
                ),
            ),
        }
    )


def _news_routes(web: Web) -> None:
    def slow_script(handler: BaseHTTPRequestHandler) -> None:
        web.asked.set()
        web.go_on.wait(10)
        send(handler, 200, "application/javascript", "")

    web.news.routes.update(
        {
            # A real single-page app: its script is behind a redirect, its text arrives by fetch().
            "/app": html(SHELL.format(head="<script src='/app.js'></script>", script="")),
            "/app.js": redirect("/static/app.js"),
            "/static/app.js": lambda h: send(
                h,
                200,
                "application/javascript",
                (
                    "document.addEventListener('DOMContentLoaded', async () => {"
                    " const data = await (await fetch('/data.json')).json();"
                    " const root = document.getElementById('root');"
                    " root.innerHTML = '<article><h1>' + data.title + '</h1><p>'"
                    " + data.text + '</p>"
                    "</article>'; });"
                ),
            ),
            "/data.json": lambda h: send(
                h, 200, "application/json", json.dumps({"title": "Tidal locking", "text": ARTICLE})
            ),
            "/hang": html(SHELL.format(head="<script src='/slow.js'></script>", script="")),
            "/slow.js": slow_script,
        }
    )


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    servers: list[_Server] = []
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dead = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        web = Web(*(_start(ip, servers) for ip in (ATTACKER_IP, INTERNAL_IP, NEWS_IP)))
        udp.bind((INTERNAL_IP, 0))
        _listen_udp(web.internal, udp)
        dead.bind((ATTACKER_IP, 0))  # an allowed host, a port that refuses connections
        _internal_routes(web.internal)
        _attacker_routes(web, dead.getsockname()[1])
        _news_routes(web)
        yield web
    finally:
        udp.close()
        dead.close()
        for server in servers:
            server.shutdown()
            server.server_close()


def settings(**overrides: object) -> Settings:
    """The attacker's and the news site's hosts allowed by name (they are private),
    and nothing else private: not the internal host."""
    values: dict[str, object] = {
        "allow_domains": [ATTACKER_IP, NEWS_IP],
        "timeout": TIMEOUT,
        "host_delay": 0,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


async def fetch(url: str, **overrides: object) -> Page | FetchFailure:
    async with Fetcher(settings(**overrides)) as fetcher:
        return await fetcher.fetch(url)


def assert_not_reached(web: Web, result: Page | FetchFailure, case: str = "") -> None:
    """Nothing of the internal host: no connection, no text, no final URL, no error page."""
    assert settled(web.internal) == [], f"the internal host got a connection {case}"
    if isinstance(result, Page):
        assert SECRET not in result.text
        assert urlsplit(result.final_url).scheme in ("http", "https"), result.final_url
        assert urlsplit(result.final_url).hostname in (ATTACKER_IP, NEWS_IP), result.final_url


# ---------------------------------------------------------------- rendering still works


async def test_a_script_only_page_is_rendered_through_the_guard(web: Web) -> None:
    web.reset()
    result = await fetch(web.news.url("/app"))
    assert isinstance(result, Page), result
    assert result.engine == "playwright" and "Tidal locking makes the Moon" in result.text
    assert result.final_url == web.news.url("/app")
    assert settled(web.internal) == []


# ---------------------------------------------------------------- the attacks


async def test_a_redirect_on_the_browsers_document_request_is_refused(web: Web) -> None:
    web.reset()
    result = await fetch(web.attacker.url("/doc-redirect"), fetch_engine="playwright")
    assert_not_reached(web, result)


async def test_a_script_navigation_ending_in_a_redirect_is_refused(web: Web) -> None:
    web.reset()
    result = await fetch(web.attacker.url("/script-nav"), fetch_engine="playwright")
    assert_not_reached(web, result)
    assert isinstance(result, FetchFailure) and result.reason.startswith("blocked: ")


async def test_a_subresource_redirected_inside_is_refused(web: Web) -> None:
    web.reset()
    result = await fetch(web.attacker.url("/subresource"), fetch_engine="playwright")
    assert_not_reached(web, result)


async def test_no_other_door_reaches_the_internal_host(web: Web) -> None:
    """An iframe, a meta refresh, a form POST, a WebSocket, WebRTC (STUN over UDP, TURN
    over TCP), preconnect/prefetch links, fetch() and sendBeacon: all at the internal host.

    One browser for all (a Chromium start is most of each case's time).
    """
    async with Fetcher(settings(fetch_engine="playwright")) as fetcher:
        for path in (
            "/iframe",
            "/meta-refresh",
            "/form",
            "/websocket",
            "/webrtc",
            "/preconnect",
            "/fetch",
        ):
            web.reset()
            result = await fetcher.fetch(web.attacker.url(path))
            assert_not_reached(web, result, path)


async def test_a_blocked_navigation_is_never_a_chrome_error_source(web: Web) -> None:
    web.reset()
    result = await fetch(web.attacker.url("/blocked-nav"), fetch_engine="playwright")
    assert_not_reached(web, result)
    assert isinstance(result, FetchFailure), result
    assert result.reason.startswith("blocked: ") and "\n" not in result.reason


async def test_a_failed_navigation_is_never_a_chrome_error_source(web: Web) -> None:
    """Not refused by the guard, just dead: the page is read as it was downloaded."""
    web.reset()
    result = await fetch(web.attacker.url("/dead-nav"), fetch_engine="playwright")
    assert isinstance(result, Page), result
    assert result.final_url == web.attacker.url("/dead-nav") and result.engine == "httpx"
    assert "Tidal locking makes the Moon" in result.text


async def test_a_browser_crash_is_one_line_and_the_next_page_gets_a_new_browser(
    web: Web, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    web.reset()
    web.asked.clear()
    web.go_on.clear()
    caplog.set_level(logging.INFO)
    async with Fetcher(settings(fetch_engine="playwright")) as fetcher:
        hanging = asyncio.ensure_future(fetcher.fetch(web.news.url("/hang")))
        try:
            assert await asyncio.to_thread(web.asked.wait, 10), "Chromium never asked"
            for pid in chromium_browser_pids():
                os.kill(pid, signal.SIGKILL)
        finally:
            web.go_on.set()
        crashed = await hanging
        after = await fetcher.fetch(web.news.url("/app"))
    # The crash costs that page its rendering (its shell has no text), in one line.
    assert isinstance(crashed, FetchFailure) and crashed.reason == "no main text"
    assert isinstance(after, Page) and after.engine == "playwright", after
    # No traceback anywhere, no warning of ours, nor of asyncio about a task left failing.
    assert [
        r
        for r in caplog.records
        if r.exc_info
        or (r.levelno >= logging.WARNING and r.name.split(".")[0] in ("sleuth", "asyncio"))
    ] == []
    assert any("the browser failed" in r.getMessage() for r in caplog.records)
    assert "Traceback" not in capfd.readouterr().err


def chromium_browser_pids() -> list[int]:
    """The Chromium browser processes this test process started (through Playwright)."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                names[int(entry.name)] = stat[stat.index("(") + 1 : stat.rindex(")")]
                parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])

    def ours(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    found = [
        pid
        for pid, name in names.items()
        if name.startswith("chromium")
        and ours(pid)
        and not names.get(parents.get(pid, 0), "").startswith("chromium")
    ]
    assert found, "no Chromium of ours is running"
    return found


async def test_the_automatic_fallback_is_not_a_way_in(web: Web) -> None:
    async with Fetcher(settings()) as fetcher:  # default settings: fetch_engine httpx
        for path in ("/doc-redirect", "/script-nav-shell"):
            web.reset()
            result = await fetcher.fetch(web.attacker.url(path))
            assert_not_reached(web, result, path)


def test_a_research_meeting_the_attack_cites_nothing_internal_and_prints_no_traceback(
    web: Web, tmp_path: Path
) -> None:
    web.reset()
    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEUTH_", "OPENAI_"))}
    env["SLEUTH_HOME"] = str(tmp_path / "home")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sleuth",
            "Why does the Moon show one face to the Earth?",
            "--search",
            "searxng",
            "--searxng-url",
            web.attacker.base,
            "--allow-domains",
            f"{ATTACKER_IP},{NEWS_IP}",
            "--timeout",
            str(TIMEOUT),
            "--no-llm",
            "--format",
            "json",
            "-o",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "unexpected error" not in proc.stderr, proc.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert SECRET not in json.dumps(report)
    assert [source["url"] for source in report["sources"]] == [web.news.url("/app")]
    failures = {failure["url"]: failure["reason"] for failure in report["failures"]}
    reason = failures[web.attacker.url("/doc-redirect")]
    assert reason.startswith("blocked: ") and "\n" not in reason
    assert settled(web.internal) == []
