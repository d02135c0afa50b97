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

This module cuts the page into blocks (:func:`segment`) and computes their features
(:func:`features`); :mod:`sleuth.extraction.model` scores them and picks the text. Pure
Python plus lxml and numpy; callers hold the extraction lock.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
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


def trigrams(tokens: list[str]) -> Iterator[tuple[str, str, str]]:
    # zip over shifted lists (of unequal lengths, by design): a third of the time of
    # slicing a tuple out at each position.
    return zip(tokens, tokens[1:], tokens[2:], strict=False)


def _grams(tokens: list[str]) -> set[tuple[str, str, str]]:
    return set(trigrams(tokens))


def _share_in(tokens: list[str], norm: str, grams: set[tuple[str, str, str]]) -> float:
    """How much of a block another extraction kept: its trigrams, or for short blocks its words."""
    if len(tokens) < 3:
        return float(bool(tokens) and f" {' '.join(tokens)} " in f" {norm} ")
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


def in_chrome(block: Block) -> bool:
    """Whether the block sits inside navigation, a footer, a menu or a dialog."""
    return bool(block.ctx[_NAV] or block.ctx[_FOOTER])


def is_menu(block: Block) -> bool:
    """A list of links inside the page's chrome: never main text."""
    return in_chrome(block) and 2 * block.link_chars >= block.chars
