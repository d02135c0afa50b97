"""Cut a cleaned page into text blocks (:func:`segment`), with what lies above each block.

A *block* is the inline content of one block-level element. Each carries its text,
how much of it is link text, its tag, the landmark and class/id hint counts of the
elements above it (``ctx``), its ancestors and a structural signature, which
:mod:`sleuth.extraction.blocks` turns into the block model's features. Pure Python plus
lxml; callers hold the extraction lock.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

# Elements dropped before segmentation: never readable text.
DROP_TAGS = (
    "script",
    "style",
    "template",
    "svg",
    "math",
    "iframe",
    "object",
    "embed",
    "canvas",
    "video",
    "audio",
    "head",
    "select",
    "option",
    "textarea",
    "input",
    "link",
    "meta",
    "base",
)
BLOCK_TAGS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "center",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "html",
        "legend",
        "li",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "thead",
        "tfoot",
        "tr",
        "ul",
        "caption",
        "br",
        "button",
    }
)
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Cells are inline separators inside their row, so that a spec row reads "Weight | 2 kg".
CELLS = frozenset({"td", "th"})
_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")

# Class/id/role fragments, grouped by what they usually mean. Order is the feature order.
_HINTS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rx))
    for name, rx in (
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
    )
)
_LANDMARKS = {
    "nav": 0,
    "header": 1,
    "footer": 2,
    "aside": 3,
    "form": 4,
    "article": 5,
    "main": 6,
    "table": 7,
    "li": 8,
    "a": 9,
    "button": 10,
    "label": 11,
    "blockquote": 12,
    "pre": 13,
    "code": 13,
    "figure": 14,
    "figcaption": 14,
    "dl": 15,
    "section": 16,
}
_ROLES = {
    "navigation": 0,
    "banner": 1,
    "contentinfo": 2,
    "complementary": 3,
    "search": 4,
    "main": 6,
    "article": 5,
    "dialog": 2,
    "menu": 0,
    "menubar": 0,
    "tablist": 0,
}
N_LANDMARKS = 17
_NAV, _FOOTER = _LANDMARKS["nav"], _LANDMARKS["footer"]

# The word-overlap features and the duplicate check read at most this much of one text:
# a page's text is cut to --max-chars (30,000 by default) anyway, and the trigrams of a
# 2 MB one-line page cost ~60 MB of tuples (bench/hostile.py's long_line case).
_OVERLAP_CHARS = 200_000


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
            hints = _TOKEN_HINTS[token] = (
                frozenset(i for i, (_, pattern) in enumerate(_HINTS) if pattern.search(token))
                if _ANY_HINT.search(token)
                else frozenset()
            )
        found |= hints
    return found


# The attributes _is_hidden reads: an element with none of them is not hidden.
_MAY_HIDE = frozenset({"style", "hidden", "aria-hidden"})


def _is_hidden(elem: Any) -> bool:
    style = (elem.get("style") or "").replace(" ", "").lower()
    return (
        elem.get("hidden") is not None
        or elem.get("aria-hidden") == "true"
        or "display:none" in style
        or "visibility:hidden" in style
    )


# What _Walker.start reads off an element, by its tag, role, class, id and itemprop:
# kept from page to page (sites share their frameworks' class names).
_DESCRIBED: dict[
    tuple[str, str | None, str | None, str | None, str | None], tuple[tuple[int, ...], str]
] = {}


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
        # where the block it would have begun lies (see _add): the pending block then, or
        # the depth of the stack then (the stack below it stays while spaces are held).
        self.spaces: list[tuple[str, int, bool]] = []
        self.spaces_pending: tuple[str, int] | None = None
        self.spaces_depth = 0
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
        block = self.current = Block(
            tag=tag,
            ctx=ctx,
            path=tuple(self.elems[:depth]),
            signature=sig,
            hidden=hidden,
            nodes=tuple(self.numbers[:depth]),
        )
        return block

    def _where(self, pending: tuple[str, int] | None, depth: int) -> tuple[str, int]:
        """The tag and depth of the block that text begins, arriving when ``pending`` was
        the pending block and ``depth`` elements were open."""
        if pending is not None:
            return pending
        # Text after a block ended: a block of the nearest open block element.
        states = self.states
        at = next((i for i in range(depth - 1, -1, -1) if states[i][1]), None)
        tag = self.elems[at].tag if at is not None else "div"
        return (tag if isinstance(tag, str) else "div"), depth

    def _begin(self) -> Block:
        """Make the current block, where its first text (maybe held white space) arrived."""
        if self.spaces:
            block = self._make(*self._where(self.spaces_pending, self.spaces_depth))
        else:
            block = self._make(*self._where(self.pending, len(self.states)))
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
                if not self.spaces:  # (where it lies is worked out if a word follows)
                    pending = self.spaces_pending = self.pending
                    self.spaces_depth = pending[1] if pending is not None else len(self.states)
                self.spaces.append((text, len(text), in_link))
                return
            block = self._begin()
        block.parts.append(text)
        block.chars += len(text)
        if in_link:
            block.link_chars += len(text)

    def _describe(
        self, tag: str, role: str | None, cls: str | None, ident: str | None, itemprop: str | None
    ) -> tuple[tuple[int, ...], str]:
        """The ctx counts an element raises, and its first class (for its signature)."""
        bumps = [_LANDMARKS[tag]] if tag in _LANDMARKS else []
        if role in _ROLES:
            bumps.append(_ROLES[role])
        attrs = f"{cls or ''} {ident or ''} {itemprop or ''}".lower()
        bumps += sorted(N_LANDMARKS + i for i in _hints(attrs))
        first = (cls or "").split(None, 1)
        return tuple(bumps), first[0] if first else ""

    def start(self, elem: Any, tag: str) -> None:
        if self.states:
            ctx, _, in_link, hidden, sig = self.states[-1]
        else:
            ctx, in_link, hidden, sig = _NO_CTX, False, False, ""
        names = elem.keys()  # most elements have no attributes: one call says so
        if names:
            get = elem.get
            key: tuple[str, str | None, str | None, str | None, str | None] = (
                tag,
                get("role"),
                get("class"),
                get("id"),
                get("itemprop"),
            )
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
        self.states.append((ctx, is_block, in_link, hidden, sig if len(sig) <= 300 else sig[-300:]))
        if is_block:
            if self.current is not None or self.spaces:  # (else there is nothing to flush)
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

    def end(self, elem: Any, tag: str) -> None:
        is_block = self.states[-1][1]
        if self.spaces and not is_block and self.spaces_depth == len(self.states):
            self._begin()  # held white space whose block lies in what now closes
        self.elems.pop()
        self.numbers.pop()
        self.states.pop()
        if is_block:
            if self.current is not None or self.spaces:
                self._flush()
            else:
                self.pending = None
        elif tag in CELLS:
            if self.current is not None:
                self.current.parts.append(" ")
            elif self.spaces:
                self.spaces.append((" ", 0, False))
        if self.states:
            self._add(elem.tail, self.states[-1][2])


_NO_CTX = (0,) * (N_LANDMARKS + len(_HINTS))


def segment(tree: Any) -> list[Block]:
    """The page's text blocks in document order (the tree is left as it is)."""
    from lxml import etree

    body = tree.find(".//body")
    root = body if body is not None else tree
    walker = _Walker()
    start, end, add, states = walker.start, walker.end, walker._add, walker.states
    for event, elem in etree.iterwalk(root, events=("start", "end")):
        tag = elem.tag  # (lxml makes the string anew each time it is asked: asked once)
        if not isinstance(tag, str):  # comments and processing instructions
            if event == "end" and states and elem.tail:
                add(elem.tail, states[-1][2])
            continue
        if event == "start":
            start(elem, tag)
        else:
            end(elem, tag)
    walker._flush()
    return walker.blocks


def clean_tree(tree: Any) -> Any:
    """Drop the elements that never hold readable text (in place).

    A ``<noscript>`` with real text in it stays: some sites (Discourse forums among
    them) serve the whole page there to readers without JavaScript, as we are.
    """
    from lxml import etree

    etree.strip_elements(tree, *DROP_TAGS, etree.Comment, with_tail=False)
    for node in list(tree.iter("noscript")):
        if len(_WORD.findall(node.text_content())) < 25:
            node.drop_tree()
    return tree


def in_chrome(block: Block) -> bool:
    """Whether the block sits inside navigation, a footer, a menu or a dialog."""
    return bool(block.ctx[_NAV] or block.ctx[_FOOTER])


def is_menu(block: Block) -> bool:
    """A list of links inside the page's chrome: never main text."""
    return in_chrome(block) and 2 * block.link_chars >= block.chars
