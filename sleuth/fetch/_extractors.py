"""Block-level main-text extraction: cut a page into text blocks, score each, keep the good ones.

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

Pure Python plus lxml and numpy; callers hold the extraction lock.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import numpy as np

# Elements dropped before segmentation: never readable text.
DROP_TAGS = ("script", "style", "template", "svg", "math", "iframe", "object",
             "embed", "canvas", "video", "audio", "head", "select", "option", "textarea",
             "input", "link", "meta", "base")
BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "body", "center", "dd", "details", "dialog",
    "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2",
    "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "legend", "li", "main", "menu",
    "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "thead", "tfoot", "tr",
    "ul", "caption", "br", "button"})
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Cells are inline separators inside their row, so that a spec row reads "Weight | 2 kg".
CELLS = frozenset({"td", "th"})
_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")

# Class/id/role fragments, grouped by what they usually mean. Order is the feature order.
_HINTS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((name, re.compile(rx)) for name, rx in (
    ("nav", r"nav|menu|breadcrumb|toolbar|tabs?\b|pagination|pager|skip"),
    ("header", r"header|masthead|topbar|top-bar|banner|hero"),
    ("footer", r"footer|copyright|legal|bottom"),
    ("side", r"sidebar|side-bar|aside|rail|widget|sidenav"),
    ("social", r"share|social|follow|twitter|facebook|linkedin|pinterest|whatsapp"),
    ("related", r"related|recommend|more-|also|trending|popular|suggest|upsell|carousel"),
    ("promo", r"promo|advert|\bads?\b|sponsor|newsletter|subscribe|signup|sign-up|cta"),
    ("modal", r"cookie|consent|gdpr|modal|popup|overlay|dialog|banner|toast|notice"),
    ("account", r"login|log-in|signin|sign-in|account|auth|cart|basket|checkout|wishlist"),
    ("meta", r"meta|byline|author|date|time|tags?\b|categor|label|badge|rating|avatar"),
    ("content", r"content|article|entry|main|body|text|story|prose|markdown|rte|wysiwyg"),
    ("post", r"post|comment|message|reply|replies|answer|thread|topic|discussion|review"),
    ("product", r"product|description|detail|spec|feature|price|pdp|item|sku|variant"),
    ("listing", r"list|grid|card|tile|result|teaser|collection|catalog|search"),
    ("doc", r"doc|api|reference|manual|guide|tutorial|code|highlight|syntax"),
    ("hidden", r"hidden|sr-only|visually-hidden|screen-reader|offscreen|d-none|collapse"),
))
_LANDMARKS = {"nav": 0, "header": 1, "footer": 2, "aside": 3, "form": 4, "article": 5,
              "main": 6, "table": 7, "li": 8, "a": 9, "button": 10, "label": 11,
              "blockquote": 12, "pre": 13, "code": 13, "figure": 14, "figcaption": 14,
              "dl": 15, "section": 16}
_ROLES = {"navigation": 0, "banner": 1, "contentinfo": 2, "complementary": 3, "search": 4,
          "main": 6, "article": 5, "dialog": 2, "menu": 0, "menubar": 0, "tablist": 0}
N_LANDMARKS = 17
_NAV, _FOOTER = _LANDMARKS["nav"], _LANDMARKS["footer"]
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


@dataclass
class Block:
    """One run of text: the inline content of one block-level element."""

    parts: list[str] = field(default_factory=list)
    link_chars: int = 0
    chars: int = 0
    tag: str = "div"
    ctx: tuple[int, ...] = ()
    path: tuple[Any, ...] = ()  # the ancestor elements, outermost first
    signature: str = ""
    cells: int = 0
    hidden: bool = False

    # Cached: the features and the text selection both read them. Only read once the
    # block is complete (segment() has returned); its parts never change after that.
    @functools.cached_property
    def text(self) -> str:
        return _SPACE.sub(" ", "".join(self.parts)).strip()

    @functools.cached_property
    def tokens(self) -> list[str]:
        """Its lowercased words, from at most _OVERLAP_CHARS characters of its text."""
        return _WORD.findall(self.text[:_OVERLAP_CHARS].lower())


_DIGIT = re.compile(r"\d")


@functools.lru_cache(maxsize=4096)
def _hints(attrs: str) -> tuple[int, ...]:
    """Which class/id hint groups ``attrs`` matches (pages repeat the same few a lot)."""
    return tuple(i for i, (_, pattern) in enumerate(_HINTS) if pattern.search(attrs))


def _attrs(elem: Any) -> str:
    get = elem.get
    return f"{get('class') or ''} {get('id') or ''} {get('itemprop') or ''}".lower()


def _is_hidden(elem: Any) -> bool:
    style = (elem.get("style") or "").replace(" ", "").lower()
    return (elem.get("hidden") is not None or elem.get("aria-hidden") == "true"
            or "display:none" in style or "visibility:hidden" in style)


class _Walker:
    """Cuts a cleaned lxml tree into blocks, tracking what lies above each."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.current: Block | None = None
        # Per open element: (elem, ctx counts, is_block, in_link, hidden, signature)
        self.stack: list[tuple[Any, tuple[int, ...], bool, bool, bool, str]] = []

    def _new_block(self, tag: str) -> None:
        self._flush()
        _, ctx, _, _, hidden, sig = self.stack[-1]
        self.current = Block(tag=tag, ctx=ctx, path=tuple(e[0] for e in self.stack),
                             signature=sig, hidden=hidden)

    def _flush(self) -> None:
        block = self.current
        if block is not None and block.chars and _WORD.search("".join(block.parts)):
            self.blocks.append(block)
        self.current = None

    def _add(self, text: str | None, in_link: bool) -> None:
        if not text:
            return
        if self.current is None:
            tag = next((e[0].tag for e in reversed(self.stack) if e[2]), "div")
            self._new_block(tag if isinstance(tag, str) else "div")
        block = self.current
        assert block is not None
        block.parts.append(text)
        block.chars += len(text)
        if in_link:
            block.link_chars += len(text)

    def start(self, elem: Any) -> None:
        tag = elem.tag if isinstance(elem.tag, str) else ""
        parent = self.stack[-1] if self.stack else None
        ctx = list(parent[1]) if parent else [0] * (N_LANDMARKS + len(_HINTS))
        if tag in _LANDMARKS:
            ctx[_LANDMARKS[tag]] += 1
        role = elem.get("role")
        if role in _ROLES:
            ctx[_ROLES[role]] += 1
        attrs = _attrs(elem)
        if attrs.strip():
            for i in _hints(attrs):
                ctx[N_LANDMARKS + i] += 1
        in_link = (parent[3] if parent else False) or tag == "a"
        hidden = (parent[4] if parent else False) or _is_hidden(elem)
        cls = (elem.get("class") or "").split()
        sig = f"{parent[5] if parent else ''}/{tag}.{cls[0] if cls else ''}"
        is_block = tag in BLOCK_TAGS
        self.stack.append((elem, tuple(ctx), is_block, in_link, hidden, sig[-300:]))
        if is_block:
            self._new_block(tag)
        elif tag in CELLS and self.current is not None and self.current.chars:
            self.current.parts.append(" | ")
            self.current.cells += 1
        self._add(elem.text, in_link)

    def end(self, elem: Any) -> None:
        _, _, is_block, _, _, _ = self.stack.pop()
        if is_block:
            self._flush()
        elif elem.tag in CELLS and self.current is not None:
            self.current.parts.append(" ")
        if self.stack:
            self._add(elem.tail, self.stack[-1][3])


