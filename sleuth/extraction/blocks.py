"""Block-level main-text extraction, part one: cut a page into text blocks and describe each.

trafilatura is tuned for articles; on forum threads, product pages, listings and
marketing pages it drops much of what a reader came for (posts filed as
"comments", spec tables, item titles). This module gives every run of text on the
page (a *block*: the inline content of one block-level element) a feature vector
— its words and links, the tags and class names above it, how often its structure
repeats on the page, whether trafilatura kept it (on the pages where it runs, see
:func:`reads_trafilatura`), what kind of page it sits on —
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

import bisect
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

__all__ = [
    "ARTICLE_SIGNALS",
    "BLOCK_TAGS",
    "CELLS",
    "DROP_TAGS",
    "HEADINGS",
    "N_FEATURES",
    "N_LANDMARKS",
    "N_OWN",
    "N_PAGE_SIGNALS",
    "PRODUCT_SIGNALS",
    "TRAFILATURA_COLUMNS",
    "Block",
    "Head",
    "clean_tree",
    "features",
    "in_chrome",
    "is_menu",
    "page_signals",
    "read_head",
    "reads_trafilatura",
    "segment",
    "trigrams",
]

# URL path / schema.org hints for the kind of page (feature order).
_URL_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (n, re.compile(rx))
    for n, rx in (
        (
            "forum",
            r"forum|thread|topic|/t/|discuss|community|question|/r/|/comments/|answers|board",
        ),
        ("product", r"product|/p/|/dp/|/item|/sku|/shop/[^/]+/|/buy"),
        ("listing", r"categor|collection|/c/|/shop/?$|search|browse|/list|/tag/|/archive|/best"),
        ("docs", r"docs?/|documentation|/api|reference|/guide|/manual|/learn|/wiki|readthedocs"),
        ("article", r"blog|news|article|/20\d\d/|story|post/|/posts/"),
    )
)
_LD_KINDS = (
    ("forum", ("DiscussionForumPosting", "QAPage", "Question", "Comment")),
    ("product", ("Product", "Offer", "AggregateOffer")),
    ("listing", ("ItemList", "CollectionPage", "SearchResultsPage", "OfferCatalog")),
    ("docs", ("TechArticle", "APIReference", "SoftwareSourceCode", "HowTo")),
    ("article", ("Article", "NewsArticle", "BlogPosting", "Report")),
)


_DIGIT = re.compile(r"\d")


# ---------------------------------------------------------------- page signals


def _ld_types(html: str) -> set[str]:
    types: set[str] = set()
    head = html[:2_000_000]
    # Each pattern searched only where its literal start is (``in`` finds that several
    # times quicker than the regex does, and most pages have one of the two at most).
    found = re.finditer(r'"@type"\s*:\s*(\[[^\]]*\]|"[^"]*")', head) if '"@type"' in head else ()
    for match in found:
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                types.add(item.rsplit("/", 1)[-1])
    if 'itemtype="http' in head:
        for match in re.finditer(r'itemtype="https?://schema\.org/(\w+)"', head):
            types.add(match.group(1))
    return types


@dataclass(frozen=True)
class Head:
    """What a page's ``<head>`` says about it: its title and its og:type."""

    title: str = ""
    og_type: str = ""


def read_head(tree: Any) -> Head:
    """The page's title and og:type; call it before :func:`clean_tree`, which drops the head."""
    return Head(
        title=tree.findtext(".//title") or "",
        og_type=tree.xpath("string(//meta[@property='og:type']/@content)").lower(),
    )


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
# Which page signals say "article": schema.org Article types, og:type article.
ARTICLE_SIGNALS = (len(_URL_KINDS) + 4, len(_URL_KINDS) + len(_LD_KINDS))


# Page signals (see page_signals): an article-like URL path (blog, news, /2019/, ...),
# and which say "product": the schema.org Product/Offer types and og:type product.
_URL_ARTICLE = 4
PRODUCT_SIGNALS = (len(_URL_KINDS) + 1, len(_URL_KINDS) + len(_LD_KINDS) + 1)


def reads_trafilatura(signals: Any) -> bool:
    """Whether a page with these :func:`page_signals` is extracted with trafilatura's text
    as a feature: one that says it is an article or a product, or whose URL looks like
    an article's.

    Elsewhere the block model does as well without it (WCXB tune, cross-validated by
    site, on the 559 pages that do not say they are articles: 0.805, against 0.803
    with it), and running trafilatura was more than half of sleuth's time on a page
    (bench/NOTEBOOK.md). Articles lose precision without it, and products recall:
    they keep the ensemble that reads it.
    """
    return bool(
        any(signals[i] for i in ARTICLE_SIGNALS)
        or signals[_URL_ARTICLE]
        or any(signals[i] for i in PRODUCT_SIGNALS)
    )


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


