"""Block-level main-text extraction, part one: cut a page into text blocks and describe each.

trafilatura is tuned for articles; on forum threads, product pages, listings and
marketing pages it drops much of what a reader came for (posts filed as
"comments", spec tables, item titles). This module gives every run of text on the
page (a *block*: the inline content of one block-level element) a feature vector
— its words and links, the tags and class names above it, how often its structure
repeats on the page, whether trafilatura kept it, what kind of page it sits on —
and a small gradient-boosted tree model (``sleuth/data/block_model.json``, trained on the tune
part of WCXB by ``bench/train_extractor.py``) says how likely it is main text.

Which blocks to keep is decided per page: those that maximise the page's expected
F1 under the model's own probabilities (``best_keep``), so that a grid of items the
model is lukewarm about is kept whole; a page that says it is an article uses the
model's one fixed cutoff. Then a few rules a reader would insist on: no list of
links inside ``<nav>``, ``<footer>``, a menu or a dialog is kept; a long passage
said twice is kept once; on an article page, teasers after the article's end are
dropped.

The model is trained on labels from an in-order alignment of each page's words with
its true main text (``bench/train_extractor.py: block_labels``), so a menu entry
whose word also occurs in the body is not taught as main text.

:mod:`sleuth.extraction.walk` cuts the page into blocks (:func:`segment`, re-exported
here); this module computes their features (:func:`features`);
:mod:`sleuth.extraction.model` scores them and picks the text. Pure Python plus lxml and
numpy; callers hold the extraction lock.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from sleuth.extraction.walk import (
    _HINTS,
    _OVERLAP_CHARS,
    _WORD,
    BLOCK_TAGS,
    CELLS,
    DROP_TAGS,
    HEADINGS,
    N_LANDMARKS,
    Block,
    clean_tree,
    in_chrome,
    is_menu,
    segment,
)

__all__ = ["BLOCK_TAGS", "CELLS", "DROP_TAGS", "HEADINGS", "N_FEATURES", "N_LANDMARKS",
           "N_OWN", "N_PAGE_SIGNALS", "Block", "Head", "clean_tree", "features", "in_chrome",
           "is_menu", "page_signals", "read_head", "segment", "trigrams"]

# URL path / schema.org hints for the kind of page (feature order).
_URL_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((n, re.compile(rx)) for n, rx in (
    ("forum", r"forum|thread|topic|/t/|discuss|community|question|/r/|/comments/|answers|board"),
    ("product", r"product|/p/|/dp/|/item|/sku|/shop/[^/]+/|/buy"),
    ("listing", r"categor|collection|/c/|/shop/?$|search|browse|/list|/tag/|/archive|/best"),
    ("docs", r"docs?/|documentation|/api|reference|/guide|/manual|/learn|/wiki|readthedocs"),
    ("article", r"blog|news|article|/20\d\d/|story|post/|/posts/"),
))
_LD_KINDS = (("forum", ("DiscussionForumPosting", "QAPage", "Question", "Comment")),
             ("product", ("Product", "Offer", "AggregateOffer")),
             ("listing", ("ItemList", "CollectionPage", "SearchResultsPage", "OfferCatalog")),
             ("docs", ("TechArticle", "APIReference", "SoftwareSourceCode", "HowTo")),
             ("article", ("Article", "NewsArticle", "BlogPosting", "Report")))


_DIGIT = re.compile(r"\d")


# ---------------------------------------------------------------- page signals


def _ld_types(html: str) -> set[str]:
    types: set[str] = set()
    for match in re.finditer(r'"@type"\s*:\s*(\[[^\]]*\]|"[^"]*")', html[:2_000_000]):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                types.add(item.rsplit("/", 1)[-1])
    for match in re.finditer(r'itemtype="https?://schema\.org/(\w+)"', html[:2_000_000]):
        types.add(match.group(1))
    return types


@dataclass(frozen=True)
class Head:
    """What a page's ``<head>`` says about it: its title and its og:type."""

    title: str = ""
    og_type: str = ""


def read_head(tree: Any) -> Head:
    """The page's title and og:type; call it before :func:`clean_tree`, which drops the head."""
    return Head(title=tree.findtext(".//title") or "",
                og_type=tree.xpath("string(//meta[@property='og:type']/@content)").lower())


def page_signals(html: str, url: str | None, head: Head) -> list[float]:
    """What kind of page this looks like: URL words, schema.org types, og:type."""
    path = urlsplit(url or "").path.lower() + ("?" + urlsplit(url or "").query if url else "")
    signals = [1.0 if pattern.search(path) else 0.0 for _, pattern in _URL_KINDS]
    types = _ld_types(html)
    signals += [1.0 if types & set(names) else 0.0 for _, names in _LD_KINDS]
    signals += [float("article" in head.og_type), float("product" in head.og_type)]
    signals.append(float(path.strip("/?") == ""))  # a site's home page
    return signals


