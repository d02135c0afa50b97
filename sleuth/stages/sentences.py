"""A page's text as a reader quotes it: whole sentences, each with its place in the text.

The text is read line by line. Lines that are no one's prose are set aside: reference
and backlink entries (``^ "…". Archived from the original…``, ``↑ …``), hatnotes ("Main
article: …"), headlines, links' texts and captions (a line in title case with no
sentence's ending, a "Related: …" or "Read more" teaser), Markdown headings, table rows,
navigation lists and menus (runs of separators, short labels without a full stop),
cookie banners, "Follow us on Twitter" sign-offs, copyright lines, code and data (``curl …``,
``POST /v1/…``, a line opening with JSON's ``"key":``). A line that a sentence runs across (a
PDF's wrapped lines, a break before a link) is joined to the next. Each block of lines
is then cut into sentences by ``sentencex`` (Wikimedia's segmenter, which knows
abbreviations in some 300 languages), a sentence ending inside an open quotation joined
to the ones that go on with it (a quotation the paragraph leaves open, as news pages do
when a quote runs on into the next paragraph, makes its sentence not ``whole``); a
sentence holding an unrendered wiki template (``Template:…``) or instructions to a
reader is dropped; a news story's dateline ("WASHINGTON (Reuters) - ", "Hong Kong (CNN
Business)") is not part of the paragraph's first sentence.

Every :class:`Sentence` keeps its offsets in the text it came from, so a quote can be
shown in its place; its ``text`` is what is quoted: whitespace collapsed, footnote
markers (``[3]``, ``[citation needed]``) removed, a word broken at a line's end mended.
:func:`passages` packs a block's sentences into quotable passages; a sentence longer
than a passage may be is shortened at a word and says so with "…".
"""

from __future__ import annotations

import itertools
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sleuth._headline import COPYRIGHT, dateline_end, headline

__all__ = [
    "ELLIPSIS",
    "Passage",
    "Sentence",
    "addresses_a_reader",
    "blocks",
    "ends_sentence",
    "passages",
    "sentences",
    "shorten",
]

ELLIPSIS = "…"
#: A line without a full stop and with fewer words than this is a label, not prose.
MIN_LINE_WORDS = 6
#: Characters of a page read for sentences (a page's text is capped well below this).
MAX_TEXT = 2_000_000

