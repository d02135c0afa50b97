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
import itertools
import json
import re
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
    #: The numbers (in document order) of the elements of ``path``.
    nodes: tuple[int, ...] = ()

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


# Which hint groups a class, id or itemprop token matches. No hint pattern matches
# whitespace, so a whole attribute string matches what its tokens match together.
_TOKEN_HINTS: dict[str, frozenset[int]] = {}


# Any hint at all: most tokens ("col-md-6", "x7f3a") match none, and are told so at once.
_ANY_HINT = re.compile("|".join(f"(?:{pattern.pattern})" for _, pattern in _HINTS))


def _hints(attrs: str) -> frozenset[int]:
    """Which class/id hint groups ``attrs`` (lowercased) matches, token by token."""
    found: frozenset[int] = frozenset()
    for token in attrs.split():
        hints = _TOKEN_HINTS.get(token)
        if hints is None:
            if len(_TOKEN_HINTS) > 50_000:  # (as _DESCRIBED)
                _TOKEN_HINTS.clear()
            hints = _TOKEN_HINTS[token] = frozenset(
                i for i, (_, pattern) in enumerate(_HINTS) if pattern.search(token)
            ) if _ANY_HINT.search(token) else frozenset()
        found |= hints
    return found


# The attributes _is_hidden reads: an element with none of them is not hidden.
_MAY_HIDE = frozenset({"style", "hidden", "aria-hidden"})


def _is_hidden(elem: Any) -> bool:
    style = (elem.get("style") or "").replace(" ", "").lower()
    return (elem.get("hidden") is not None or elem.get("aria-hidden") == "true"
            or "display:none" in style or "visibility:hidden" in style)


# What _Walker.start reads off an element, by its tag, role, class, id and itemprop:
# kept from page to page (sites share their frameworks' class names).
_DESCRIBED: dict[tuple[str, str | None, str | None, str | None, str | None],
                 tuple[tuple[int, ...], str]] = {}


