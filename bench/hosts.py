"""Which host of the benchmark world serves each page: its real site, as on the web.

On the web many pages share a few big hosts (an encyclopedia, the news sites, forums),
and sleuth's per-host rules (``--host-delay``, ``--per-host-concurrency``,
``--max-pages-per-host``, one source per site) bind there. The world therefore serves
each page on the host of its real site (``--hosts site``, the default):

* every HotpotQA paragraph is an article of one encyclopedia, ``wikipedia.org``;
* a page whose URL on the web is known is on the host of that URL's registered domain
  (``www.nytimes.com`` and ``nytimes.com`` are one site): the tests' corpus articles
  (their original URL, or for those saved from Readability's or Postlight's pages, the
  canonical link or the fixture's name), AEB's articles, WCXB's pages, Readability's
  pages with a canonical link, Postlight's fixtures;
* a page whose URL is unknown is on the site its name gives (a Readability case less
  its number, ``nytimes-3`` → ``nytimes``; a corpus document's first word), which is a
  known site when one has that name (``nytimes`` → ``nytimes.com``), else a host of its
  own (``rtl.example``).

Each site is one loopback address with one port, so sleuth sees one host. ``--hosts
page`` gives every page its own address instead (the world before 2026-11-28), to
compare with figures measured on it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol

from sleuth.urls import registered_domain

__all__ = ["ENCYCLOPEDIA", "HOST_MODES", "Sited", "address", "assign_sites", "by_site"]

#: The site of every HotpotQA paragraph.
ENCYCLOPEDIA = "wikipedia.org"
#: ``site``: pages on their real sites' hosts; ``page``: every page on a host of its own.
HOST_MODES = ("site", "page")


class Sited(Protocol):
    """What :func:`assign_sites` reads and writes of a page."""

    kind: str
    key: str
    origin: str
    site: str


def _name(page: Sited) -> str:
    """The site name a page's own name gives, for a page whose URL is unknown."""
    if page.kind == "hotpotqa":
        return ENCYCLOPEDIA
    if page.kind == "readability":
        return re.sub(r"-\d+$", "", page.key)
    if page.kind == "corpus":
        return page.key.split("-", 1)[0]
    return page.key


def assign_sites(pages: Iterable[Sited]) -> None:
    """Set every page's ``site`` (see the module docstring)."""
    pages = list(pages)
    for page in pages:
        page.site = (
            ENCYCLOPEDIA
            if page.kind == "hotpotqa"
            else (registered_domain(page.origin) if page.origin else "")
        )
    known: dict[str, str] = {}
    for site in sorted({p.site for p in pages if p.site}):
        known.setdefault(site.split(".", 1)[0], site)
    for page in pages:
        if not page.site:
            name = _name(page)
            page.site = known.get(name, f"{name}.example")


def by_site(pages: Sequence[Sited]) -> list[tuple[str, list[Sited]]]:
    """The pages grouped by site, sites in name order, pages in their given order."""
    groups: dict[str, list[Sited]] = {}
    for page in pages:
        groups.setdefault(page.site, []).append(page)
    return sorted(groups.items())


def address(index: int) -> str:
    """The loopback address of the ``index``-th site (127.10.0.1 onwards)."""
    return f"127.{10 + index // 62_500}.{index // 250 % 250}.{index % 250 + 1}"
