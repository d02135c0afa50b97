"""Fetching: turn URLs into ``Page`` records (or ``FetchFailure`` saying why not).

``Fetcher`` does the network work behind an SSRF guard (:mod:`~sleuth.fetch.guard`),
politely (:mod:`~sleuth.fetch.politeness`), with an optional page cache
(:mod:`~sleuth.fetch.cache`) and browser (:mod:`~sleuth.fetch.browser`); the text comes
from :mod:`sleuth.extraction`. ``check_url`` and ``is_public_address`` are the guard's
checks, usable on their own. ``extract``, ``Extracted`` and ``pdf_text`` are
:mod:`sleuth.extraction`'s, named here too.
"""

from sleuth.extraction import Extracted, extract, pdf_text
from sleuth.fetch.fetcher import Fetcher, RunFetcher, fetch_page
from sleuth.fetch.guard import check_url, is_public_address

__all__ = [
    "Extracted",
    "Fetcher",
    "RunFetcher",
    "check_url",
    "extract",
    "fetch_page",
    "is_public_address",
    "pdf_text",
]
