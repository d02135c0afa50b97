"""From a download to a :class:`~sleuth.models.Page`: the browser, extraction, failures.

:class:`PageReading` is the part of :class:`~sleuth.fetch.fetcher.Fetcher` that turns one
page's request into what the run records: the download, shown in the browser where only
scripts fill the page in; the body converted to text in the extraction workers; and any
problem along the way made into the :class:`~sleuth.models.FetchFailure` saying why.
The fetcher around it schedules, shares, caches and guards the requests.
"""

from __future__ import annotations

import logging
import time

import httpx

from sleuth.errors import BlockedURLError, ConfigError
from sleuth.extraction.content import HTML_TYPES, Body, Unreadable, convert
from sleuth.extraction.text import truncate_text
from sleuth.extraction.workers import TooComplex, extract_limits, run_bounded
from sleuth.fetch.body import parse_content_type
from sleuth.fetch.browser import Browser, Fetched, RenderError, looks_like_script_shell
from sleuth.fetch.cache import Validators
from sleuth.fetch.transfer import HttpTransfer, _Download, _network_reason
from sleuth.models import FetchFailure, Page
from sleuth.urls import canonicalize

# The fetcher's logger: these lines are the fetcher's, wherever the code sits.
log = logging.getLogger("sleuth.fetch.fetcher")


def _fallback_title(text: str, url: str) -> str:
    first = text.split("\n", 1)[0].strip()
    return first if 0 < len(first) <= 120 else url


class PageReading(HttpTransfer):
    """Downloads, renders and extracts one page; the :class:`Fetcher` sets ``_browser``."""

    _browser: Browser | None

    def _failure(self, url: str, exc: Exception) -> FetchFailure:
        """What a page problem raised, as the failure the run records."""
        if isinstance(exc, Unreadable):
            return FetchFailure(url=url, reason=exc.reason, status=exc.status)
        if isinstance(exc, BlockedURLError):
            return FetchFailure(url=url, reason=f"blocked: {exc.reason}")
        if isinstance(exc, TimeoutError | httpx.TimeoutException):
            return FetchFailure(url=url, reason=f"timed out after {self._config.timeout:g}s")
        if isinstance(exc, httpx.HTTPError):
            return FetchFailure(url=url, reason=_network_reason(exc))
        # The contract: page problems never raise.
        log.warning("unexpected error fetching %s", url, exc_info=exc)
        return FetchFailure(url=url, reason=f"unexpected error ({type(exc).__name__})")

    async def _read(self, url: str, start: float, download: _Download) -> tuple[Page, Validators]:
        settings = self._config
        limits = extract_limits(settings)
        try:
            body = Body(
                url=download.url,
                status=download.status,
                mime=download.mime,
                charset=download.charset,
                data=download.data,
            )
            extracted, content_type = await run_bounded(
                convert, body, settings.max_chars, limits=limits
            )
        except TooComplex as exc:
            raise Unreadable(exc.reason, download.status) from None
        text, truncated = truncate_text(extracted.text, settings.max_chars)
        truncated = truncated or download.incomplete or extracted.truncated
        return Page(
            url=url,
            final_url=download.url,
            canonical_url=canonicalize(download.url),
            title=extracted.title or _fallback_title(text, download.url),
            text=text,
            content_type=content_type,
            status=download.status,
            date=extracted.date,
            truncated=truncated,
            engine=download.engine,
            elapsed_s=round(time.monotonic() - start, 3),
        ), download.validators

    async def _get(self, url: str, conditional: tuple[str, Validators] | None = None) -> _Download:
        """Download ``url``, and show it in the browser where that is wanted.

        ``conditional`` is (the cached page's final URL, its validators): the request
        to that URL asks "changed since?", and a 304 raises NotModified. The browser
        is handed the page as downloaded (so its own first request is that download,
        redirects, robots.txt and pacing included), with the playwright engine always,
        otherwise when the page is an empty shell that scripts fill in.
        """
        download = await self._download(url, conditional)
        if (
            self._browser is not None
            and download.mime in HTML_TYPES
            and (
                self._config.fetch_engine == "playwright"
                or looks_like_script_shell(download.data.decode("utf-8", "replace"))
            )
        ):
            rendered = await self._render(download)
            if rendered is not None:
                return rendered
        return download

    async def _render(self, download: _Download) -> _Download | None:
        """The page as the browser shows it; None when it cannot show it as a web page.

        A page whose main frame the guard refused to let go somewhere fails as blocked;
        any other browser failure is one line in the log, and the download is used.
        """
        assert self._browser is not None
        content_type = download.mime + (f"; charset={download.charset}" if download.charset else "")
        document = Fetched(
            url=download.url,
            status=download.status,
            headers=(("content-type", content_type),),
            body=download.data,
        )
        try:
            rendered = await self._browser.render(document, self._config.timeout)
        except ConfigError as exc:
            # Chromium cannot start (only possible for the lazily started fallback
            # browser; the playwright engine starts in __aenter__): stop trying.
            log.info("no browser for script-only pages: %s", exc)
            self._browser = None
            return None
        except RenderError as exc:
            log.info(
                "the browser could not render %s: %s; using it as downloaded", download.url, exc
            )
            return None
        self._check(rendered.final_url)  # the browser's answers were checked; so is the end
        mime, _ = parse_content_type(rendered.content_type)
        if mime not in HTML_TYPES:
            return None  # PDFs and text are better read by the plain HTTP path
        if rendered.status >= 400:
            raise Unreadable(f"HTTP {rendered.status}", rendered.status)
        return _Download(
            url=rendered.final_url,
            status=rendered.status,
            mime=mime,
            charset="utf-8",
            data=rendered.html.encode("utf-8"),
            engine="playwright",
        )
