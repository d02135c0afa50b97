"""Block-level main-text extraction, part two: the block model scores the blocks and picks
the text.

The trees are small gradient-boosted ensembles (``sleuth/data/block_model.json``,
trained by ``bench/train_extractor.py``) over the features of :mod:`sleuth.extraction.blocks`:
``blocks`` for the pages extracted with trafilatura's text as a feature (those that say
they are articles or products, or have an article's URL), ``plain`` for the others,
trained with those columns at 0 (retrained 2026-11-26, bench/README.md: trafilatura was
more than half of a page's time, and elsewhere the model does as well without it).
Which blocks to keep is decided per page: those that maximise the page's expected F1
under the model's own probabilities (:func:`best_keep`); a page that says it is an
article uses the model's one fixed cutoff. Then the rules a reader would insist on (see
:func:`select_text`). Pure Python plus numpy; callers hold the extraction lock.
"""

from __future__ import annotations

import json
import re
from collections import deque
from importlib.resources import files
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np

from sleuth import tuned
from sleuth.extraction.blocks import (
    ARTICLE_SIGNALS,
    HEADINGS,
    N_OWN,
    N_PAGE_SIGNALS,
    PRODUCT_SIGNALS,
    Block,
    in_chrome,
    is_menu,
    reads_trafilatura,
    trigrams,
)

# ---------------------------------------------------------------- the model

_MODELS: dict[str, Any] = {}


