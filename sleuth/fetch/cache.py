"""The fetcher's page cache, seen from the fetcher: what it keeps, and how a stale page is
revalidated.

A :class:`PageCache` (the run store implements it) is consulted before the network: a
fresh entry answers as it is; a stale page that has :class:`Validators` (its ETag and
Last-Modified) is asked for again with a conditional request, and a 304 answer
(:class:`NotModified`) makes it fresh again; anything else stale is fetched again. The
cache never costs a page: a lookup or write that fails is logged, not raised.
:class:`LocalDocuments` is the other seam: the only way a ``file://`` URL is read.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from sleuth.errors import ConfigError
from sleuth.models import FetchFailure, Page

__all__ = [
    "CachedResult",
    "LocalDocuments",
    "NotModified",
    "PageCache",
    "Validators",
    "cache_failed",
    "lookup",
    "quietly",
    "validators_of",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Validators:
    """What a server gave to revalidate a page with: its ETag and Last-Modified headers."""

    etag: str | None = None
    last_modified: str | None = None

    def headers(self) -> dict[str, str]:
        """The conditional request headers these validators allow (empty: none)."""
        found = {"If-None-Match": self.etag, "If-Modified-Since": self.last_modified}
        return {name: value for name, value in found.items() if value}


@dataclass(frozen=True)
class CachedResult:
    """What a :class:`PageCache` knows about one URL.

    ``fresh``: use ``result`` as it is. A stale :class:`Page` is revalidated with a
    conditional request when it has ``validators`` (a 304 reuses it); anything else
    stale is fetched again. ``public``: whether the result is known to come from a
    public address (see :meth:`Fetcher.usable`); None when that is not known.
    """

    result: Page | FetchFailure
    fresh: bool
    validators: Validators = field(default_factory=Validators)
    public: bool | None = None


class PageCache(Protocol):
    """Where a :class:`Fetcher` keeps pages between runs (the run store implements it)."""

    async def get(self, url: str) -> CachedResult | None:
        """The last fetch of ``url`` (keyed by its canonical form), or None."""

    async def put(
        self,
        url: str,
        result: Page | FetchFailure,
        validators: Validators,
        *,
        public: bool | None = None,
    ) -> None:
        """Remember a fresh fetch of ``url`` (page or failure), and whether it is known to
        come from a public address (to hand back as ``CachedResult.public``)."""

    async def revalidated(self, url: str, validators: Validators) -> None:
        """The server answered 304 for ``url``: its cached page is fresh again."""


class LocalDocuments(Protocol):
    """Reads ``file://`` URLs from an index of local documents, never from the network."""

    async def read(self, url: str) -> Page | FetchFailure:
        """The indexed document at ``url``, or why it cannot be read."""


class NotModified(Exception):
    """The server answered 304 to a conditional request."""

    def __init__(self, validators: Validators) -> None:
        super().__init__("not modified")
        self.validators = validators


def validators_of(headers: Mapping[str, str]) -> Validators:
    """The validators a response's headers carry (ETag, Last-Modified)."""
    return Validators(etag=headers.get("etag"), last_modified=headers.get("last-modified"))


async def lookup(cache: PageCache | None, url: str) -> CachedResult | None:
    """``cache``'s entry for ``url``; None without a cache, or when the lookup fails."""
    if cache is None:
        return None
    try:
        return await cache.get(url)
    except Exception as exc:  # a broken cache costs a download, never the page
        cache_failed(f"page cache lookup failed for {url}", exc)
        return None


async def quietly(call: Coroutine[Any, Any, None]) -> None:
    """Await a cache write; a failing one is logged, since the page was read all the same."""
    try:
        await call
    except Exception as exc:
        cache_failed("page cache write failed", exc)


def cache_failed(what: str, exc: Exception) -> None:
    # A ConfigError is the cache's file or disk (full, damaged): its owner says so once
    # (a research at its end), not once per page. Anything else is a bug: a traceback.
    if isinstance(exc, ConfigError):
        log.debug("%s: %s", what, exc)
    else:
        log.warning("%s", what, exc_info=exc)
