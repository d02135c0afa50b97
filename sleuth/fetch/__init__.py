"""Fetching: turn URLs into ``Page`` records (or ``FetchFailure`` saying why not).

``Fetcher`` does the network work behind an SSRF guard (:mod:`~sleuth.fetch.guard`),
politely (:mod:`~sleuth.fetch.politeness`), with an optional page cache
(:mod:`~sleuth.fetch.cache`) and browser (:mod:`~sleuth.fetch.browser`); the text comes
from :mod:`sleuth.extraction`. ``check_url`` and ``is_public_address`` are the guard's
checks, usable on their own. ``extract``, ``Extracted`` and ``pdf_text`` are
:mod:`sleuth.extraction`'s, named here too.

The names load on first use, so that importing one small module of this package
(``sleuth.fetch.cache``, which the store's adapters need) does not import the fetcher,
the guard and their HTTP stack on a run's way to its first search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleuth._lazy import lazy_exports

if TYPE_CHECKING:
    from sleuth.extraction import Extracted, extract, pdf_text
    from sleuth.fetch.config import FetchConfig
    from sleuth.fetch.fetcher import Fetcher, RunFetcher, fetch_page
    from sleuth.fetch.guard import check_url, is_public_address

_EXPORTS = {
    "Extracted": "sleuth.extraction",
    "extract": "sleuth.extraction",
    "pdf_text": "sleuth.extraction",
    "FetchConfig": "sleuth.fetch.config",
    "Fetcher": "sleuth.fetch.fetcher",
    "RunFetcher": "sleuth.fetch.fetcher",
    "fetch_page": "sleuth.fetch.fetcher",
    "check_url": "sleuth.fetch.guard",
    "is_public_address": "sleuth.fetch.guard",
}

__all__ = [
    "Extracted",
    "FetchConfig",
    "Fetcher",
    "RunFetcher",
    "check_url",
    "extract",
    "fetch_page",
    "is_public_address",
    "pdf_text",
]


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