_FOOTNOTE = re.compile(r"\[\s*(?:\d{1,3}|citation needed|note \d+|[a-z])\s*\]", re.IGNORECASE)
_END = re.compile(r"[.!?…。！？][\"'”’)\]]*$")
_SOFT_END = re.compile(r"[:;][\"'”’)\]]*$")
_HEADING = re.compile(r"^\s{0,3}(?:#{1,6}(?:\s|$)|\\#)")
_UNDERLINE = re.compile(r"^\s*([=\-~^*+#`:'\"._])\1{2,}\s*$")
_TABLE_ROW = re.compile(r"^\s*\|")
_REFERENCE = re.compile(
    r"^\s*(?:[\^↑]|Jump up\b|Cite error\b)"
    r"|Archived from the original\b"
    r"|\bRetrieved(?: on)? (?:\d{1,2} \w+ \d{4}|\w+ \d{1,2},? \d{4}|\d{4}-\d\d-\d\d)"
    r"|\b(?:Accessed|accessed) (?:on )?(?:\d{1,2} \w+ \d{4}|\w+ \d{1,2},? \d{4})"
)
_HATNOTE = re.compile(
    r"^\s*(?:Main articles?|See also|Further information|For other uses|This article is about"
    r"|Not to be confused with|Coordinates|Editor['’]s note)\b",
    re.IGNORECASE,
)
_COOKIES = re.compile(
    r"\bcookies?\b.{0,120}\b(?:accept|consent|agree|settings|preferences|polic(?:y|ies)|"
    r"continuing|opt[ -]out)\b|\b(?:accept|consent to|agree to)\b.{0,60}\bcookies?\b",
    re.IGNORECASE,
)
_SEPARATED = re.compile(r"\s[|·•»›/]\s|\s[|·•»›]$|^[|·•»›]\s")
# Code and data a page shows (an API reference's samples): a request or shell line, a
# statement opening a line, a shell line continued, a line opening with JSON's "key":
# (a pronunciation template left in a sentence, {'1': ", '2': "}, is not one).
_CODE = re.compile(
    r"^\s*(?:(?:GET|POST|PUT|PATCH|DELETE|HEAD)\s*/|curl\s|\$\s+(?!\d)|>>>\s|#include\b"
    r"|(?:import|from)\s+[\w.]+\s+import\b|import\s+[\w.]+\s*;?$"
    r"|(?:def|function|class)\s+\w+\s*[(:{]|(?:const|let|var)\s+\w+\s*=)"
    r"|\s\\$"
)
# A line opening with one JSON member ("key": a value), as pretty-printed JSON has them.
_JSON_MEMBER = re.compile(r"^\s*[\"'][\w.$-]+[\"']\s*:\s*(?:null|true|false|-?\d|[\"'{\[]|$)")
# An author's or a site's sign-off: "Follow him on Twitter @michaeldwall."
_FOLLOW = re.compile(
    r"\bfollow (?:me|him|her|us|them)\b.{0,40}\bon (?:Twitter|X|Facebook|Instagram|LinkedIn"
    r"|Threads|Bluesky|Mastodon|YouTube|TikTok)\b",
    re.IGNORECASE,
)
# An unrendered wiki template, or markup a converter left behind ("</ref>").
_TEMPLATE = re.compile(r"\bTemplate:\S|</?(?:ref|span|div|small|sup|br)\b[^>]*>")
_WORD = re.compile(r"\w+")
_BROKEN_WORD = re.compile(r"(\w)-\s*\n\s*(?=[a-z])")
_JOINING_WORDS_TEXT = """
a an the and or but nor of to in on at by for from with as than that which who whose
into onto upon via per is are was were be been has have had its their his her
"""
#: A line ending with one of these runs on into the next.
_JOINING_WORDS = frozenset(_JOINING_WORDS_TEXT.split())


@dataclass(frozen=True)
class Sentence:
    """One sentence of a text: what is quoted, and where it is (``text[start:end]``).

    ``block`` numbers the paragraph it is in; ``whole`` says it ends as a sentence does
    (its punctuation, or the end of a line that has none).
    """

    text: str
    start: int
    end: int
    block: int
    whole: bool = True


@dataclass(frozen=True)
class Passage:
    """Sentences of one paragraph quoted together, with their place in the text."""

    text: str
    start: int
    end: int
    sentences: tuple[Sentence, ...]


def ends_sentence(text: str) -> bool:
    """Whether ``text`` ends as a sentence does (a full stop, "?", "!", "…")."""
    return bool(_END.search(text.rstrip()))


def _words(line: str) -> int:
    return len(_WORD.findall(line))


def _junk(line: str) -> bool:
    """A line that is no reader's prose (see the module docstring)."""
    return bool(
        _HEADING.match(line)
        or _UNDERLINE.match(line)
        or _TABLE_ROW.match(line)
        or _REFERENCE.search(line)
        or _HATNOTE.match(line)
        or _COOKIES.search(line)
        or len(_SEPARATED.findall(line)) >= 2
        or _CODE.search(line)
        or _JSON_MEMBER.match(line)
        or _FOLLOW.search(line)
        or COPYRIGHT.search(line)
    )


def _label(line: str) -> bool:
    """A short line without a sentence's ending: a heading, a menu item, a caption."""
    stripped = line.strip()
    return not (_END.search(stripped) or _SOFT_END.search(stripped)) and (
        _words(stripped) < MIN_LINE_WORDS
    )


def _runs_on(line: str, following: str) -> bool:
    """Whether a sentence runs from ``line`` into ``following`` (a wrapped line)."""
    end = line.rstrip()
    if not end or _END.search(end) or _SOFT_END.search(end):
        return False
    nxt = following.lstrip()
    if not nxt:
        return False
    if end.endswith(("-", ",")) or nxt[0].islower():
        return True
    last = end.rsplit(None, 1)[-1].lower()
    return last in _JOINING_WORDS


def blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) of each quotable block of ``text``: lines of prose, wrapped lines
    joined, the lines of the module docstring's kinds left out."""
    out: list[tuple[int, int]] = []
    lines: list[tuple[int, str]] = []
    at = 0
    for line in text[:MAX_TEXT].split("\n"):
        lines.append((at, line))
        at += len(line) + 1
    # A setext heading is the line above its underline.
    underlined = {n - 1 for n, (_, line) in enumerate(lines) if line and _UNDERLINE.match(line)}
    open_at: int | None = None
    for n, (start, line) in enumerate(lines):
        keep = line.strip() and n not in underlined and not _junk(line)
        if keep and open_at is None:
            if not _opens(lines, n):
                continue
            open_at = start
        elif not keep:
            continue
        if not _runs_into_next(lines, n, underlined):
            assert open_at is not None
            out.append((open_at, start + len(line.rstrip())))
            open_at = None
    return out


def _opens(lines: list[tuple[int, str]], n: int) -> bool:
    """Whether kept line ``n`` may open a block: not a label the next line does not run
    on from, not a headline (a line a sentence runs into may look like one: not checked)."""
    line = lines[n][1]
    if _label(line) and not (n + 1 < len(lines) and _runs_on(line, lines[n + 1][1])):
        return False
    return not headline(line)


def _runs_into_next(lines: list[tuple[int, str]], n: int, underlined: set[int]) -> bool:
    """Whether line ``n``'s sentence runs on into the next line (a wrapped line)."""
    following = lines[n + 1][1] if n + 1 < len(lines) else ""
    return bool(
        following.strip()
        and n + 1 not in underlined
        and not _junk(following)
        and _runs_on(lines[n][1], following)
    )


def _clean(raw: str) -> str:
    """A sentence as quoted: a word broken at a line's end mended, footnotes removed,
    whitespace collapsed."""
    return " ".join(_FOOTNOTE.sub("", _BROKEN_WORD.sub(r"\1", raw)).split())


_READER_RULES = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:ignore|disregard|forget|override)\b[^.!?\n]{0,40}\b(?:previous|prior|above|earlier"
        r"|all|any|your|the)\b[^.!?\n]{0,20}\b(?:instructions?|prompts?|rules|directions|question)",
        r"\b(?:you are|you're)\s+(?:now\s+)?(?:an?\s+|in\s+)?(?:ai\b|assistant|language model"
        r"|llm|chatbot|developer mode|jailbroken|dan\b)",
        r"\b(?:system|developer)\s+prompt\b",
        r"\b(?:note|message|instructions?|notice)\s+(?:to|for)\s+(?:all\s+)?(?:the\s+)?(?:ai\b"
        r"|assistants?|language models?|llms?|chatbots?|models?|bots?|crawlers?)",
        r"^\s*(?:system|assistant|developer)\s*:",
        r"\b(?:tell|inform|convince)\s+(?:the|your)\s+(?:reader|user)s?\b",
        r"\b(?:cite|quote|trust)\s+only\s+this\s+(?:page|source|site)\b",
        r"\bas an ai\b",
    )
]


def addresses_a_reader(passage: str) -> bool:
    """Whether a passage gives instructions to the reader or to an AI (a prompt injection).

    Such a passage says nothing about the question: it is never quoted as a finding.
    """
    return any(rule.search(passage) for rule in _READER_RULES)


_SENTENCEX_LOCK = threading.Lock()
_sentencex_module: Any = None


def _sentencex() -> Any:
    """sentencex, imported when a page is first read (a native module: under a lock)."""
    global _sentencex_module
    with _SENTENCEX_LOCK:
        if _sentencex_module is None:
            import sentencex

            _sentencex_module = sentencex
    return _sentencex_module


# A clock time and the time zone after it ("at 5:45 p.m. ET to include …"): sentencex ends
# a sentence at "p.m." before a capital; one that goes on with a zone is one sentence.
_CLOCK_END = re.compile(r"\d ?[ap]\.m\.$", re.IGNORECASE)
_ZONE = re.compile(r"(?:[ECMP][SD]?T|GMT|UTC|BST|CES?T|IST|JST|AE[SD]T)\b")


