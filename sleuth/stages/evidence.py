"""What a source says, prepared for checking a sentence against it: key terms, sentences,
and the span of the source's own words that best backs a sentence.

:func:`key_terms` gives a text's content words (stemmed; character pairs for Chinese
and Japanese) and its figures; :class:`Evidence` holds one source's text as windows of
two adjacent passages (the citation check's unit, :func:`lexical_support`) and as
sentences, of which :meth:`Evidence.support` finds the span (one sentence, or two that
follow each other) sharing the most key terms with a claim: its words verbatim, so a
reader can find them in the page.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from sleuth.models import Support
from sleuth.stages.read import split_passages

__all__ = ["Evidence", "key_terms", "lexical_support", "split_sentences"]

#: The longest quote a span gives, in characters (a longer sentence is cut into windows).
MAX_QUOTE = 360

# -- sentences -------------------------------------------------------------------------
_TRAIL_CITES = r"(?:\s*(?:\[\^?[\d\s,;，、\-–—^]{1,60}\]|【\d{1,4}】))*"
_BOUNDARY = re.compile(rf"[.!?]+[\"'”’)]*{_TRAIL_CITES}(?=\s|$)|[。！？]+[”’）]*{_TRAIL_CITES}")
# An abbreviation's full stop, an initial ("J. R. R. Tolkien"; not "I.") or an acronym's
# ("U.S.") ends no sentence.
_ABBREVIATIONS = re.compile(
    r"(?:\b(?i:e\.g|i\.e|etc|vs|cf|al|approx|Dr|Mrs?|Ms|Messrs|Prof|Sen|Rep|Gov|Gen|Lt|Col"
    r"|Sgt|St|Jr|Sr|Inc|Co|Corp|Ltd|Fig|No|a\.m|p\.m)\.|(?<![\w.])[A-HJ-Z]\.|\b(?:[A-Z]\.){2,})$"
)

# -- terms -----------------------------------------------------------------------------
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*%?")
_STOP_WORDS = """
a about above after again against all also although among an and any are as at be because
been before being below between both but by can could did do does doing done down during
each either else even ever every few for from further had has have having he her here hers
him his how however i if in into is it its itself just may might more most much must my
neither no nor not now of off often on once one only or other our out over own per rather
same she should since so some such than that the their them then there these they this
those though through thus to too under until up upon us very via was we were what when where
whether which while who whom whose why will with within without would yet you your
according source sources page pages article report reports states stated say says said
describes described explains explained notes noted also well many several various use used
using new like including include includes
"""
_STOP = frozenset(_STOP_WORDS.split())
_CJK_STOP_WORDS = (
    "我们 可以 一个 这个 通过 以及 进行 他们 因此 但是 如果 由于 这些 那些 其中 "
    "并且 或者 来源 根据 指出 表示 认为"
)
_CJK_STOP = frozenset(_CJK_STOP_WORDS.split())


def _stem(word: str) -> str:
    """A crude stem: shared prefixes stand in for shared roots (token/tokens, protect/-ion)."""
    if len(word) >= 5:
        return word[:5]
    return word[:-1] if len(word) == 4 and word.endswith("s") else word


def _norm_number(text: str) -> str:
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", text.rstrip("%"))


def key_terms(text: str) -> tuple[set[str], set[str]]:
    """(terms, figures) of ``text``: stemmed content words and CJK character pairs,
    and the numbers that must be found verbatim (two digits or more, or decimals)."""
    terms: set[str] = set()
    for run in _CJK_RUN.findall(text):
        pairs = {run[i : i + 2] for i in range(len(run) - 1)} if len(run) > 1 else {run}
        terms |= pairs - _CJK_STOP
    latin = _CJK_RUN.sub(" ", text)
    for word in _WORD.findall(latin.lower()):
        word = word.replace("’", "'").split("'")[0]
        if len(word) >= 3 and word not in _STOP:
            terms.add(_stem(word))
    figures: set[str] = set()
    for raw in _NUMBER.findall(text):
        number = _norm_number(raw)
        if len(number.replace(".", "").replace(",", "")) >= 2:
            figures.add(number)
        else:
            terms.add(number)
    return terms, figures


@dataclass
class Evidence:
    """What one source says, prepared for lexical matching: windows of two adjacent
    passages (and the summary), and its own ``text`` for quoting."""

    windows: list[str]
    terms: list[set[str]] = field(default_factory=list)
    figures: set[str] = field(default_factory=set)
    text: str = ""
    _spans: list[tuple[str, set[str]]] | None = field(default=None, repr=False)

    @classmethod
    def build(cls, text: str, summary: str | None = None) -> Evidence:
        """Windows of two adjacent passages of ``text``, plus the summary as one window."""
        passages = split_passages(text)
        windows = [" ".join(passages[i : i + 2]) for i in range(max(1, len(passages) - 1))]
        windows = [w for w in windows if w.strip()]
        if summary:
            windows.append(summary)
        evidence = cls(windows=windows, text=text)
        for window in windows:
            terms, figures = key_terms(window)
            evidence.terms.append(terms | figures)
            evidence.figures |= figures
        # Small numbers ("2", "5") may be written as words in the source: terms only.
        evidence.figures |= {f for t in evidence.terms for f in t if f[:1].isdigit()}
        return evidence

    def best(self, terms: set[str], k: int = 2) -> list[str]:
        """The ``k`` windows sharing the most terms with ``terms``."""
        order = sorted(range(len(self.windows)), key=lambda i: -len(terms & self.terms[i]))
        return [self.windows[i] for i in order[:k]]

    def support(self, claim: str, source: int) -> Support | None:
        """The span of this source's own text that best backs ``claim``: one sentence or
        two that follow each other, whichever holds the larger share of the claim's key
        terms (the shorter on a tie); None when no sentence shares any."""
        terms, figures = key_terms(claim)
        wanted = terms | figures
        if not wanted:
            return None
        best: tuple[float, int, str] = (0.0, 0, "")
        for quote, held in self._sentence_spans():
            score = len(wanted & held) / len(wanted)
            if score > best[0] or (score == best[0] and score and len(quote) < best[1]):
                best = (score, len(quote), quote)
        if not best[2]:
            return None
        return Support(source=source, quote=best[2], score=round(best[0], 3))

    def _sentence_spans(self) -> list[tuple[str, set[str]]]:
        """Each sentence of :attr:`text` (cut to :data:`MAX_QUOTE`) and each pair of
        adjacent ones in a paragraph, with their key terms (made once)."""
        if self._spans is None:
            spans: list[tuple[str, set[str]]] = []
            for line in self.text.split("\n"):
                sentences = [p for s in split_sentences(line.strip()) for p in _pieces(s)]
                held = [set().union(*key_terms(s)) for s in sentences]
                spans += zip(sentences, held, strict=True)
                for i in range(len(sentences) - 1):
                    pair = line[line.index(sentences[i]) :]
                    end = pair.find(sentences[i + 1])
                    joined = pair[: end + len(sentences[i + 1])] if end >= 0 else ""
                    if joined and len(joined) <= MAX_QUOTE:
                        spans.append((joined, held[i] | held[i + 1]))
            self._spans = spans
        return self._spans


def _pieces(sentence: str) -> list[str]:
    """``sentence`` stripped, as windows of at most :data:`MAX_QUOTE` characters cut at
    spaces (each a substring of it)."""
    sentence = sentence.strip()
    pieces = []
    while len(sentence) > MAX_QUOTE:
        cut = sentence.rfind(" ", MAX_QUOTE // 2, MAX_QUOTE)
        cut = cut if cut > 0 else MAX_QUOTE
        pieces.append(sentence[:cut].strip())
        sentence = sentence[cut:].strip()
    return [p for p in [*pieces, sentence] if p]


def lexical_support(claim: str, evidence: list[Evidence]) -> bool:
    """Whether the cited sources back ``claim`` lexically; see the module docstring."""
    terms, figures = key_terms(claim)
    if not evidence:
        return False
    known_figures = set().union(*(e.figures for e in evidence))
    if not figures <= known_figures:
        return False
    if not terms:
        return True
    need = max(1, math.ceil(0.5 * len(terms)))
    best = max((len(terms & window) for e in evidence for window in e.terms), default=0)
    return best >= need


def split_sentences(text: str) -> list[str]:
    """``text`` cut after each sentence end (keeping citations that follow it)."""
    pieces: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if _ABBREVIATIONS.search(text[start : match.start() + 1]):
            continue
        pieces.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces
