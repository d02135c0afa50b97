"""HTML to its main text: hidden text removed, blocks scored by the block model, with
trafilatura's choice as one of its signals on pages that say they are articles or
products (or have an article's URL), and title and date from the page's metadata.
trafilatura runs on other pages only when the model keeps nothing there.

Everything here is pure and synchronous. trafilatura (with lxml) has crashed
natively when called from many threads at once, so every call into it holds one
process-wide lock; the fetcher runs extraction in worker processes
(:mod:`sleuth.extraction.workers`), or in this process's single extraction thread.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import re
import threading
from collections.abc import Iterator
from typing import Any

from sleuth._patches import share_justext_stoplist
from sleuth.extraction._hidden import _drop_hidden, _hints_hidden
from sleuth.extraction.decode import decode_body
from sleuth.extraction.maths import keep_maths
from sleuth.extraction.meta import page_meta
from sleuth.extraction.text import Extracted, normalize_text

__all__ = ["MAX_ELEMENTS", "cut_elements", "extract", "without_hidden"]

log = logging.getLogger(__name__)

# One lock for every trafilatura/lxml call in the process (see module docstring).
_TRAFILATURA_LOCK = threading.Lock()


# ---------------------------------------------------------------- HTML

# Elements whose text is never the main content.
_NOISE_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "nav",
    "footer",
    "header",
    "aside",
    "form",
    "button",
    "select",
    "iframe",
    "object",
)
_BLOCK_TAGS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "li",
        "ul",
        "ol",
        "table",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "pre",
        "blockquote",
        "br",
        "dd",
        "dt",
        "figcaption",
        "td",
        "th",
    }
)


# lxml refuses a text that declares its encoding (an XHTML page's ``<?xml ...
# encoding="Shift_JIS"?>``): the text is decoded already, so the declaration goes.
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>")

# One parser per thread: lxml's parser objects must not be shared between threads.
_parsers = threading.local()


def _parse_html(html: str) -> Any:
    """The page as an lxml tree without its comments; None when it does not parse.

    Comments go at parse time, as in trafilatura: a site's build stamp
    (``<!-- 2026-03-05T21:00Z, build … -->``) is not the page's publication date.
    """
    from lxml import etree
    from lxml import html as lxml_html

    parser = getattr(_parsers, "html", None)
    if parser is None:
        parser = _parsers.html = lxml_html.HTMLParser(remove_comments=True)
        # Every element an HtmlElement, chosen in C: lxml.html's own lookup (forms,
        # inputs, labels get classes of their own) is a Python call for each element
        # object made, by our walk and trafilatura's, ~7% of a page's time. Nothing
        # here uses those classes' extra methods.
        parser.set_element_class_lookup(
            etree.ElementDefaultClassLookup(
                element=lxml_html.HtmlElement,
                comment=lxml_html.HtmlComment,
                pi=lxml_html.HtmlProcessingInstruction,
                entity=lxml_html.HtmlEntity,
            )
        )
    try:
        return lxml_html.document_fromstring(_XML_DECLARATION.sub("", html, count=1), parser=parser)
    except MemoryError:  # not a reading of the page: the caller must see it
        raise
    except Exception:  # lxml raises several unrelated types on garbage; any means "no tree"
        return None


def without_hidden(html: str) -> str:
    """``html`` without elements a reader never sees (inline ``display:none``,
    ``visibility:hidden``, the ``hidden`` attribute), unless they hold most of its text.

    The string form of :func:`_drop_hidden`, which :func:`extract` applies to its tree.
    """
    if not _hints_hidden(html):
        return html
    tree = _parse_html(html)
    if tree is None or not _drop_hidden(tree, html):
        return html
    from lxml import html as lxml_html

    cleaned: str = lxml_html.tostring(tree, encoding="unicode")
    return cleaned


# MediaWiki's "[edit]" beside every section heading (Wikipedia, Fandom, wiki.js sites'
# exports): a control, not the article ("Software[edit]" in the text and its passages).
_EDIT_SECTION = "//*[contains(concat(' ', normalize-space(@class), ' '), ' mw-editsection ')]"


def _drop_edit_links(tree: Any, html: str) -> None:
    """Drop MediaWiki's section edit links from ``tree`` (in place; their tails stay)."""
    if "mw-editsection" not in html:
        return
    for node in tree.xpath(_EDIT_SECTION):
        if node.getparent() is not None:
            node.drop_tree()


