"""What a reader of a page never sees, dropped before extraction; what React streams, placed.

:func:`_drop_hidden` removes elements hidden by an inline style or the ``hidden``
attribute (where pages put text meant for models or search engines), keeps closed tabs
and accordions, and first moves React's streamed segments where their scripts put them
(:func:`_place_streamed`). :mod:`sleuth.extraction.html` applies it to its tree.
"""

from __future__ import annotations

import re
from typing import Any

from sleuth import tuned

# Elements a reader never sees. Cheap test first: most pages have none of these.
# Three searches, most often found first: one search of all three (an alternation,
# case-insensitive) tried each at every character, 0.7 ms on a median page's HTML.
_HIDDEN_HINTS = (
    re.compile(r"display\s*:\s*none", re.I),
    re.compile(r"\shidden[\s>=/]", re.I),
    re.compile(r"visibility\s*:\s*hidden", re.I),
)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
#: A hidden element holding more of the page's text than this is content a script
#: reveals (an app shell, an anti-flicker wrapper), not something hidden from readers.
_HIDDEN_MAX_SHARE = tuned.HIDDEN_MAX_SHARE
# A closed tab, accordion or collapsed section is hidden only until the reader clicks:
# a product's description tab, a quickstart's code for each language, FAQ answers.
_PANEL_HINT = re.compile(r"tab-?pane|tab-?panel|tab-?content|accordion|collaps|faq|answer", re.I)


def _hints_hidden(html: str) -> bool:
    """Whether ``html`` says anywhere that something is hidden (inline style, attribute)."""
    return any(hint.search(html) for hint in _HIDDEN_HINTS)


def _one_click_away(node: Any) -> bool:
    """A closed tab, accordion or collapsed section, which the reader opens with a click."""
    if node.get("role") == "tabpanel" or node.get("aria-labelledby"):
        return True
    return bool(_PANEL_HINT.search(f"{node.get('class') or ''} {node.get('id') or ''}"))


def _readable_chars(node: Any) -> int:
    """Characters of text under ``node`` that a reader could see: not scripts or styles.

    A page's inline scripts can outweigh its text a hundred to one (a store's state as
    JSON), and must not make the whole article look like a small part of the page.
    """
    code = sum(len(inner.text_content()) for inner in node.iter("script", "style"))
    return len(node.text_content()) - code


# The elements of <body> that may be hidden: an inline style or the ``hidden`` attribute.
# (``//body//*``, said as the one step libxml2 walks quicker.)
_MAY_HIDE = "//body/descendant::*[@style or @hidden]"


def _drop_hidden(tree: Any, html: str) -> bool:
    """Drop from ``tree`` (parsed from ``html``) what a reader never sees; whether it changed.

    Text hidden from people is where pages put instructions meant for models and
    keyword stuffing meant for search engines; a reader of the page never saw it.
    Kept: closed tabs and accordions (one click away), and the parts of the page that
    React streams in hidden and a script moves into place (:func:`_place_streamed`):
    dropping those emptied whole articles, quickstarts and product grids.
    """
    if not _hints_hidden(html):
        return False
    nodes = tree.xpath(_MAY_HIDE)
    # React's segments are among them (one walk of the tree for both); placed, they are
    # not where they were, so the elements that may hide are looked up again.
    segments = [
        node
        for node in nodes
        if node.get("hidden") is not None and (node.get("id") or "").startswith("S:")
    ]
    changed = _place_streamed(tree, html, segments)
    if changed:
        nodes = tree.xpath(_MAY_HIDE)
    # The page's readable text, measured when the first hidden element with text needs
    # it: most pages that hint at hidden text (CSS rules in <style> say display:none)
    # have none, and neither opening a closed tab nor dropping an element without text
    # (its tail stays) changes it, so it is what it was before the loop.
    total = 0
    for node in nodes:
        style = node.get("style") or ""
        if node.get("hidden") is None and not _HIDDEN_STYLE.search(style):
            continue
        if _one_click_away(node):
            # Opened, as the reader would: trafilatura and the block model skip hidden text.
            node.attrib.pop("hidden", None)
            node.set("style", _HIDDEN_STYLE.sub("", style))
            changed = True
            continue
        chars = _readable_chars(node)
        if chars:  # (an element with no text goes whatever the page holds)
            total = total or _readable_chars(tree) or 1
        if chars <= _HIDDEN_MAX_SHARE * total:
            node.drop_tree()
            changed = True
    return changed


# React's streaming server rendering sends each part of the page that was not ready in
# time as ``<div hidden id="S:1">`` at the end of the body, with a script that moves it
# into its place: ``$RC("B:1","S:1")`` fills a Suspense boundary, ``$RS("S:1","P:1")`` a
# placeholder ``<template id="P:1">``. A reader sees that text where the script puts it,
# so it is neither hidden nor at the end. WCXB: 33 of 1,497 pages, whole articles and
# product grids among them, which came out empty or as a stub.
_STREAMED = re.compile(
    r"""\$R([CS])\(\s*["']([A-Z]:[0-9a-zA-Z]+)["']\s*,\s*["']([A-Z]:[0-9a-zA-Z]+)["']"""
)


def _place_streamed(tree: Any, html: str, segments: list[Any]) -> bool:
    """Move React's streamed ``segments`` (the hidden elements of <body> whose id starts
    ``S:``, in page order) where their scripts put them (in place); whether there were any.

    Saved pages often lack the scripts; React names a segment's placeholder after it
    (``S:f`` goes to ``P:f`` or ``B:f``), so that is the guess when no script says.
    """
    if not segments:
        return False
    by_id = {node.get("id"): node for node in tree.xpath("//body//*[@id]")}
    where: dict[str, str] = {}
    for match in _STREAMED.finditer(html):
        kind, first, second = match.groups()
        segment_id, target_id = (second, first) if kind == "C" else (first, second)
        where.setdefault(segment_id, target_id)
    for segment in segments:
        segment_id = segment.get("id")
        del segment.attrib["hidden"]
        suffix = segment_id[2:]
        target = next(
            (by_id[i] for i in (where.get(segment_id), f"P:{suffix}", f"B:{suffix}") if i in by_id),
            None,
        )
        # Nested either way round (only a hostile page does that): read it where it is.
        if (
            target is None
            or target is segment
            or segment in target.iterancestors()
            or target in segment.iterancestors()
        ):
            continue
        _keep_tail(segment)
        target.addprevious(segment)
        target.drop_tree()  # the <template> placeholder; its tail stays
    return True


def _keep_tail(node: Any) -> None:
    """Hand ``node``'s tail text to what precedes it, before ``node`` moves (lxml moves it too)."""
    tail, node.tail = node.tail, None
    if not tail:
        return
    before = node.getprevious()
    if before is not None:
        before.tail = (before.tail or "") + tail
    else:
        parent = node.getparent()
        parent.text = (parent.text or "") + tail