_TAG_GROUPS = {
    "p": 0,
    "li": 1,
    "tr": 2,
    "table": 2,
    "h1": 3,
    "h2": 3,
    "h3": 3,
    "h4": 4,
    "h5": 4,
    "h6": 4,
    "div": 5,
    "section": 5,
    "article": 5,
    "main": 5,
    "td": 2,
    "dd": 6,
    "dt": 6,
    "dl": 6,
    "pre": 7,
    "blockquote": 8,
    "figcaption": 9,
    "figure": 9,
    "a": 10,
    "span": 10,
    "button": 11,
    "summary": 11,
    "legend": 11,
    "caption": 9,
    "body": 12,
    "br": 12,
}
N_TAG_GROUPS = 13


_END_MARKS = frozenset(".!?")
_LEGAL = re.compile(r"©|copyright|all rights reserved|cookie|privacy", re.I)


def _word_count(text: str, tokens: list[str]) -> int:
    """The words of ``text``; ``tokens`` are its lowercased words (see :attr:`Block.tokens`)."""
    if len(text) <= _OVERLAP_CHARS and text.isascii():
        return len(tokens)  # lowercasing ASCII changes no word boundary
    return len(_WORD.findall(text))


# What every match of _LEGAL holds, as ``str.lower`` gives it: none of these letters has
# a case-insensitive match other than its two ASCII cases ("cookie"'s k and i have more).
_LEGAL_LITERALS = ("\u00a9", "copyr", "all r", "coo", "vacy")


def _legal(texts: list[str]) -> list[bool]:
    """Whether each text has a legal or cookie notice (``_LEGAL``).

    The regex (case-insensitive, an alternation) is slow to scan with: it runs only on
    the texts that hold one of :data:`_LEGAL_LITERALS`, found in all of them at once.
    """
    joined = "\n".join(texts)
    low = joined.lower()
    if len(low) != len(joined):  # (a letter lowercased into two: no offsets to go by)
        return [_LEGAL.search(t) is not None for t in texts]
    ends = list(itertools.accumulate(len(t) + 1 for t in texts))
    maybe: set[int] = set()
    for literal in _LEGAL_LITERALS:
        at = low.find(literal)
        while at >= 0:
            maybe.add(bisect.bisect_right(ends, at))
            at = low.find(literal, at + 1)
    legal = [False] * len(texts)
    for i in maybe:
        legal[i] = _LEGAL.search(texts[i]) is not None
    return legal


def _digits(text: str) -> int:
    """How many decimal digits ``text`` has (as ``\\d`` counts them)."""
    if text.isascii():
        return sum(map(text.count, "0123456789"))
    return len(_DIGIT.findall(text))


def _digit_counts(texts: list[str]) -> np.ndarray:
    """How many decimal digits each text has (:func:`_digits`), counted in all at once."""
    try:
        codes = np.frombuffer("".join(texts).encode("utf-32-le"), dtype=np.uint32)
    except UnicodeEncodeError:  # a lone surrogate: one text at a time
        return np.array([_digits(t) for t in texts], dtype=float)
    bounds = np.zeros(len(texts) + 1, dtype=np.intp)
    np.cumsum([len(t) for t in texts], out=bounds[1:])
    ascii_digits = np.zeros(len(codes) + 1, dtype=np.intp)
    np.cumsum((codes >= 48) & (codes <= 57), out=ascii_digits[1:])
    wide = np.zeros(len(codes) + 1, dtype=np.intp)
    np.cumsum(codes >= 128, out=wide[1:])
    counts = (ascii_digits[bounds[1:]] - ascii_digits[bounds[:-1]]).astype(float)
    # Beyond ASCII, ``\d`` knows other scripts' digits: those texts are counted by it.
    for i in np.flatnonzero(wide[bounds[1:]] - wide[bounds[:-1]]):
        counts[i] = _digits(texts[i])
    return counts


def _indices(keys: list[Any]) -> tuple[np.ndarray, int]:
    """Each key's number (first seen, first numbered) and how many distinct keys."""
    numbers: dict[Any, int] = dict.fromkeys(keys, 0)  # in the order first seen
    for number, key in enumerate(numbers):
        numbers[key] = number
    got = np.fromiter(map(numbers.__getitem__, keys), dtype=np.intp, count=len(keys))
    return got, len(numbers)


def _text_columns(blocks: list[Block], texts: list[str], words: np.ndarray) -> np.ndarray:
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
    cols[:, 7] = _digit_counts(texts) / np.maximum(1, [len(t) for t in texts])
    cols[:, 8] = _legal(texts)
    same_text, distinct = _indices(texts)
    cols[:, 9] = np.log1p(np.bincount(same_text, minlength=distinct)[same_text])
    same_sig, distinct = _indices([b.signature for b in blocks])
    cols[:, 10] = np.log1p(np.bincount(same_sig, minlength=distinct)[same_sig])
    cols[:, 11] = np.bincount(same_sig, weights=words, minlength=distinct)[same_sig] / total
    return cols


def _container_columns(blocks: list[Block], words: np.ndarray, link: np.ndarray) -> np.ndarray:
    """For the containers 2, 3, 5 and 8 levels above each block: their share of the
    page's words, and how much of their text is links."""
    total = max(1.0, words.sum())
    depths = np.fromiter((len(b.nodes) for b in blocks), dtype=np.intp, count=len(blocks))
    flat = np.fromiter(
        itertools.chain.from_iterable(b.nodes for b in blocks),
        dtype=np.intp,
        count=int(depths.sum()),
    )
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