def _plain_text(tree: Any) -> str:
    """The text of <body> minus scripts, navigation, headers and footers."""
    if tree is None:
        return ""
    body = tree.find(".//body")
    root = body if body is not None else tree
    for node in root.xpath(".//*[@role='navigation' or @aria-hidden='true']"):
        node.drop_tree()
    for node in list(root.iter(*_NOISE_TAGS)):
        if node.getparent() is not None:
            node.drop_tree()
    for node in root.iter(*_BLOCK_TAGS):
        # Make block boundaries into line breaks so words of two blocks don't merge.
        node.tail = "\n" + (node.tail or "")
    return normalize_text(root.text_content())


def _trafilatura(html: Any, url: str | None) -> tuple[str, str]:
    """trafilatura's main text and its comments (forum posts land there), from the
    page's HTML or its lxml tree (which trafilatura changes)."""
    import trafilatura

    share_justext_stoplist()
    # Without trafilatura's metadata pass: its author, category and licence searches
    # copy the whole tree (~7 ms of ~100 a page); title and date come from page_meta.
    # Without its second opinions (readability, then justext, ``fast``): they cost about
    # a third of its time, and its text is one signal of the block model's, which reads
    # the whole page itself; F1 is unchanged within 0.001-0.004 on WCXB, AEB and
    # Readability (bench/NOTEBOOK.md, 2026-11-25).
    doc = trafilatura.bare_extraction(
        html,
        url=url,
        include_tables=True,
        include_comments=True,
        include_images=False,
        with_metadata=False,
        fast=True,
    )
    if doc is None:
        return "", ""
    if isinstance(doc, dict):  # older trafilatura returned dicts
        return doc.get("text") or "", doc.get("comments") or ""
    return doc.text or "", doc.comments or ""


def _reader_tree(html: str) -> Any:
    """The page as a reader sees it: parsed once, formulas as text
    (:func:`~sleuth.extraction.maths.keep_maths`), without hidden text or edit links.

    None when it does not parse at all.
    """
    tree = _parse_html(html)
    if tree is not None:
        if "<math" in html:  # formulas as text first: their MathML is often hidden
            keep_maths(tree)
        _drop_hidden(tree, html)
        _drop_edit_links(tree, html)
    return tree


def _block_inputs(
    html: str, url: str | None, tree: Any = None, *, with_trafilatura: bool | None = None
) -> tuple[Any, Any, str | None, str | None, str | None] | None:
    """Blocks and their features, plus trafilatura's text, title and date.

    ``tree`` is the page parsed (:func:`_reader_tree`); by default ``html`` is parsed
    as it is. trafilatura runs where :func:`sleuth.extraction.blocks.reads_trafilatura`
    says (its text is then one of the features; None where it did not run), or as
    ``with_trafilatura`` says.
    None when the page does not parse at all.
    """
    from sleuth.extraction import blocks as bx

    if tree is None:
        tree = _parse_html(html)
        if tree is None:
            return None
    # The head goes with clean_tree; what the features need from it is read first.
    head = bx.read_head(tree)
    signals = bx.page_signals(html, url, head)
    main = comments = None
    if bx.reads_trafilatura(signals) if with_trafilatura is None else with_trafilatura:
        # trafilatura copies a tree it is given before it prunes it (a copy costs a
        # fraction of a second parse of the page), so ours is read as it is, uncopied
        # (tests/test_extract.py holds trafilatura to that).
        main, comments = _trafilatura_or_nothing(tree, url)
    title, date = page_meta(tree, url)
    blocks = bx.segment(bx.clean_tree(tree))
    matrix = bx.features(blocks, head, signals, main, comments)
    return blocks, matrix, main, title, date


def _trafilatura_or_nothing(tree: Any, url: str | None) -> tuple[str, str]:
    """:func:`_trafilatura`, or no text where it fails."""
    try:
        return _trafilatura(tree, url)
    except MemoryError:  # not a reading of the page: the caller must see it
        raise
    except Exception:  # third-party parser on hostile input: any failure means "no text"
        log.debug("trafilatura failed on %s", url, exc_info=True)
        return "", ""