class Trees(NamedTuple):
    """One ensemble of regression trees, as flat node arrays (see ``bench/_fit_blocks.py``).

    Node i tests ``X[feature[i]] <= threshold[i]``; ``feature[i] < 0`` marks a leaf. The
    last fields are the same trees arranged for :func:`predict`.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    baseline: float
    depth: int
    #: Both children of each node, right then left (a leaf's are itself), so that one
    #: step is ``child[2 * node + went_left]``.
    child: np.ndarray
    #: The column each node tests (0 at a leaf) and its threshold (+inf at a leaf:
    #: every value "goes left", back to the leaf).
    test: np.ndarray
    cut: np.ndarray
    #: The trees deepest first, and how many of them are still walking at each level.
    order: np.ndarray
    walking: tuple[int, ...]


def _tree_depths(
    feature: np.ndarray, left: np.ndarray, right: np.ndarray, roots: np.ndarray
) -> np.ndarray:
    """The number of splits on the longest path of each tree."""
    depths = np.zeros(len(roots), dtype=np.intp)
    nodes, tree = roots, np.arange(len(roots))
    level = 0
    while len(nodes):
        split = feature[nodes] >= 0
        nodes, tree = nodes[split], tree[split]
        level += 1
        depths[tree] = level  # trees with a split at this level are at least this deep
        nodes, tree = np.concatenate([left[nodes], right[nodes]]), np.concatenate([tree, tree])
    return depths


def _trees(spec: dict[str, Any]) -> Trees:
    def get(field: str, dtype: Any) -> np.ndarray:
        return np.asarray(spec[field], dtype=dtype)

    feature, threshold = get("feature", np.intp), get("threshold", float)
    left, right, roots = get("left", np.intp), get("right", np.intp), get("roots", np.intp)
    leaf = feature < 0
    itself = np.arange(len(feature))
    child = np.empty(2 * len(feature), dtype=np.intp)
    child[0::2] = np.where(leaf, itself, right)
    child[1::2] = np.where(leaf, itself, left)
    depths = _tree_depths(feature, left, right, roots)
    order = np.argsort(-depths, kind="stable")
    walking = tuple(int((depths > level).sum()) for level in range(int(depths.max(initial=0))))
    return Trees(
        feature,
        threshold,
        left,
        right,
        get("value", float),
        roots,
        float(spec["baseline"]),
        int(spec["depth"]),
        child,
        np.where(leaf, 0, feature),
        np.where(leaf, np.inf, threshold),
        order,
        walking,
    )


def _load_models() -> dict[str, Any]:
    """The trained tree ensemble as numpy arrays (empty when none is installed).

    The trees are package data (``sleuth/data/block_model.json``, written by
    ``bench/train_extractor.py``), read once, on the first page extracted.
    """
    if not _MODELS:
        try:
            raw = (files("sleuth") / "data" / "block_model.json").read_text(encoding="utf-8")
        except OSError:
            return _MODELS
        doc = json.loads(raw)
        trees = _trees(doc["blocks"])
        plain = _trees(doc["plain"]) if "plain" in doc else trees
        _MODELS.update(trees=trees, plain=plain, cutoff=(float(doc["cutoff"]),))
    return _MODELS


# Blocks scored at once: the (blocks x trees) arrays of one chunk stay in the CPU's cache,
# and a page of 280,000 blocks costs megabytes, not gigabytes (one array per tree level).
_PREDICT_CHUNK = 256


def predict(trees: Trees, matrix: np.ndarray) -> np.ndarray:
    """Probabilities from one ensemble of regression trees (log-odds summed, then squashed).

    Every tree is walked for a chunk of blocks at once, one level per step; at each
    level only the trees that still have a split there take the step (they come first
    in ``trees.order``). The leaves are summed in the ensemble's own order, so the
    result is exactly that of walking each tree for each block.
    """
    raw = np.empty(len(matrix))
    roots = trees.roots[trees.order]
    back = np.argsort(trees.order)
    for start in range(0, len(matrix), _PREDICT_CHUNK):
        chunk = np.ascontiguousarray(matrix[start : start + _PREDICT_CHUNK], dtype=float)
        flat = chunk.ravel()
        rows = (np.arange(len(chunk)) * chunk.shape[1])[:, None]
        nodes = np.broadcast_to(roots, (len(chunk), len(roots))).copy()
        # (ndarray.take: the same gathers as indexing, without its general machinery)
        for walking in trees.walking:
            at = nodes[:, :walking]
            went_left = flat.take(rows + trees.test.take(at)) <= trees.cut.take(at)
            nodes[:, :walking] = trees.child.take(2 * at + went_left)
        leaves = nodes.take(back, axis=1)
        raw[start : start + len(chunk)] = trees.baseline + trees.value.take(leaves).sum(axis=1)
    return np.asarray(1.0 / (1.0 + np.exp(-raw)))


def scores(matrix: np.ndarray) -> np.ndarray:
    """The model's probability that each block is main text.

    A page that says it is an article or a product, or whose URL looks like an
    article's, is scored by the ensemble that reads trafilatura's text (``blocks``); any
    other page, extracted without running trafilatura, by the one trained with those
    columns at 0 (``plain``; see :func:`sleuth.extraction.blocks.reads_trafilatura`).
    """
    models = _load_models()
    if not models or not len(matrix):
        return np.zeros(len(matrix))
    with_trafilatura = reads_trafilatura(matrix[0, _PAGE_AT:N_OWN])
    return predict(models["trees" if with_trafilatura else "plain"], matrix)


# Column of the block's share in trafilatura's main text; first column of page signals.
_IN_MAIN = 12
_PAGE_AT = N_OWN - N_PAGE_SIGNALS
_ARTICLE_SIGNALS = tuple(_PAGE_AT + i for i in ARTICLE_SIGNALS)  # Article types, og:type
_PRODUCT_SIGNALS = tuple(_PAGE_AT + i for i in PRODUCT_SIGNALS)  # Product/Offer, og:type
_FORUM_SIGNAL = _PAGE_AT + 5  # schema.org DiscussionForumPosting, QAPage, ...


def _block_words(matrix: np.ndarray) -> np.ndarray:
    """Each block's word count (the features hold it as log1p, in column 0)."""
    words: np.ndarray = np.expm1(matrix[:, 0])
    return words


def _declares_article(matrix: np.ndarray) -> bool:
    """Whether the page says it is an article (schema.org Article types or og:type)."""
    return bool(len(matrix) and matrix[0, list(_ARTICLE_SIGNALS)].any())