N_PAGE_SIGNALS = len(_URL_KINDS) + len(_LD_KINDS) + 3


# ---------------------------------------------------------------- features


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def trigrams(tokens: list[str]) -> Iterator[tuple[str, str, str]]:
    # zip over shifted lists (of unequal lengths, by design): a third of the time of
    # slicing a tuple out at each position.
    return zip(tokens, tokens[1:], tokens[2:], strict=False)


def _grams(tokens: list[str]) -> set[tuple[str, str, str]]:
    return set(trigrams(tokens))


def _share_in(tokens: list[str], padded: str, grams: set[tuple[str, str, str]]) -> float:
    """How much of a block another extraction kept: its trigrams, or for short blocks its
    words (found in ``padded``, the other extraction's ``_norm`` with a space either side)."""
    if len(tokens) < 3:
        return float(bool(tokens) and f" {' '.join(tokens)} " in padded)
    kept = sum(map(grams.__contains__, trigrams(tokens)))
    return kept / (len(tokens) - 2)


def _count_words(text: str, norm: str) -> int:
    """The words of ``text``, given ``norm``, the ``_norm`` of its first _OVERLAP_CHARS."""
    if len(text) <= _OVERLAP_CHARS:
        # norm is all its words, space-joined: no second regex pass (the count differs
        # only where lowercasing splits a letter in two, as Turkish İ).
        return norm.count(" ") + 1 if norm else 0
    return sum(1 for _ in _WORD.finditer(text))


_TAG_GROUPS = {"p": 0, "li": 1, "tr": 2, "table": 2, "h1": 3, "h2": 3, "h3": 3, "h4": 4,
               "h5": 4, "h6": 4, "div": 5, "section": 5, "article": 5, "main": 5, "td": 2,
               "dd": 6, "dt": 6, "dl": 6, "pre": 7, "blockquote": 8, "figcaption": 9,
               "figure": 9, "a": 10, "span": 10, "button": 11, "summary": 11, "legend": 11,
               "caption": 9, "body": 12, "br": 12}
N_TAG_GROUPS = 13


_END_MARKS = frozenset(".!?")
_LEGAL = re.compile(r"©|copyright|all rights reserved|cookie|privacy", re.I)


def _word_count(text: str, tokens: list[str]) -> int:
    """The words of ``text``; ``tokens`` are its lowercased words (see :attr:`Block.tokens`)."""
    if len(text) <= _OVERLAP_CHARS and text.isascii():
        return len(tokens)  # lowercasing ASCII changes no word boundary
    return len(_WORD.findall(text))


def _digits(text: str) -> int:
    """How many decimal digits ``text`` has (as ``\\d`` counts them)."""
    if text.isascii():
        return sum(map(text.count, "0123456789"))
    return len(_DIGIT.findall(text))


def _indices(keys: list[Any]) -> tuple[np.ndarray, int]:
    """Each key's number (first seen, first numbered) and how many distinct keys."""
    numbers: dict[Any, int] = dict.fromkeys(keys, 0)  # in the order first seen
    for number, key in enumerate(numbers):
        numbers[key] = number
    got = np.fromiter(map(numbers.__getitem__, keys), dtype=np.intp, count=len(keys))
    return got, len(numbers)


def _text_columns(blocks: list[Block], texts: list[str], words: np.ndarray
                  ) -> np.ndarray:
    """Columns 0-11: words, links, position, hidden, cells, punctuation, digits, legal
    words, and how often the block's text and its structure repeat on the page."""
    n = len(blocks)
    total = max(1.0, words.sum())
    cols = np.empty((n, 12))
    cols[:, 0] = np.log1p(words)
    cols[:, 1] = [b.link_chars / max(1, b.chars) for b in blocks]
    cols[:, 2] = (np.cumsum(words) - words) / total
    cols[:, 3] = [b.hidden for b in blocks]
    cols[:, 4] = [b.cells for b in blocks]
    cols[:, 5] = [not _END_MARKS.isdisjoint(t[-2:]) for t in texts]
    cols[:, 6] = [t.count(".") + t.count("?") + t.count("!") for t in texts]
    cols[:, 7] = [_digits(t) / max(1, len(t)) for t in texts]
    cols[:, 8] = [_LEGAL.search(t) is not None for t in texts]
    same_text, distinct = _indices(texts)
    cols[:, 9] = np.log1p(np.bincount(same_text, minlength=distinct)[same_text])
    same_sig, distinct = _indices([b.signature for b in blocks])
    cols[:, 10] = np.log1p(np.bincount(same_sig, minlength=distinct)[same_sig])
    cols[:, 11] = np.bincount(same_sig, weights=words, minlength=distinct)[same_sig] / total
    return cols