class _Walker:
    """Cuts a cleaned lxml tree into blocks, tracking what lies above each.

    Per open element it keeps the element, its number in document order and its state
    (landmark and hint counts, whether it starts a block, sits in a link or is hidden,
    its structural signature), each in a list of its own, so that a block's path is
    one slice of a list. A block element's block is made when its first text arrives:
    most block elements are wrappers that hold none.
    """

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.current: Block | None = None
        # A block begun by a block element, before any text: (its tag, stack depth).
        self.pending: tuple[str, int] | None = None
        # White space that arrived with no current block: (text, chars, in link), and
        # where the block it would have begun lies (see _add).
        self.spaces: list[tuple[str, int, bool]] = []
        self.spaces_at: tuple[str, int] = ("div", 0)
        self.elems: list[Any] = []
        self.numbers: list[int] = []
        self.count = 0
        # Per open element: (ctx counts, is_block, in_link, hidden, signature)
        self.states: list[tuple[tuple[int, ...], bool, bool, bool, str]] = []
        self.described = _DESCRIBED
        if len(_DESCRIBED) > 50_000:  # a page of unique ids must not grow it forever
            _DESCRIBED.clear()
        # A parent's ctx counts raised by an element's bumps (pages repeat both a lot).
        self.raised: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}

    def _make(self, tag: str, depth: int) -> Block:
        ctx, _, _, hidden, sig = self.states[depth - 1]
        block = self.current = Block(tag=tag, ctx=ctx, path=tuple(self.elems[:depth]),
                                     signature=sig, hidden=hidden,
                                     nodes=tuple(self.numbers[:depth]))
        return block

    def _where(self) -> tuple[str, int]:
        """The tag and depth of the block that text arriving now begins."""
        if self.pending is not None:
            return self.pending
        # Text after a block ended: a block of the nearest open block element.
        states, depth = self.states, len(self.states)
        at = next((i for i in range(depth - 1, -1, -1) if states[i][1]), None)
        tag = self.elems[at].tag if at is not None else "div"
        return (tag if isinstance(tag, str) else "div"), depth

    def _begin(self) -> Block:
        """Make the current block, where its first text (maybe held white space) arrived."""
        block = self._make(*(self.spaces_at if self.spaces else self._where()))
        self.pending = None
        for text, chars, in_link in self.spaces:
            block.parts.append(text)
            block.chars += chars
            if in_link:
                block.link_chars += chars
        self.spaces.clear()
        return block

    def _flush(self) -> None:
        block, self.current, self.pending = self.current, None, None
        self.spaces.clear()  # white space alone is no block
        if block is not None and block.chars:
            text = _SPACE.sub(" ", "".join(block.parts)).strip()
            if _WORD.search(text):
                block.__dict__["text"] = text  # the cached property, computed once here
                self.blocks.append(block)

    def _add(self, text: str | None, in_link: bool) -> None:
        if not text:
            return
        block = self.current
        if block is None:
            if text.isspace():
                # Held, not made a block: most white space between tags never meets a
                # word, and would make a block only to be dropped.
                if not self.spaces:
                    self.spaces_at = self._where()
                self.spaces.append((text, len(text), in_link))
                return
            block = self._begin()
        block.parts.append(text)
        block.chars += len(text)
        if in_link:
            block.link_chars += len(text)

    def _describe(self, tag: str, role: str | None, cls: str | None, ident: str | None,
                  itemprop: str | None) -> tuple[tuple[int, ...], str]:
        """The ctx counts an element raises, and its first class (for its signature)."""
        bumps = [_LANDMARKS[tag]] if tag in _LANDMARKS else []
        if role in _ROLES:
            bumps.append(_ROLES[role])
        attrs = f"{cls or ''} {ident or ''} {itemprop or ''}".lower()
        bumps += sorted(N_LANDMARKS + i for i in _hints(attrs))
        first = (cls or "").split(None, 1)
        return tuple(bumps), first[0] if first else ""

    def start(self, elem: Any) -> None:
        tag = elem.tag if isinstance(elem.tag, str) else ""
        if self.states:
            ctx, _, in_link, hidden, sig = self.states[-1]
        else:
            ctx, in_link, hidden, sig = _NO_CTX, False, False, ""
        names = elem.keys()  # most elements have no attributes: one call says so
        if names:
            get = elem.get
            key: tuple[str, str | None, str | None, str | None, str | None] = (
                tag, get("role"), get("class"), get("id"), get("itemprop"))
            hidden = hidden or (not _MAY_HIDE.isdisjoint(names) and _is_hidden(elem))
        else:
            key = (tag, None, None, None, None)
        described = self.described.get(key)
        if described is None:
            described = self.described[key] = self._describe(*key)
        bumps, first_class = described
        if bumps:
            raised = self.raised.get((ctx, bumps))
            if raised is None:
                counts = list(ctx)
                for i in bumps:
                    counts[i] += 1
                raised = self.raised[(ctx, bumps)] = tuple(counts)
            ctx = raised
        sig = f"{sig}/{tag}.{first_class}"
        is_block = tag in BLOCK_TAGS
        in_link = in_link or tag == "a"
        self.elems.append(elem)
        self.numbers.append(self.count)
        self.count += 1
        self.states.append((ctx, is_block, in_link, hidden,
                            sig if len(sig) <= 300 else sig[-300:]))
        if is_block:
            self._flush()
            self.pending = (tag, len(self.states))
        elif tag in CELLS and (self.current is not None or self.spaces):
            block = self.current or self._begin()
            if block.chars:
                block.parts.append(" | ")
                block.cells += 1
        text = elem.text
        if text:
            self._add(text, in_link)

    def end(self, elem: Any) -> None:
        is_block = self.states[-1][1]
        if self.spaces and not is_block and self.spaces_at[1] == len(self.states):
            self._begin()  # held white space whose block lies in what now closes
        self.elems.pop()
        self.numbers.pop()
        self.states.pop()
        if is_block:
            self._flush()
        elif elem.tag in CELLS:
            if self.current is not None:
                self.current.parts.append(" ")
            elif self.spaces:
                self.spaces.append((" ", 0, False))
        if self.states:
            self._add(elem.tail, self.states[-1][2])


_NO_CTX = (0,) * (N_LANDMARKS + len(_HINTS))


def _etree() -> Any:
    # Imported by name: lxml ships no type stubs, and this module needs none.
    return importlib.import_module("lxml.etree")


def segment(tree: Any) -> list[Block]:
    """The page's text blocks in document order (the tree is left as it is)."""
    etree = _etree()
    body = tree.find(".//body")
    root = body if body is not None else tree
    walker = _Walker()
    start, end, add, states = walker.start, walker.end, walker._add, walker.states
    for event, elem in etree.iterwalk(root, events=("start", "end")):
        if not isinstance(elem.tag, str):  # comments and processing instructions
            if event == "end" and states and elem.tail:
                add(elem.tail, states[-1][2])
            continue
        if event == "start":
            start(elem)
        else:
            end(elem)
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


def in_chrome(block: Block) -> bool:
    """Whether the block sits inside navigation, a footer, a menu or a dialog."""
    return bool(block.ctx[_NAV] or block.ctx[_FOOTER])


def is_menu(block: Block) -> bool:
    """A list of links inside the page's chrome: never main text."""
    return in_chrome(block) and 2 * block.link_chars >= block.chars
