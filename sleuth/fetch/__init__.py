"""The fetch stage: turn ranked URLs into ``Page`` records (or ``FetchFailure``).

``Fetcher`` does the network work behind an SSRF guard; ``extract`` and
``pdf_text`` turn bytes into text; ``check_url`` and ``is_public_address`` are
the guard's checks, usable on their own.
"""

from sleuth.fetch.extract import Extracted, extract, pdf_text
from sleuth.fetch.fetcher import Fetcher, fetch_page
from sleuth.fetch.guard import check_url, is_public_address

__all__ = [
    "Extracted",
    "Fetcher",
    "check_url",
    "extract",
    "fetch_page",
    "is_public_address",
    "pdf_text",
]