def _etree() -> Any:
    # Imported by name: lxml ships no type stubs, and this module needs none.
    return importlib.import_module("lxml.etree")


def segment(tree: Any) -> list[Block]:
    """The page's text blocks in document order (the tree is left as it is)."""
    etree = _etree()
    body = tree.find(".//body")
    root = body if body is not None else tree
    walker = _Walker()
    for event, elem in etree.iterwalk(root, events=("start", "end")):
        if not isinstance(elem.tag, str):  # comments and processing instructions
            if event == "end" and walker.stack and elem.tail:
                walker._add(elem.tail, walker.stack[-1][3])
            continue
        if event == "start":
            walker.start(elem)
        else:
            walker.end(elem)
    walker._flush()
    return walker.blocks


def clean_tree(tree: Any) -> Any:
    """Drop the elements that never hold readable text (in place).

    A ``<noscript>`` with real text in it stays: some sites (Discourse forums among
    them) serve the whole page there to readers without JavaScript, as we are.
    """
    etree = _etree()
    etree.strip_elements(tree, *DROP_TAGS, etree.Comment, with_tail=False)
    for node in list(tree.iter("noscript")):
        if len(_WORD.findall(node.text_content())) < 25:
            node.drop_tree()
    return tree


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


# The word-overlap features and the duplicate check read at most this much of one text:
# a page's text is cut to --max-chars (30,000 by default) anyway, and the trigrams of a
# 2 MB one-line page cost ~60 MB of tuples (bench/hostile.py's long_line case).
_OVERLAP_CHARS = 200_000


