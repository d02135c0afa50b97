"""Optional headless-browser engine (Playwright + Chromium) for script-only pages.

Playwright is an optional extra, so it is imported only when used. It serves
``--fetch-engine playwright`` and, when installed, re-renders pages whose HTML is
an empty shell that JavaScript fills in.

Chromium never touches the network itself. Every request it makes (documents,
frames, scripts, fetch/XHR, form posts) is intercepted and answered with what
sleuth's own guarded client fetched for it (:class:`BrowserFetch`): each redirect
hop checked by the guard, connections made only to checked addresses, bodies under
the byte cap. What Playwright's interception does not hand over (the hops of a
redirect Chromium would follow, requests with no frame, preconnects, WebSockets)
must not leak either, so Chromium runs behind a proxy that is a closed loopback
port, loopback included (``<-loopback>``): anything not answered by sleuth fails.
A main-frame navigation the guard refuses fails the page, and a page that ends
anywhere but an http(s) URL (``chrome-error://``, ``about:blank``) is never a source.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import re
import shutil
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from sleuth import _extras as extras
from sleuth.errors import BlockedURLError, ConfigError

__all__ = [
    "Browser",
    "BrowserFetch",
    "Fetched",
    "RenderError",
    "Rendered",
    "looks_like_script_shell",
    "playwright_installed",
    "require_playwright",
]

log = logging.getLogger(__name__)


def install_hint() -> str:
    """What the playwright engine needs, and the commands that install it."""
    return (
        f"the playwright fetch engine needs Playwright: {extras.install_hint('browser')}, "
        "plus a Chromium (apt install chromium, or: playwright install chromium)"
    )


_CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    # No QUIC, and WebRTC only through the proxy (so never): UDP goes round a
    # proxy. The switch was renamed; each Chromium ignores the name it lacks.
    "--disable-quic",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
]
# Chromium builds we can use instead of Playwright's own download (which may be impossible).
_CHROMIUM_NAMES = ("chromium", "chromium-browser", "chromium-headless-shell")
_SKIPPED_RESOURCES = frozenset({"image", "media", "font"})
# Request headers Chromium sends that are the transport's business, or that would ask
# for encodings the bounded inflater does not read (sleuth's client sets its own).
_DROPPED_REQUEST_HEADERS = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "content-length",
        "transfer-encoding",
        "te",
        "upgrade",
        "accept-encoding",
    }
)
# Response headers that describe the bytes on the wire, not the (decoded) body handed over.
_DROPPED_RESPONSE_HEADERS = frozenset(
    {
        "content-encoding",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "alt-svc",
    }
)

_SCRIPT = re.compile(r"<script\b", re.IGNORECASE)
_INVISIBLE = re.compile(
    r"<(script|style|noscript|template|svg)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL
)
_TAG = re.compile(r"<[^>]*>")
_APP_ROOT = re.compile(r"""<div[^>]+id=["'](root|app|__next|__nuxt|svelte)["']""", re.IGNORECASE)


def playwright_installed() -> bool:
    """Whether the ``playwright`` package can be imported."""
    return importlib.util.find_spec("playwright") is not None


def require_playwright() -> None:
    """Raise :class:`ConfigError` with an install hint unless Playwright is installed."""
    if not playwright_installed():
        raise ConfigError(install_hint())


def looks_like_script_shell(html: str) -> bool:
    """Whether ``html`` is an empty page that scripts fill in (a single-page-app shell).

    True when the visible text is tiny and the page carries several scripts or
    an empty app root such as ``<div id="root">``.
    """
    scripts = len(_SCRIPT.findall(html))
    if scripts == 0:
        return False
    visible = " ".join(_TAG.sub(" ", _INVISIBLE.sub(" ", html)).split())
    return len(visible) < 200 and (scripts >= 3 or _APP_ROOT.search(html) is not None)


@dataclass(frozen=True)
class Rendered:
    """What the browser ended up showing for one URL."""

    final_url: str
    status: int
    html: str
    content_type: str


@dataclass(frozen=True)
class Fetched:
    """One answer handed to the browser: what sleuth's guarded client got for a request.

    ``url`` is where the body really came from (after the redirects the client
    followed); ``body`` is decoded (no content encoding) and within the byte cap.
    """

    url: str
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


#: Fetches one request of the browser's (method, URL, headers, body) through the guard,
#: following and checking redirects; raises BlockedURLError for a refused hop.
BrowserFetch = Callable[[str, str, dict[str, str], bytes | None], Awaitable[Fetched]]


class RenderError(Exception):
    """The browser could not show the page (navigation failed, crash, not a web page)."""


@dataclass
class _Session:
    """One render: the page's own document, what the main frame was served, what was refused."""

    document: Fetched
    page: Any = None
    served_document: bool = False
    main: dict[str, Fetched] = field(default_factory=dict)
    last: Fetched | None = None
    blocked: BlockedURLError | None = None
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


def _chromium_path() -> str | None:
    for name in _CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _closed_port() -> socket.socket:
    """A loopback port nobody listens on (bound, never listening), held until closed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def _request_headers(headers: dict[str, str]) -> dict[str, str]:
    return {
        k: v
        for k, v in headers.items()
        if k.lower() not in _DROPPED_REQUEST_HEADERS and not k.startswith(":")
    }


def _response_headers(fetched: Fetched) -> dict[str, str]:
    merged: dict[str, str] = {}
    for name, value in fetched.headers:
        key = name.lower()
        if key in _DROPPED_RESPONSE_HEADERS:
            continue
        glue = "\n" if key == "set-cookie" else ", "
        merged[key] = merged[key] + glue + value if key in merged else value
    return merged


def _main_frame_navigation(request: Any, page: Any) -> bool:
    """Whether ``request`` loads a new document into ``page`` itself (not a frame, a popup)."""
    try:
        return (
            bool(request.is_navigation_request())
            and page is not None
            and request.frame == page.main_frame
        )
    except Exception:  # a request with no frame (a worker's) is no navigation
        return False


def _one_line(exc: BaseException) -> str:
    """Playwright's messages run to many lines (call logs); the first is the news."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return first[:200]


async def _ignore_errors(call: Awaitable[Any]) -> None:
    """Answer a request whose page may be gone already (a closed page raises)."""
    with contextlib.suppress(Exception):
        await call


async def _refuse_web_socket(socket_route: Any) -> None:
    """WebSockets are never opened: sleuth reads pages, it does not talk to servers."""
    await _ignore_errors(socket_route.close(code=1008, reason="refused by sleuth"))


class Browser:
    """One headless Chromium shared by all pages of a :class:`Fetcher`.

    ``fetch`` makes every request for it (see the module docstring); ``max_bytes``
    caps the HTML of a rendered page as ``max_page_bytes`` caps a download.
    """

    def __init__(self, fetch: BrowserFetch, max_bytes: int) -> None:
        self._fetch = fetch
        self._max_bytes = max_bytes
        self._playwright: Any = None
        self._browser: Any = None
        self._proxy: socket.socket | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Launch Chromium (once); raises :class:`ConfigError` when that is impossible."""
        async with self._lock:
            if self._browser is not None and self._browser.is_connected():
                return
            await self._stop()  # a browser that crashed is started again
            require_playwright()
            from playwright.async_api import async_playwright

            self._proxy = _closed_port()
            # Loopback is proxied too: Chromium bypasses the proxy for it unless told.
            args = [
                *_CHROMIUM_ARGS,
                f"--proxy-server=http://127.0.0.1:{self._proxy.getsockname()[1]}",
                "--proxy-bypass-list=<-loopback>",
            ]
            try:
                self._playwright = await async_playwright().start()
                self._browser = await self._playwright.chromium.launch(
                    executable_path=_chromium_path(), args=args, headless=True
                )
            except Exception as exc:  # playwright's launch errors are plain Error types
                await self._stop()
                raise ConfigError(
                    f"could not start Chromium ({_one_line(exc)}); {install_hint()}"
                ) from exc

    async def render(self, document: Fetched, limit_s: float) -> Rendered:
        """Show ``document`` (already fetched) with its scripts run; return the HTML.

        Raises :class:`BlockedURLError` when the page's main frame tried to go where
        the guard refuses, :class:`RenderError` (one line) when it cannot be shown as
        a web page: a failed navigation, a crash, an end at ``chrome-error://``.
        """
        await self.start()
        session = _Session(document)
        context: Any = None
        try:
            context = await self._browser.new_context(
                java_script_enabled=True, service_workers="block", accept_downloads=False
            )
            context.set_default_timeout(limit_s * 1000)
            await context.route("**/*", partial(self._route, session))
            await context.route_web_socket(lambda _url: True, _refuse_web_socket)
            page = session.page = await context.new_page()
            await page.goto(document.url, timeout=limit_s * 1000, wait_until="networkidle")
            return await self._result(page, session)
        except (BlockedURLError, RenderError):
            raise
        except Exception as exc:  # playwright's own errors: navigation, timeout, crash
            if session.blocked is not None:
                raise session.blocked from None
            raise RenderError(f"the browser failed ({_one_line(exc)})") from exc
        finally:
            for task in session.tasks:
                task.cancel()
            if context is not None:
                await _ignore_errors(context.close())

    async def _result(self, page: Any, session: _Session) -> Rendered:
        if session.blocked is not None:
            raise session.blocked  # the page sent its main frame somewhere refused
        final = page.url
        if urlsplit(final).scheme not in ("http", "https"):
            raise RenderError(f"the page ended at {final[:100]}, not a web page")
        answer = session.main.get(final) or session.last or session.document
        size = await page.evaluate(
            "document.documentElement ? document.documentElement.outerHTML.length : 0"
        )
        if size > self._max_bytes:
            raise RenderError(f"the rendered page is too large (over {self._max_bytes:,} bytes)")
        html = await page.content()
        content_type = _response_headers(answer).get("content-type", "text/html")
        return Rendered(
            final_url=answer.url if final in session.main else final,
            status=answer.status,
            html=html,
            content_type=content_type,
        )

    async def _route(self, session: _Session, route: Any) -> None:
        """Playwright's route handler: answer in a task the render can cancel when it ends."""
        task = asyncio.ensure_future(self._answer(session, route))
        session.tasks.add(task)
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            session.tasks.discard(task)
        if task.cancelled():
            await _ignore_errors(route.abort("aborted"))

    async def _answer(self, session: _Session, route: Any) -> None:
        """Fetch what Chromium asked for through the guard, and hand it over (or refuse)."""
        request = route.request
        main = _main_frame_navigation(request, session.page)
        fetched: Fetched | None = None
        refusal = "failed"
        try:
            if request.resource_type in _SKIPPED_RESOURCES:
                refusal = "blockedbyclient"
            elif main and not session.served_document:
                # A fresh page's first navigation is the goto: the page as downloaded.
                session.served_document = True
                fetched = session.document
            else:
                headers = _request_headers(await request.all_headers())
                fetched = await self._fetch(
                    request.method, request.url, headers, request.post_data_buffer
                )
        except BlockedURLError as exc:
            refusal = "blockedbyclient"
            if main and session.blocked is None:
                session.blocked = exc
        except Exception as exc:  # a refused or failed subresource: the page goes on without
            log.debug("browser request %s failed: %s", request.url, _one_line(exc))
        if fetched is None:
            await _ignore_errors(route.abort(refusal))
            return
        if main:
            session.main[request.url] = session.last = fetched
        await _ignore_errors(
            route.fulfill(
                status=fetched.status, headers=_response_headers(fetched), body=fetched.body
            )
        )

    async def _stop(self) -> None:
        for name in ("_browser", "_playwright"):
            part = getattr(self, name)
            setattr(self, name, None)
            if part is not None:
                with contextlib.suppress(Exception):  # it may have crashed already
                    await (part.close() if name == "_browser" else part.stop())
        if self._proxy is not None:
            self._proxy.close()
            self._proxy = None

    async def close(self) -> None:
        """Shut Chromium down."""
        async with self._lock:
            await self._stop()