def _trafilatura_columns(
    rows: np.ndarray, tokens: list[list[str]], traf_main: str, traf_comments: str, total: float
) -> None:
    """Fill in (in place) each block's share in trafilatura's main text and comments, and
    the page's share of words in its main text."""
    main_n, comm_n = _norm(traf_main[:_OVERLAP_CHARS]), _norm(traf_comments[:_OVERLAP_CHARS])
    main_g, comm_g = _grams(main_n.split()), _grams(comm_n.split())
    main_p, comm_p = f" {main_n} ", f" {comm_n} "
    rows[:, 12] = [_share_in(tok, main_p, main_g) for tok in tokens]
    if comm_n:  # (most pages have no comments: no block is in them)
        rows[:, 13] = [_share_in(tok, comm_p, comm_g) for tok in tokens]
    rows[:, _TRAFILATURA_SHARE] = _count_words(traf_main, main_n) / total


def features(
    blocks: list[Block],
    head: Head,
    signals: list[float],
    traf_main: str | None,
    traf_comments: str | None,
) -> np.ndarray:
    """One row of features per block (see module docstring); the columns are fixed.

    ``signals`` are the page's :func:`page_signals`. ``traf_main`` and ``traf_comments``
    are trafilatura's text of the page, or None where it was not run: its columns
    (:data:`TRAFILATURA_COLUMNS`) are then 0.

    Computed a column at a time (numpy over all blocks), which is several times
    quicker than a row at a time and gives the very same numbers.
    """
    n = len(blocks)
    rows = np.zeros((n, N_FEATURES))
    if not n:
        return rows
    texts = [b.text for b in blocks]
    tokens = [b.tokens for b in blocks]
    words = np.array(
        [_word_count(t, tok) for t, tok in zip(texts, tokens, strict=True)], dtype=float
    )
    total = max(1.0, words.sum())
    rows[:, :12] = _text_columns(blocks, texts, words)
    if traf_main is not None:
        _trafilatura_columns(rows, tokens, traf_main, traf_comments or "", total)
    at = 14
    rows[np.arange(n), at + np.array([_TAG_GROUPS.get(b.tag, 5) for b in blocks])] = 1.0
    at += N_TAG_GROUPS
    rows[:, at : at + N_LANDMARKS + len(_HINTS)] = np.minimum(
        np.array([b.ctx for b in blocks], dtype=float), 3.0
    )
    at += N_LANDMARKS + len(_HINTS)
    rows[:, at : at + 8] = _container_columns(blocks, words, rows[:, 1])
    at += 8
    rows[:, at] = [len(b.path) for b in blocks]
    rows[:, at + 1] = np.log1p(total)
    # (at + 2: the page's share in trafilatura's main text, see _trafilatura_columns)
    rows[:, at + 3] = np.log1p(n)
    # Where the page's own title sits: what comes before the first <h1> is mostly chrome.
    cum = np.cumsum(words) - words
    first_h1 = next((i for i, b in enumerate(blocks) if b.tag == "h1"), None)
    title_at = float(cum[first_h1]) if first_h1 is not None else 0.0
    title_n = _norm(head.title)
    rows[:, at + 4] = (cum - title_at) / total
    rows[:, at + 5] = [bool(tok) and " ".join(tok) in title_n for tok in tokens]
    at += 6
    rows[:, at:N_OWN] = signals
    # Neighbours: the same few signals for the previous and next blocks.
    base = rows[:, _NEIGHBOUR_COLS]
    rows[1:, N_OWN : N_OWN + base.shape[1]] = base[:-1]
    rows[:-1, N_OWN + base.shape[1] :] = base[1:]
    return rows


N_OWN = 14 + N_TAG_GROUPS + N_LANDMARKS + len(_HINTS) + 8 + 4 + 2 + N_PAGE_SIGNALS
# log words, link density, in trafilatura main, in comments
_NEIGHBOUR_COLS = [0, 1, 12, 13]
N_FEATURES = N_OWN + 2 * len(_NEIGHBOUR_COLS)
_IN_TRAFILATURA = (12, 13)
_TRAFILATURA_SHARE = N_OWN - N_PAGE_SIGNALS - 4  # (the third of the page's own columns)
#: The columns read from trafilatura's text: the block's share in its main text and in
#: its comments, the page's share of words in its main text, and the neighbours' copies
#: of the first two. They are 0 on a page extracted without trafilatura (see
#: :func:`features`), and the block model's ``plain`` ensemble never reads them.
TRAFILATURA_COLUMNS = (
    *_IN_TRAFILATURA,
    _TRAFILATURA_SHARE,
    *(N_OWN + i for i, c in enumerate(_NEIGHBOUR_COLS) if c in _IN_TRAFILATURA),
    *(
        N_OWN + len(_NEIGHBOUR_COLS) + i
        for i, c in enumerate(_NEIGHBOUR_COLS)
        if c in _IN_TRAFILATURA
    ),
)