# A short article (trafilatura found 50-150 words) is often a news brief above a ticker
# of headlines and dates; after its end only what the model is sure of is kept.
_SHORT_ARTICLE_WORDS = 50
_LONG_ARTICLE_WORDS = 150
_SURE_AFTER_SHORT = tuned.SURE_AFTER_SHORT


def _within_article(matrix: np.ndarray, keep: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """On an article page, drop kept blocks after trafilatura's article ends (or well before).

    Teasers of related stories look like listing items to the model; on a page that
    says it is an article and where trafilatura found a real article (150 words or
    more), they are not main text. After a short article, blocks stay only at
    probability 0.8 or more: a list article whose intro alone trafilatura found keeps
    its list, and a brief loses its ticker. The 0.8 lies between what WCXB tune
    prefers (0.6-0.7) and AEB (0.8 or more); figures in bench/NOTEBOOK.md.
    """
    if not len(keep) or not _declares_article(matrix):
        return keep
    words = _block_words(matrix)
    inside = matrix[:, _IN_MAIN] >= 0.5
    # The article's span is where trafilatura kept passages of five words or more: a
    # lone "About" link it kept in the footer must not stretch the span over the
    # teasers in between.
    span = np.flatnonzero(inside & (words >= 5))
    found = words[inside].sum()
    if not len(span) or found < _SHORT_ARTICLE_WORDS:
        return keep
    trimmed = keep.copy()
    if found < _LONG_ARTICLE_WORDS:
        trimmed[span[-1] + 1 :] &= prob[span[-1] + 1 :] >= _SURE_AFTER_SHORT
        return trimmed
    trimmed[: span[0]] = False
    trimmed[span[-1] + 1 :] = False
    return trimmed


# A class or id naming customer reviews ("preview" is a thumbnail, not a review).
_REVIEWS = re.compile(r"(?<!p)review", re.I)
# Past this share of the page's words, the "reviews" are the page: a review site's body.
_REVIEWS_MAX_SHARE = 0.6


def _without_reviews(blocks: list[Block], matrix: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """On a product page, drop kept blocks inside its customer reviews.

    The main text of a product page is what its seller says: name, description,
    specifications. Visitors' reviews are kept out, as comments are under an article
    (a forum thread, where the posts are the page, is not touched). They can outweigh
    the product's own text (IKEA's KALLAX shelf: 300 words, and 720 of reviews), and a
    citation of the seller's page should not point at them. WCXB: 7% of the text under
    a "review" class or id on product pages is main text (77% on articles; the gain
    on products is in bench/NOTEBOOK.md). A page whose ``<h1>`` sits inside the reviews, or where
    they hold most of its words, is a review itself and is left alone.
    """
    if not len(keep) or _declares_article(matrix) or matrix[0, _FORUM_SIGNAL]:
        return keep
    if not matrix[0, list(_PRODUCT_SIGNALS)].any():
        return keep
    # Blocks share their ancestors (held alive by block.path, so id() is stable): each
    # element's class and id are read once.
    named: dict[int, bool] = {}

    def is_reviews(node: Any) -> bool:
        hit = named.get(id(node))
        if hit is None:
            hit = named[id(node)] = bool(
                _REVIEWS.search(f"{node.get('class') or ''} {node.get('id') or ''}")
            )
        return hit

    reviews = np.fromiter(
        (any(map(is_reviews, block.path)) for block in blocks), dtype=bool, count=len(blocks)
    )
    if not reviews.any():
        return keep
    heading = next((i for i, block in enumerate(blocks) if block.tag == "h1"), None)
    words = _block_words(matrix)
    if (heading is not None and reviews[heading]) or words[
        reviews
    ].sum() >= _REVIEWS_MAX_SHARE * words.sum():
        return keep
    kept: np.ndarray = keep & ~reviews
    return kept


# The lowest probability a kept block may have, whatever the page's best cutoff says.
_FLOOR = tuned.KEEP_FLOOR


def best_keep(prob: np.ndarray, words: np.ndarray, floor: float = _FLOOR) -> np.ndarray:
    """The blocks to keep: those that maximise the page's expected F1.

    One fixed cutoff suits some pages and not others (a product grid's items sit at
    0.3, an article's paragraphs at 0.9). Taking each probability as the chance that
    the block is main text, keeping the k likeliest blocks has expected overlap
    ``TP = sum(p·w)`` over them, and expected F1 ``2·TP / (kept words + expected main
    words)``; the best k is one pass over the sorted blocks. It helps collections,
    listings and forums most (WCXB; figures in bench/NOTEBOOK.md).
    """
    if not len(prob):
        return np.zeros(0, dtype=bool)
    order = np.argsort(-prob, kind="stable")
    overlap = np.cumsum(prob[order] * words[order])
    kept = np.cumsum(words[order])
    f1 = 2 * overlap / (kept + float((prob * words).sum()) + 1e-9)
    cut = max(floor, float(prob[order][int(np.argmax(f1))]))
    return prob >= cut


def model_keeps(prob: np.ndarray, matrix: np.ndarray, cutoff: float) -> np.ndarray:
    """The blocks the model keeps, before the rules of :func:`select_text`.

    A page that says it is an article has one body, and the one fixed ``cutoff`` finds
    it cleaner than the page's own cutoff would; every other page gets its own
    (:func:`best_keep`).
    """
    if _declares_article(matrix):
        return prob >= cutoff
    return best_keep(prob, _block_words(matrix))


# A wiki's section edit link that stayed in its heading's text ("Software [edit]"; the
# element itself is dropped before, see html._drop_edit_links).
_EDIT_LINK = re.compile(r"\s*\[\s*edit(?:\s*\|\s*edit source)?\s*\]$", re.I)


def select_text(blocks: list[Block], matrix: np.ndarray) -> str:
    """The text of the blocks the model keeps, one block a line, in page order."""
    models = _load_models()
    if not models or not blocks:
        return ""
    prob = scores(matrix)
    keep = _within_article(matrix, model_keeps(prob, matrix, models["cutoff"][0]), prob)
    keep = _without_reviews(blocks, matrix, keep)
    lines: list[str] = []
    # Each trigram already kept, with the parent element of the block that first had it.
    seen: dict[tuple[str, str, str], int] = {}
    for block, kept in zip(blocks, keep, strict=True):
        # Menus are never main text, whatever the model says: a menu-only page must come
        # out empty. Prose inside <nav> or <footer> is left to the model: some sites wrap
        # their whole content in one (WCXB held-out: dropping it cost 0.005 F1).
        if not kept or is_menu(block):
            continue
        text = block.text
        # A long passage said twice in different places is a copy (a mobile and a desktop
        # layout of the same article): keep the first. Said again under the same parent,
        # it is the author's (a meal plan's five days, a contract's repeated clause; AEB
        # +0.002). Short lines ("Yes", "2 kg") repeat legitimately in tables, so only
        # blocks of eight words or more are compared, by their word trigrams (a copy may
        # be cut into blocks differently).
        tokens = block.tokens
        if len(tokens) >= 8:
            grams = list(trigrams(tokens))
            parent = id(block.path[-2]) if len(block.path) > 1 else 0
            # (map over dict methods: the loops run in C, on every kept block)
            owners = list(map(seen.get, grams, repeat(parent)))
            if len(owners) - owners.count(parent) >= 0.8 * len(grams):
                continue
            deque(map(seen.setdefault, grams, repeat(parent)), maxlen=0)
        if block.tag in HEADINGS:
            text = _EDIT_LINK.sub("", text) or text
            if lines:
                lines.append("")
        lines.append(text)
    return "\n".join(lines)


def without_chrome(text: str, blocks: list[Block]) -> str:
    """``text`` less the lines that are the text of a navigation, footer or dialog block."""
    chrome = {block.text for block in blocks if in_chrome(block)}
    if not chrome:
        return text
    return "\n".join(line for line in text.split("\n") if line.strip() not in chrome)
