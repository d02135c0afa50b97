"""A page's title and date from its metadata.

Both as trafilatura reads them, for :mod:`sleuth.extraction.html`; callers hold the
extraction lock (see there).
"""

from __future__ import annotations

import logging
from html import unescape
from typing import Any

from sleuth.extraction.text import normalize_text

__all__ = ["page_meta"]

log = logging.getLogger(__name__)


def _html_title(tree: Any) -> str | None:
    if tree is None:
        return None
    for xpath in ("//title", "//h1"):
        for node in tree.xpath(xpath):
            title = normalize_text(node.text_content())
            if title:
                return title
    return None


def page_meta(tree: Any, url: str | None) -> tuple[str | None, str | None]:
    """The page's title and publication date, found as trafilatura's metadata pass does.

    Title: the page's meta tags (og:title and kin), then its JSON-LD, then its
    ``<title>`` and headings, and failing those ``_html_title``. Date: htmldate, with
    the page's own canonical URL. Reads ``tree`` without changing it; never raises.
    """
    if tree is None:
        return None, None
    try:
        from htmldate import find_date
        from trafilatura import metadata as meta_pass
        from trafilatura.utils import line_processing

        meta = meta_pass.examine_meta(tree)
        # JSON-LD gives a title only to a page whose meta tags gave none (trafilatura's
        # extract_meta_json sets no title over one, and no URL): read only then.
        if not meta.title:
            meta = _with_json_ld(tree, meta, url)
        # As trafilatura's own clean-up: entities, control characters, runs of space.
        title = line_processing(unescape(meta.title or meta_pass.extract_title(tree) or ""))
        page_url = meta.url or meta_pass.extract_url(tree, url)
        # No "extensive search": it reads "Copyright 2024" as a publication date.
        date = find_date(tree, url=page_url, extensive_search=False, original_date=True)
        return title or _html_title(tree), date
    except MemoryError:  # not a reading of the page: the caller must see it
        raise
    except Exception:  # metadata is a nicety: a hostile head must not cost the text
        log.debug("no title or date read from %s", url, exc_info=True)
        return _html_title(tree), None


def _with_json_ld(tree: Any, meta: Any, url: str | None) -> Any:
    """``meta`` with what trafilatura reads from the page's JSON-LD (unchanged where it fails)."""
    from trafilatura import metadata as meta_pass

    try:
        return meta_pass.extract_meta_json(tree, meta)
    except MemoryError:  # not a reading of the page: the caller must see it
        raise
    except Exception:  # trafilatura guards this call the same way: bad JSON-LD
        log.debug("JSON-LD metadata unreadable on %s", url, exc_info=True)
        return meta