def _trigrams(tokens: list[str]) -> Iterator[tuple[str, str, str]]:
    # zip over shifted lists (of unequal lengths, by design): a third of the time of
    # slicing a tuple out at each position.
    return zip(tokens, tokens[1:], tokens[2:], strict=False)


def _grams(tokens: list[str]) -> set[tuple[str, str, str]]:
    return set(_trigrams(tokens))


def _share_in(tokens: list[str], norm: str, grams: set[tuple[str, str, str]]) -> float:
    """How much of a block another extraction kept: its trigrams, or for short blocks its words."""
    if len(tokens) < 3:
        return float(bool(tokens) and f" {' '.join(tokens)} " in f" {norm} ")
    kept = sum(map(grams.__contains__, _trigrams(tokens)))
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


def features(blocks: list[Block], html: str, url: str | None, head: Head,
             traf_main: str, traf_comments: str) -> np.ndarray:
    """One row of features per block (see module docstring); the columns are fixed."""
    n = len(blocks)
    texts = [b.text for b in blocks]
    words = np.array([len(_WORD.findall(t)) for t in texts], dtype=float)
    link = np.array([b.link_chars / max(1, b.chars) for b in blocks])
    total = max(1.0, words.sum())
    # Words under each element, and linked words, for container features.
    under: defaultdict[int, float] = defaultdict(float)
    linked: defaultdict[int, float] = defaultdict(float)
    for b, w, ld in zip(blocks, words, link, strict=True):
        for elem in b.path:
            under[id(elem)] += w
            linked[id(elem)] += w * ld
    sig_count = Counter(b.signature for b in blocks)
    sig_words: defaultdict[str, float] = defaultdict(float)
    for b, w in zip(blocks, words, strict=True):
        sig_words[b.signature] += w
    text_count = Counter(texts)
    main_n, comm_n = _norm(traf_main[:_OVERLAP_CHARS]), _norm(traf_comments[:_OVERLAP_CHARS])
    main_g, comm_g = _grams(main_n.split()), _grams(comm_n.split())
    page = page_signals(html, url, head)
    traf_share = _count_words(traf_main, main_n) / total
    rows = np.zeros((n, N_FEATURES))
    cum = np.cumsum(words) - words
    first_h1 = next((i for i, b in enumerate(blocks) if b.tag == "h1"), None)
    title_at = float(cum[first_h1]) if first_h1 is not None else 0.0
    title_n = _norm(head.title)
    for i, b in enumerate(blocks):
        t = texts[i]
        tokens = b.tokens
        f: list[float] = [
            np.log1p(words[i]), link[i], cum[i] / total, float(b.hidden), b.cells,
            sum(c in ".!?" for c in t[-2:]) > 0, t.count(".") + t.count("?") + t.count("!"),
            len(_DIGIT.findall(t)) / max(1, len(t)),
            float(bool(re.search(r"©|copyright|all rights reserved|cookie|privacy", t, re.I))),
            np.log1p(text_count[t]), np.log1p(sig_count[b.signature]),
            sig_words[b.signature] / total,
            _share_in(tokens, main_n, main_g), _share_in(tokens, comm_n, comm_g),
        ]
        tag_onehot = [0.0] * N_TAG_GROUPS
        tag_onehot[_TAG_GROUPS.get(b.tag, 5)] = 1.0
        f += tag_onehot
        f += [float(min(c, 3)) for c in b.ctx]
        path = b.path
        for k in (2, 3, 5, 8):  # containers k levels above the block
            elem = path[-k] if len(path) >= k else path[0]
            uw = under[id(elem)]
            f += [uw / total, linked[id(elem)] / max(1.0, uw)]
        f += [len(path), np.log1p(total), traf_share, np.log1p(n)]
        # Where the page's own title sits: what comes before the first <h1> is mostly chrome.
        f += [(cum[i] - title_at) / total, float(bool(tokens) and " ".join(tokens) in title_n)]
        f += page
        rows[i, :len(f)] = f
    # Neighbours: the same few signals for the previous and next blocks.
    base = rows[:, _NEIGHBOUR_COLS]
    prev = np.vstack([np.zeros((1, base.shape[1])), base[:-1]]) if n else base
    nxt = np.vstack([base[1:], np.zeros((1, base.shape[1]))]) if n else base
    rows[:, N_OWN:N_OWN + base.shape[1]] = prev
    rows[:, N_OWN + base.shape[1]:] = nxt
    return rows

