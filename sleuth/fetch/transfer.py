"""The HTTP side of :class:`~sleuth.fetch.fetcher.Fetcher`: requests, redirects, robots.txt.

:class:`HttpTransfer` is the fetcher's base: it sends each request once its host's turn
has come (:mod:`sleuth.fetch.politeness`), follows redirects by hand with every hop
checked by the guard, reads bodies under ``max_page_bytes`` (:mod:`sleuth.fetch.body`),
reads robots.txt, and makes the optional browser's requests. What to fetch, the cache
and the extraction of what came back are the fetcher's.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field

import httpx

from sleuth.errors import BlockedURLError
from sleuth.extraction.content import ACCEPTED_TYPES, Unreadable
from sleuth.fetch.body import parse_content_type, read_body
from sleuth.fetch.browser import Fetched
from sleuth.fetch.cache import NotModified, Validators, validators_of
from sleuth.fetch.config import FetchConfig
from sleuth.fetch.guard import DomainRules, check_url
from sleuth.fetch.politeness import ROBOTS_MAX_BYTES, ROBOTS_TIMEOUT, Politeness, Robots, robots_url

# The fetcher's logger: these messages were its own before the split, and keep its name.
log = logging.getLogger("sleuth.fetch.fetcher")

_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
_ERRNO = re.compile(r"^\[Errno -?\d+\]\s*")
_HEADERS = {
    "Accept": (
        "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,"
        "text/markdown;q=0.8,*/*;q=0.1"
    ),
    "Accept-Language": "en;q=1.0, *;q=0.5",
    # Only what the Inflater can decode with a bound on output (see sleuth.fetch.body).
    "Accept-Encoding": "gzip, deflate",
}


@dataclass(frozen=True)
class _Download:
    url: str
    status: int
    mime: str
    charset: str | None
    data: bytes
    engine: str = "httpx"
    validators: Validators = field(default_factory=Validators)
    #: The compressed body ended before its compressed stream did (a cut-off download).
    incomplete: bool = False
    #: The IP address the body came from, when the transport says (httpcore does).
    address: str | None = None


def _peer(response: httpx.Response) -> str | None:
    """The IP address ``response`` came from, if its transport tells (httpcore's does)."""
    stream = response.extensions.get("network_stream")
    try:
        peer = stream.get_extra_info("server_addr") if stream is not None else None
    except Exception:  # a transport's own stream type: nothing to learn from it
        return None
    return str(peer[0]) if isinstance(peer, tuple) and peer else None


def _network_reason(exc: httpx.HTTPError) -> str:
    message = _ERRNO.sub("", str(exc)) or type(exc).__name__
    if isinstance(exc, httpx.ConnectError):
        reason = f"could not connect ({message})"
    elif isinstance(exc, httpx.RemoteProtocolError):
        reason = f"broken HTTP response ({message})"
    else:
        reason = f"network error ({type(exc).__name__}: {message})"
    return reason[:200]


class HttpTransfer:
    """Requests for a fetcher: paced per host, redirects checked hop by hop, bodies capped.

    The subclass (:class:`~sleuth.fetch.fetcher.Fetcher`) sets the attributes below.
    """

    _config: FetchConfig
    _client: httpx.AsyncClient | None
    _domains: DomainRules
    _polite: Politeness

    def _check(self, url: str) -> None:
        """The guard's verdict on ``url`` under the fetcher's settings (raises BlockedURLError)."""
        check_url(url, self._config.allow_private_urls, self._domains)

    # -- politeness (see sleuth.fetch.politeness) --------------------------------------------

    @property
    def robots_notes(self) -> dict[str, str]:
        """Sites whose robots.txt could not be read (origin: why); they were treated as
        allowing everything. Only filled with ``respect_robots``."""
        return self._polite.robots_notes

    async def _send(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` (streaming) once its host's turn has come."""
        assert self._client is not None
        await self._polite.pace(request.url.host)
        return await self._client.send(request, stream=True)

    async def _read_robots(self, origin: str) -> Robots:
        """The robots.txt of ``origin``: read once per run, never a reason to fail."""
        url = robots_url(origin)
        try:
            async with asyncio.timeout(min(ROBOTS_TIMEOUT, self._config.timeout)):
                robots = await self._download_robots(url)
        except Unreadable as exc:
            robots = Robots.allow_all(f"robots.txt {exc.reason}")
        except BlockedURLError as exc:
            robots = Robots.allow_all(f"robots.txt blocked: {exc.reason}")
        except (TimeoutError, httpx.TimeoutException):
            robots = Robots.allow_all("robots.txt timed out")
        except httpx.HTTPError as exc:
            robots = Robots.allow_all(f"robots.txt: {_network_reason(exc)}")
        except Exception as exc:  # like pages: a broken robots.txt never ends the run
            log.warning("unexpected error reading %s", url, exc_info=True)
            robots = Robots.allow_all(f"robots.txt: unexpected error ({type(exc).__name__})")
        if robots.note:
            log.info("%s: %s; treating every page as allowed", origin, robots.note)
        return robots

    async def _download_robots(self, url: str) -> Robots:
        current = httpx.URL(url)
        for _ in range(self._config.max_redirects + 1):
            self._check(str(current))
            response = await self._send(self._client_request(current))
            try:
                status = response.status_code
                location = response.headers.get("location")
                if status in _REDIRECT_CODES and location:
                    current = response.url.join(location)
                    continue
                if 400 <= status < 500:
                    return Robots.allow_all()  # no robots.txt (or none for us): no rules
                if not 200 <= status < 300:
                    return Robots.allow_all(f"robots.txt answered HTTP {status}")
                data = await self._read_body(response, ROBOTS_MAX_BYTES)
            finally:
                await response.aclose()
            return Robots.parse(data.decode("utf-8", "replace"))
        return Robots.allow_all("robots.txt: too many redirects")

    def _client_request(
        self, url: httpx.URL, headers: dict[str, str] | None = None
    ) -> httpx.Request:
        assert self._client is not None
        return self._client.build_request("GET", url, headers=headers)

    async def _read_body(self, response: httpx.Response, cap: int | None = None) -> bytes:
        """The decoded body, refusing anything over ``cap`` (``max_page_bytes``) as it shows."""
        return (await read_body(response, self._config.max_page_bytes if cap is None else cap))[0]

    async def _fetch_for_browser(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> Fetched:
        """One request of the browser's, made by sleuth's guarded client.

        Redirects are followed here, every hop checked like a page's (Chromium never
        sees a redirect, whose hops Playwright would not let us check); the body is
        read under ``max_page_bytes`` like a page's. Not paced: a page's scripts and
        data come together, as in any browser.
        """
        assert self._client is not None
        current = url
        for _ in range(self._config.max_redirects + 1):
            self._check(current)
            response = await self._client.send(
                self._client.build_request(method, current, headers=headers, content=body),
                stream=True,
            )
            try:
                status = response.status_code
                location = response.headers.get("location")
                if status in _REDIRECT_CODES and location:
                    target = response.url.join(location)
                    if target.host != response.url.host:
                        # As browsers do: credentials do not follow a request to another host.
                        headers = {
                            k: v
                            for k, v in headers.items()
                            if k.lower() not in ("cookie", "authorization")
                        }
                    if status == 303 or (status in (301, 302) and method == "POST"):
                        method, body = ("HEAD" if method == "HEAD" else "GET"), None
                    current = str(target)
                    continue
                data = await self._read_body(response)
                return Fetched(
                    url=str(response.url),
                    status=status,
                    headers=tuple(response.headers.multi_items()),
                    body=data,
                )
            finally:
                await response.aclose()
        raise Unreadable("too many redirects")

    async def _download(
        self, url: str, conditional: tuple[str, Validators] | None = None
    ) -> _Download:
        """GET ``url``, following up to ``max_redirects`` redirects by hand."""
        assert self._client is not None
        self._check(url)  # before httpx parses it at all
        current = httpx.URL(url.strip())
        seen: set[str] = set()
        for _ in range(self._config.max_redirects + 1):
            # Every hop is checked; the guarded transport re-checks its addresses too.
            self._check(str(current))
            if self._config.respect_robots:
                await self._polite.obey_robots(str(current))
            seen.add(str(current.copy_with(fragment=None)))
            # Ask "changed since?" only of the URL the cached page really came from.
            ask = conditional is not None and str(current) == conditional[0]
            headers = conditional[1].headers() if conditional is not None and ask else None
            response = await self._send(self._client_request(current, headers))
            try:
                status = response.status_code
                if status == 304 and ask:
                    raise NotModified(validators_of(response.headers))
                location = response.headers.get("location")
                if status in _REDIRECT_CODES and location:
                    current = response.url.join(location)
                    if str(current.copy_with(fragment=None)) in seen:
                        raise Unreadable("redirect loop", status)
                    continue
                if not 200 <= status < 300:
                    raise Unreadable(f"HTTP {status}", status)
                mime, charset = parse_content_type(response.headers.get("content-type", ""))
                if mime not in ACCEPTED_TYPES:
                    raise Unreadable(f"unsupported content type {mime}", status)
                data, complete = await read_body(response, self._config.max_page_bytes)
                return _Download(
                    url=str(response.url),
                    status=status,
                    mime=mime,
                    charset=charset,
                    data=data,
                    validators=validators_of(response.headers),
                    incomplete=not complete,
                    address=_peer(response),
                )
            finally:
                await response.aclose()
        raise Unreadable("too many redirects")