def _cut(text: str, start: int, end: int, language: str) -> list[tuple[int, int]]:
    """sentencex's sentence spans of ``text[start:end]``, as offsets in ``text``."""
    spans: list[tuple[int, int]] = []
    for bound in _sentencex().get_sentence_boundaries(language, text[start:end]):
        if bound.get("is_paragraph_break"):
            continue
        s, e = start + int(bound["start_index"]), start + int(bound["end_index"])
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e <= s:
            continue
        last = spans[-1][1] if spans else 0
        if spans and _CLOCK_END.search(text, max(0, last - 8), last) and _ZONE.match(text, s):
            spans[-1] = (spans[-1][0], e)
        else:
            spans.append((s, e))
    return spans


def _open_quotation(said: str) -> bool:
    """Whether ``said`` opens a quotation it does not close."""
    return said.count("“") > said.count("”") or said.count('"') % 2 == 1


#: A quotation longer than this is not joined into one sentence (a stray quote mark).
MAX_QUOTATION = 600


def _within_quotations(spans: list[tuple[int, int]], text: str) -> list[tuple[int, int]]:
    """``spans`` with a sentence that ends inside an open quotation joined to the ones that
    go on with it ("warning: “They are already there. They are there to …”"): a
    quotation's sentence is not cut off from the rest of what was said."""
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if (
            out
            and _open_quotation(text[out[-1][0] : out[-1][1]])
            and e - out[-1][0] <= MAX_QUOTATION
        ):
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


@lru_cache(maxsize=32)  # a run's sources, scored as they arrive and together
def sentences(text: str, language: str = "en") -> tuple[Sentence, ...]:
    """The quotable sentences of ``text``, in order (see the module docstring).

    A paragraph holding instructions to the reader or to an AI
    (:func:`addresses_a_reader`) is left out whole: it is an injection, not a finding.
    """
    out: list[Sentence] = []
    for number, (start, end) in enumerate(blocks(text)):
        if any(addresses_a_reader(line) for line in text[start:end].split("\n")):
            continue
        spans = _within_quotations(_cut(text, start, end, language), text)
        if spans:  # a dateline opening the paragraph is not its first sentence's
            spans[0] = (dateline_end(text, *spans[0]), spans[0][1])
        quoted = [_clean(text[s:e]) for s, e in spans]
        if any(addresses_a_reader(q) for q in quoted):
            continue
        for i, ((s, e), said) in enumerate(zip(spans, quoted, strict=True)):
            if not said or _TEMPLATE.search(said):
                continue
            ends = bool(_END.search(said) or _SOFT_END.search(said)) or i == len(spans) - 1
            whole = ends and not _open_quotation(said)
            out.append(Sentence(said, s, e, number, whole))
    return tuple(out)


def shorten(text: str, limit: int) -> str:
    """``text`` cut at a word to at most ``limit`` characters, "…" saying so."""
    if len(text) <= limit:
        return text
    cut = text[: max(1, limit - 2)]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:-–—") + " " + ELLIPSIS


def passages(text: str, limit: int, language: str = "en") -> list[Passage]:
    """``text``'s sentences packed into passages of at most ``limit`` characters, each
    within one paragraph; a longer sentence is its own passage, shortened with "…"."""
    out: list[Passage] = []
    group: list[Sentence] = []

    def close() -> None:
        if group:
            joined = group[0].text
            for before, after in itertools.pairwise(group):
                # As the text has them: "release.Shabana" stays one run, not two words.
                joined += (" " if before.end != after.start else "") + after.text
            out.append(Passage(shorten(joined, limit), group[0].start, group[-1].end, tuple(group)))
            group.clear()

    for sentence in sentences(text, language):
        size = sum(len(s.text) + 1 for s in group) + len(sentence.text)
        if group and (sentence.block != group[-1].block or size > limit):
            close()
        group.append(sentence)
    close()
    return out