@contextlib.contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """Hold off Python's cycle collector while one page is extracted (callers hold the lock).

    The block walk makes tens of thousands of small objects a page (blocks, their paths,
    each element's state), and every few hundred of them started a collection pass that
    found next to nothing: lxml's elements and the blocks hold no reference cycles, so
    what extraction frees goes by reference counting; the few cycles it leaves (a handled
    exception's traceback) wait for the collector's next pass, after the page.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


#: Elements of a page that are read; the rest is cut off (see :func:`extract`). Real pages
#: have far fewer: the largest of WCXB's 1,497 and AEB's 119 pages has 15,800 tags.
MAX_ELEMENTS = 30_000
_START_TAG = re.compile(r"<[A-Za-z]")


def cut_elements(html: str, max_elements: int = MAX_ELEMENTS) -> tuple[str, bool]:
    """``html`` up to its ``max_elements``-th start tag, and whether anything was cut.

    Extraction costs about 0.1 ms and 10 KB per element, whatever the element holds:
    a 4.8 MB page of 280,000 ``<div>``s cost 33 s and 2.6 GB. The parser closes what
    the cut leaves open. Counted on the text, not a tree: no parse for the pages that
    are short enough, which is all of them but floods.
    """
    if html.count("<") <= max_elements:
        return html, False
    beyond = next(itertools.islice(_START_TAG.finditer(html), max_elements, None), None)
    if beyond is None:
        return html, False
    return html[: beyond.start()], True


def extract(
    html: str | bytes, url: str | None = None, *, max_elements: int = MAX_ELEMENTS
) -> Extracted:
    """Main text, title and date of an HTML page; never raises on any input.

    The page is cut into text blocks and a small trained model keeps the blocks
    that are main text (see :mod:`sleuth.extraction.model`), with trafilatura's own choice as one
    of its signals where the page says it is an article or a product, or has an article's
    URL (:func:`sleuth.extraction.blocks.reads_trafilatura`). When the model keeps
    nothing, trafilatura's text is used (less menu and footer lines), and failing that
    the text of ``<body>`` without scripts, navigation, headers and footers. Elements
    hidden from readers go first (:func:`without_hidden`). Garbage in gives
    ``Extracted(text="")``.

    Only the first ``max_elements`` elements are read (:func:`cut_elements`), so a
    page's cost is bounded whatever its markup; a page cut short says so in
    ``truncated``. Running out of memory raises :class:`MemoryError` (the process's
    limit, not the page's content: sleuth's extraction workers make it a page failure).
    """
    if isinstance(html, bytes):
        html = decode_body(html)
    if not html or html.isspace():  # (as ``not html.strip()``, without copying the page)
        return Extracted()
    html, cut = cut_elements(html, max_elements)
    with _TRAFILATURA_LOCK, _cycle_collector_paused():
        text, title, date = _extract_locked(html, url)
    return Extracted(
        text=text, title=normalize_text(title) if title else None, date=date, truncated=cut
    )


def _extract_locked(html: str, url: str | None) -> tuple[str, str | None, str | None]:
    """:func:`extract`'s text, title and date of a page (under the lock, collector paused).

    A function of its own so that the page's tree, blocks and feature matrix are freed
    when it returns, before the cycle collector is back on: alive then, the tens of
    thousands of objects made for the page would make its next pass walk them all,
    about 0.5 ms on a median page, for cycles they do not hold.
    """
    from sleuth.extraction import model

    try:
        tree = _reader_tree(html)
        if tree is None:
            return "", None, None
        got = _block_inputs(html, url, tree)
        assert got is not None  # a tree was given
        blocks, matrix, main, title, date = got
        text = normalize_text(model.select_text(blocks, matrix))
        if not text:
            if main is None:  # not run yet: on its own parse (the blocks' is cleaned)
                again = _reader_tree(html)
                main = _trafilatura_or_nothing(again, url)[0] if again is not None else ""
            text = normalize_text(model.without_chrome(normalize_text(main), blocks))
    except MemoryError:  # not a reading of the page: the caller must see it
        raise
    except Exception:  # hostile input must not cost the page: fall back to trafilatura
        log.debug("block extraction failed on %s", url, exc_info=True)
        text, title, date = _trafilatura_only(html, url)
    if not text:
        text = _plain_text(_reader_tree(html))
    return text, title, date


def _trafilatura_only(html: str, url: str | None) -> tuple[str, str | None, str | None]:
    tree = _reader_tree(html)
    if tree is None:
        return "", None, None
    main, _ = _trafilatura_or_nothing(tree, url)
    title, date = page_meta(tree, url)
    return normalize_text(main), title, date