def _container_columns(blocks: list[Block], words: np.ndarray, link: np.ndarray
                       ) -> np.ndarray:
    """For the containers 2, 3, 5 and 8 levels above each block: their share of the
    page's words, and how much of their text is links."""
    total = max(1.0, words.sum())
    depths = np.fromiter((len(b.nodes) for b in blocks), dtype=np.intp, count=len(blocks))
    flat = np.fromiter(itertools.chain.from_iterable(b.nodes for b in blocks), dtype=np.intp,
                       count=int(depths.sum()))
    size = int(flat.max()) + 1 if len(flat) else 0
    # Summed in block order, as a loop over the blocks would.
    under = np.bincount(flat, weights=np.repeat(words, depths), minlength=size)
    linked = np.bincount(flat, weights=np.repeat(words * link, depths), minlength=size)
    cols = np.empty((len(blocks), 8))
    first = np.cumsum(depths) - depths  # where each block's nodes begin in ``flat``
    for j, k in enumerate((2, 3, 5, 8)):
        at = flat[np.where(depths >= k, first + depths - k, first)]
        cols[:, 2 * j] = under[at] / total
        cols[:, 2 * j + 1] = linked[at] / np.maximum(1.0, under[at])
    return cols


def features(blocks: list[Block], html: str, url: str | None, head: Head,
             traf_main: str, traf_comments: str) -> np.ndarray:
    """One row of features per block (see module docstring); the columns are fixed.

    Computed a column at a time (numpy over all blocks), which is several times
    quicker than a row at a time and gives the very same numbers.
    """
    n = len(blocks)
    rows = np.zeros((n, N_FEATURES))
    if not n:
        return rows
    texts = [b.text for b in blocks]
    tokens = [b.tokens for b in blocks]
    words = np.array([_word_count(t, tok) for t, tok in zip(texts, tokens, strict=True)],
                     dtype=float)
    total = max(1.0, words.sum())
    rows[:, :12] = _text_columns(blocks, texts, words)
    main_n, comm_n = _norm(traf_main[:_OVERLAP_CHARS]), _norm(traf_comments[:_OVERLAP_CHARS])
    main_g, comm_g = _grams(main_n.split()), _grams(comm_n.split())
    main_p, comm_p = f" {main_n} ", f" {comm_n} "
    rows[:, 12] = [_share_in(tok, main_p, main_g) for tok in tokens]
    if comm_n:  # (most pages have no comments: no block is in them)
        rows[:, 13] = [_share_in(tok, comm_p, comm_g) for tok in tokens]
    at = 14
    rows[np.arange(n), at + np.array([_TAG_GROUPS.get(b.tag, 5) for b in blocks])] = 1.0
    at += N_TAG_GROUPS
    rows[:, at:at + N_LANDMARKS + len(_HINTS)] = np.minimum(
        np.array([b.ctx for b in blocks], dtype=float), 3.0)
    at += N_LANDMARKS + len(_HINTS)
    rows[:, at:at + 8] = _container_columns(blocks, words, rows[:, 1])
    at += 8
    rows[:, at] = [len(b.path) for b in blocks]
    rows[:, at + 1] = np.log1p(total)
    rows[:, at + 2] = _count_words(traf_main, main_n) / total
    rows[:, at + 3] = np.log1p(n)
    # Where the page's own title sits: what comes before the first <h1> is mostly chrome.
    cum = np.cumsum(words) - words
    first_h1 = next((i for i, b in enumerate(blocks) if b.tag == "h1"), None)
    title_at = float(cum[first_h1]) if first_h1 is not None else 0.0
    title_n = _norm(head.title)
    rows[:, at + 4] = (cum - title_at) / total
    rows[:, at + 5] = [bool(tok) and " ".join(tok) in title_n for tok in tokens]
    at += 6
    rows[:, at:N_OWN] = page_signals(html, url, head)
    # Neighbours: the same few signals for the previous and next blocks.
    base = rows[:, _NEIGHBOUR_COLS]
    rows[1:, N_OWN:N_OWN + base.shape[1]] = base[:-1]
    rows[:-1, N_OWN + base.shape[1]:] = base[1:]
    return rows


N_OWN = 14 + N_TAG_GROUPS + N_LANDMARKS + len(_HINTS) + 8 + 4 + 2 + N_PAGE_SIGNALS
# log words, link density, in trafilatura main, in comments
_NEIGHBOUR_COLS = [0, 1, 12, 13]
N_FEATURES = N_OWN + 2 * len(_NEIGHBOUR_COLS)