N_OWN = 14 + N_TAG_GROUPS + N_LANDMARKS + len(_HINTS) + 8 + 4 + 2 + N_PAGE_SIGNALS
# log words, link density, in trafilatura main, in comments
_NEIGHBOUR_COLS = [0, 1, 12, 13]
N_FEATURES = N_OWN + 2 * len(_NEIGHBOUR_COLS)


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


def _tree_depths(feature: np.ndarray, left: np.ndarray, right: np.ndarray,
                 roots: np.ndarray) -> np.ndarray:
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
    return Trees(feature, threshold, left, right, get("value", float), roots,
                 float(spec["baseline"]), int(spec["depth"]), child,
                 np.where(leaf, 0, feature), np.where(leaf, np.inf, threshold), order, walking)


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
        _MODELS.update(trees=_trees(doc["blocks"]), cutoff=(float(doc["cutoff"]),))
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
        chunk = np.ascontiguousarray(matrix[start:start + _PREDICT_CHUNK], dtype=float)
        flat = chunk.ravel()
        rows = (np.arange(len(chunk)) * chunk.shape[1])[:, None]
        nodes = np.broadcast_to(roots, (len(chunk), len(roots))).copy()
        for walking in trees.walking:
            at = nodes[:, :walking]
            went_left = flat[rows + trees.test[at]] <= trees.cut[at]
            nodes[:, :walking] = trees.child[2 * at + went_left]
        leaves = np.ascontiguousarray(nodes[:, back])
        raw[start:start + len(chunk)] = trees.baseline + trees.value[leaves].sum(axis=1)
    return np.asarray(1.0 / (1.0 + np.exp(-raw)))


def scores(matrix: np.ndarray) -> np.ndarray:
    """The model's probability that each block is main text."""
    models = _load_models()
    if not models or not len(matrix):
        return np.zeros(len(matrix))
    return predict(models["trees"], matrix)


# Column of the block's share in trafilatura's main text; first column of page signals.
_IN_MAIN = 12
_PAGE_AT = N_OWN - N_PAGE_SIGNALS
_ARTICLE_SIGNALS = (_PAGE_AT + 9, _PAGE_AT + 10)  # schema.org Article types, og:type article
_PRODUCT_SIGNALS = (_PAGE_AT + 6, _PAGE_AT + 11)  # schema.org Product/Offer, og:type product
_FORUM_SIGNAL = _PAGE_AT + 5  # schema.org DiscussionForumPosting, QAPage, ...


def _block_words(matrix: np.ndarray) -> np.ndarray:
    """Each block's word count (the features hold it as log1p, in column 0)."""
    return np.expm1(matrix[:, 0])


def _declares_article(matrix: np.ndarray) -> bool:
    """Whether the page says it is an article (schema.org Article types or og:type)."""
    return bool(len(matrix) and matrix[0, list(_ARTICLE_SIGNALS)].any())


# A short article (trafilatura found 50-150 words) is often a news brief above a ticker
# of headlines and dates; after its end only what the model is sure of is kept.
_SHORT_ARTICLE_WORDS = 50
_LONG_ARTICLE_WORDS = 150
_SURE_AFTER_SHORT = 0.8


