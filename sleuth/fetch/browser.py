"""Optional headless-browser engine (Playwright + Chromium) for script-only pages.

Playwright is an optional extra, so it is imported only when used. It serves
``--fetch-engine playwright`` and, when installed, re-renders pages whose HTML is
an empty shell that JavaScript fills in. Every request the browser makes goes
through the same URL and address checks as the httpx path (via ``page.route``);
unlike that path, Chromium resolves names itself, so a DNS answer that changes
between our check and its connection is not caught here.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import shutil
import socket
from dataclasses import dataclass
from typing import Any

from sleuth.errors import BlockedURLError, ConfigError
from sleuth.fetch.guard import NO_DOMAIN_RULES, DomainRules, address_problem, check_url
from sleuth.urls import host_of

__all__ = ["Browser", "Rendered", "looks_like_script_shell", "playwright_installed",
           "require_playwright"]

INSTALL_HINT = ("the playwright fetch engine needs Playwright: "
                "pip install 'sleuth-research[browser]', "
                "plus a Chromium (apt install chromium, or: playwright install chromium)")
_CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--no-first-run"]
# Chromium builds we can use instead of Playwright's own download (which may be impossible).
_CHROMIUM_NAMES = ("chromium", "chromium-browser", "chromium-headless-shell")
_SKIPPED_RESOURCES = frozenset({"image", "media", "font"})

_SCRIPT = re.compile(r"<script\b", re.IGNORECASE)
_INVISIBLE = re.compile(r"<(script|style|noscript|template|svg)\b.*?</\1\s*>",
                        re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
_APP_ROOT = re.compile(r"""<div[^>]+id=["'](root|app|__next|__nuxt|svelte)["']""", re.IGNORECASE)


def playwright_installed() -> bool:
    """Whether the ``playwright`` package can be imported."""
    return importlib.util.find_spec("playwright") is not None


def require_playwright() -> None:
    """Raise :class:`ConfigError` with an install hint unless Playwright is installed."""
    if not playwright_installed():
        raise ConfigError(INSTALL_HINT)


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


def _chromium_path() -> str | None:
    for name in _CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless Chromium shared by all pages of a :class:`Fetcher`."""

    def __init__(self, allow_private: bool = False,
                 domains: DomainRules = NO_DOMAIN_RULES) -> None:
        self._allow_private = allow_private
        self._domains = domains
        self._playwright: Any = None
        self._browser: Any = None
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Launch Chromium (once); raises :class:`ConfigError` when that is impossible."""
        async with self._lock:
            if self._browser is not None:
                return
            require_playwright()
            from playwright.async_api import async_playwright

            self._playwright = await async_playwright().start()
            try:
                self._browser = await self._playwright.chromium.launch(
                    executable_path=_chromium_path(), args=_CHROMIUM_ARGS, headless=True)
            except Exception as exc:  # playwright's launch errors are plain Error types
                await self._playwright.stop()
                self._playwright = None
                raise ConfigError(f"could not start Chromium ({exc}); {INSTALL_HINT}") from exc

    async def _allowed(self, url: str) -> bool:
        try:
            check_url(url, self._allow_private, self._domains)
        except BlockedURLError:
            return False
        host = host_of(url)
        if self._allow_private or self._domains.allows_private(host):
            return True
        try:
            loop = asyncio.get_running_loop()
            infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError:
            return False
        return all(address_problem(str(info[4][0])) is None for info in infos)

    async def _route(self, route: Any) -> None:
        request = route.request
        if request.resource_type in _SKIPPED_RESOURCES or not await self._allowed(request.url):
            await route.abort()
        else:
            await route.continue_()

    async def render(self, url: str, limit_s: float) -> Rendered:
        """Load ``url``, let its scripts run, and return the resulting HTML."""
        await self.start()
        context = await self._browser.new_context(java_script_enabled=True)
        try:
            page = await context.new_page()
            await page.route("**/*", self._route)
            response = await page.goto(url, timeout=limit_s * 1000, wait_until="networkidle")
            if response is None:
                raise BlockedURLError(url, "the browser refused to load it")
            headers = await response.all_headers()
            return Rendered(final_url=page.url, status=response.status, html=await page.content(),
                            content_type=headers.get("content-type", "text/html"))
        finally:
            await context.close()

    async def close(self) -> None:
        """Shut Chromium down."""
        if self._browser is not None:
            await self._browser.close()
            self._browser = None
        if self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None
