"""A page's title and date from its metadata, and trafilatura's justext stoplist held once.

Both as trafilatura reads them, for :mod:`sleuth.extraction.html`; callers hold the
extraction lock (see there).
"""

from __future__ import annotations

import logging
from html import unescape
from typing import Any

from sleuth.extraction.text import normalize_text

__all__ = ["page_meta", "share_justext_stoplist"]

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


_justext_shared = False


def share_justext_stoplist() -> None:
    """Hold trafilatura's justext stoplist once, as the set justext wants.

    On a page whose language it is not told, trafilatura runs justext with the union
    of justext's ~100 stoplists (154k words), built on first use as a tuple; justext
    then makes (and caches) its own lowercased frozenset of it, keyed by the tuple,
    hashing all 154k words again on every call. So the union was held twice, 31 MB
    (the largest part of a run's peak memory), from the first page, about one in
    five, that falls back to justext. Here it is built, still on first use, as the
    frozenset justext would make, and justext uses that very set as it is; other
    stoplists go through justext's own conversion. Same words, same classification,
    15 MB. Called under the trafilatura lock; if either library has changed shape,
    nothing is touched.
    """
    global _justext_shared
    if _justext_shared:
        return
    _justext_shared = True
    try:
        import justext.core
        import trafilatura.external
        from justext.utils import get_stoplist, get_stoplists

        convert = justext.core.define_stoplist
        if not callable(getattr(trafilatura.external, "jt_stoplist_init", None)):
            return
    except Exception:  # an optimisation only: trafilatura works without it
        log.debug("justext's stoplist left as trafilatura builds it", exc_info=True)
        return
    union: frozenset[str] = frozenset()

    def jt_stoplist_init() -> frozenset[str]:
        nonlocal union
        union = frozenset(
            word.lower() for language in get_stoplists() for word in get_stoplist(language)
        )
        # trafilatura types it as a tuple; justext only iterates it or tests membership.
        trafilatura.external.JT_STOPLIST = union  # type: ignore[assignment]
        return union

    def define_stoplist(stoplist: Any) -> Any:
        return stoplist if stoplist is union and union else convert(stoplist)

    if trafilatura.external.JT_STOPLIST:  # trafilatura built its tuple before us:
        union = convert(trafilatura.external.JT_STOPLIST)  # justext's copy (maybe cached)
        trafilatura.external.JT_STOPLIST = union
        getattr(convert, "cache_clear", lambda: None)()  # the tuple's copy goes with it
    trafilatura.external.jt_stoplist_init = jt_stoplist_init  # type: ignore[assignment]
    justext.core.define_stoplist = define_stoplist