def _within_article(matrix: np.ndarray, keep: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """On an article page, drop kept blocks after trafilatura's article ends (or well before).

    Teasers of related stories look like listing items to the model; on a page that
    says it is an article and where trafilatura found a real article (150 words or
    more), they are not main text. After a short article, blocks stay only at
    probability 0.8 or more: a list article whose intro alone trafilatura found keeps
    its list (WCXB tune: blog.resy.com 0.92 where dropping everything gave 0.03), and a
    brief loses its ticker (AEB 0.955 -> 0.961; the 0.8 lies between what WCXB tune
    prefers, 0.6-0.7, and AEB, 0.8 or more, so AEB is not blind to it).
    """
    if not len(keep) or not _declares_article(matrix):
        return keep
    words = _block_words(matrix)
    inside = matrix[:, _IN_MAIN] >= 0.5
    # The article's span is where trafilatura kept passages of five words or more: a
    # lone "About" link it kept in the footer must not stretch the span over the
    # teasers in between (AEB: +0.003, WCXB unchanged).
    span = np.flatnonzero(inside & (words >= 5))
    found = words[inside].sum()
    if not len(span) or found < _SHORT_ARTICLE_WORDS:
        return keep
    trimmed = keep.copy()
    if found < _LONG_ARTICLE_WORDS:
        trimmed[span[-1] + 1:] &= prob[span[-1] + 1:] >= _SURE_AFTER_SHORT
        return trimmed
    trimmed[:span[0]] = False
    trimmed[span[-1] + 1:] = False
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
    a "review" class or id on product pages is main text (77% on articles); held-out
    products 0.668 -> 0.704. A page whose ``<h1>`` sits inside the reviews, or where
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
            hit = named[id(node)] = bool(_REVIEWS.search(
                f"{node.get('class') or ''} {node.get('id') or ''}"))
        return hit

    reviews = np.fromiter((any(map(is_reviews, block.path)) for block in blocks),
                          dtype=bool, count=len(blocks))
    if not reviews.any():
        return keep
    heading = next((i for i, block in enumerate(blocks) if block.tag == "h1"), None)
    words = _block_words(matrix)
    if ((heading is not None and reviews[heading])
            or words[reviews].sum() >= _REVIEWS_MAX_SHARE * words.sum()):
        return keep
    return keep & ~reviews


# The lowest probability a kept block may have, whatever the page's best cutoff says.
_FLOOR = 0.2


def best_keep(prob: np.ndarray, words: np.ndarray, floor: float = _FLOOR) -> np.ndarray:
    """The blocks to keep: those that maximise the page's expected F1.

    One fixed cutoff suits some pages and not others (a product grid's items sit at
    0.3, an article's paragraphs at 0.9). Taking each probability as the chance that
    the block is main text, keeping the k likeliest blocks has expected overlap
    ``TP = sum(p·w)`` over them, and expected F1 ``2·TP / (kept words + expected main
    words)``; the best k is one pass over the sorted blocks. Measured on WCXB
    (bench/README.md): held-out F1 0.854 -> 0.863, most of it on collections
    (0.587 -> 0.654), listings and forums.
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
    it cleaner (AEB: 0.953 with it, 0.947 with the page's own cutoff); every other page
    gets its own (:func:`best_keep`).
    """
    if _declares_article(matrix):
        return prob >= cutoff
    return best_keep(prob, _block_words(matrix))


def _in_chrome(block: Block) -> bool:
    """Whether the block sits inside navigation, a footer, a menu or a dialog."""
    return bool(block.ctx[_NAV] or block.ctx[_FOOTER])


def _is_menu(block: Block) -> bool:
    """A list of links inside the page's chrome: never main text."""
    return _in_chrome(block) and 2 * block.link_chars >= block.chars


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
        if not kept or _is_menu(block):
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
            grams = list(_trigrams(tokens))
            parent = id(block.path[-2]) if len(block.path) > 1 else 0
            if sum(seen.get(gram, parent) != parent for gram in grams) >= 0.8 * len(grams):
                continue
            for gram in grams:
                seen.setdefault(gram, parent)
        if block.tag in HEADINGS and lines:
            lines.append("")
        lines.append(text)
    return "\n".join(lines)


def without_chrome(text: str, blocks: list[Block]) -> str:
    """``text`` less the lines that are the text of a navigation, footer or dialog block."""
    chrome = {block.text for block in blocks if _in_chrome(block)}
    if not chrome:
        return text
    return "\n".join(line for line in text.split("\n") if line.strip() not in chrome)
