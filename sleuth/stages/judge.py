"""The relevance judgement: how much a text bears on a question, and if not, why not.

Two measures of the same question, summed on one scale:

* **words**: the weighted share of the question's key terms that the text holds (title
  and body); a name (capitalised words, a quoted title) weighs twice, and counts only
  whole ("Federal Reserve", not "Reserve"). Rare names are where words win: the
  embedding reads an unfamiliar name as word pieces.
* **meaning**: the cosine between the question and the text's closest passage in
  sleuth's static embedding (:mod:`sleuth.embedding`): "the Fed" is near "the Federal
  Reserve", and a trade-war article that mentions Hong Kong is far from the protests.

Each measure is put on one scale (less its mean, over its spread, as measured over the
pages the tune questions of ``bench/semantic.py`` read) and the two are added: the
**score**, 0 for a page as close as the average page a search brings back. The
thresholds the gate applies to it are in :mod:`sleuth.stages.relevance`.

:class:`Judge` judges any text against one question: a page, a search result, a query
or a sub-question someone else wrote. Nothing here reads the network or a model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from sleuth.terms import STOP, content_terms, parse, stem, terms_of

__all__ = ["FLOOR", "Judge", "Verdict", "name_phrases", "title_core"]

#: A page scoring under this is off-topic whatever else was read (see the gate).
FLOOR = 0.0
#: Tokens of the passages compared with the question (about 100 words), half overlapping.
PASSAGE_TOKENS = 128
#: The two measures' means and spreads over the tune split's pages (bench/semantic.py).
WORDS_MEAN, WORDS_SD = 0.5, 0.3
MEANING_MEAN, MEANING_SD = 0.4, 0.15

_TOKEN = re.compile(r"[^\W\d_]\.(?=\s+[^\W\d_])|[^\W_](?:[\w'’.\-&]*[^\W_])?|[^\w\s]")
_QUOTED = re.compile(r"\"([^\"\n]{2,120})\"|“([^”\n]{2,120})”")
#: Lower-case words a name runs on across ("Welcome to the Show", "Minister for Agriculture").
_CONNECTORS = frozenset(["of", "to", "the", "for", "de", "del", "du", "von", "van", "la", "le"])
_DEMONYMS = frozenset(
    [
        "african",
        "american",
        "arab",
        "asian",
        "australian",
        "austrian",
        "belgian",
        "brazilian",
        "british",
        "canadian",
        "chinese",
        "danish",
        "dutch",
        "egyptian",
        "english",
        "european",
        "finnish",
        "french",
        "german",
        "greek",
        "indian",
        "iranian",
        "irish",
        "israeli",
        "italian",
        "japanese",
        "korean",
        "mexican",
        "norwegian",
        "polish",
        "portuguese",
        "russian",
        "scottish",
        "spanish",
        "swedish",
        "swiss",
        "turkish",
        "welsh",
    ]
)


@dataclass(frozen=True)
class Name:
    """A name the question gives: its words as written, and their stemmed terms."""

    text: str
    terms: frozenset[str]


def name_phrases(text: str) -> list[Name]:
    """The names in ``text``: runs of capitalised words (joined across the small words
    inside a title), quoted titles; a capital opening the text counts unless it is a
    function word; demonyms are not names."""
    runs: list[list[str]] = [[]]
    inside: list[str] = []  # connectors after a capitalised word, kept if one follows
    for n, token in enumerate(_TOKEN.findall(text)):
        if token[:1].isupper() and (n > 0 or token.lower() not in STOP):
            runs[-1] += [*inside, token]
            inside = []
        elif runs[-1] and token.lower() in _CONNECTORS:
            inside.append(token)
        elif runs[-1]:
            runs.append([])
            inside = []
    words = [" ".join(run) for run in runs if run]
    words += [q[0] or q[1] for q in _QUOTED.findall(text)]
    out: dict[frozenset[str], Name] = {}
    for phrase in words:
        terms = frozenset(content_terms(phrase) - _DEMONYMS)
        if terms and terms not in out:
            out[terms] = Name(phrase, terms)
    return list(out.values())


@dataclass(frozen=True)
class Verdict:
    """How much a text bears on the question: the ``score`` (see the module docstring),
    its two measures, and, when under ``floor``, why, in words a reader understands."""

    score: float
    words: float
    meaning: float
    reason: str = ""
    #: The text's terms (title and body), for choosing sources part by part.
    terms: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    @property
    def on_topic(self) -> bool:
        return not self.reason


@dataclass
class Judge:
    """Judges texts against one question (see the module docstring).

    ``rules`` switches the word measure's rules (the benchmark's ablations): ``names``
    (a name weighs twice), ``whole`` (a name of several words counts only whole).
    """

    question: str
    rules: frozenset[str] = frozenset({"names", "whole"})

    def __post_init__(self) -> None:
        self.names = name_phrases(self.question)
        self.named = frozenset().union(*(n.terms for n in self.names))
        terms = dict.fromkeys(terms_of(self.question))
        heavy = 2.0 if "names" in self.rules else 1.0
        self.weights = {t: heavy if t in self.named else 1.0 for t in terms}
        self._words_of = _surface(self.question)
        self._parts = self.parts()
        items = parse(self.question).items
        self._about_parts = bool(self._parts) and (
            len(items) >= 3 or not any(w[:1].isupper() for item in items for w in item)
        )
        from sleuth.stages.plan import part_queries

        self._part_judges = (
            [Judge(q, self.rules - {"part-queries"}) for q in part_queries(self.question)]
            if "part-queries" in self.rules
            else []
        )
        self._part_texts = part_queries(self.question) if "part-meaning" in self.rules else []

    @cached_property
    def _vector(self) -> np.ndarray:
        from sleuth.embedding import static_model

        return static_model().embed(self.question)

    def words(self, terms: frozenset[str], title: frozenset[str] = frozenset()) -> float:
        """The weighted share of the question's key terms among ``terms``."""
        total = sum(self.weights.values())
        if not total:
            return 0.0
        rules = self.rules
        if "parts" in rules and self._about_parts and not any(p & terms for p in self._parts):
            return 0.0
        held = set(self.weights) & terms
        if "whole" in rules:
            for name in self.names:
                if len(name.terms) > 1 and not name.terms <= terms:
                    held -= name.terms
        if "need-name" in rules and self.named and not held & self.named:
            return 0.0
        plain = set(self.weights) - self.named
        about = bool(title) and title <= set(self.weights)
        if "need-plain" in rules and plain and not held & plain and not about:
            return 0.0
        share = sum(self.weights[t] for t in held) / total
        for judge in self._part_judges:
            share = max(share, judge.words(terms, frozenset()))
        return share

    def page_terms(self, title: str, text: str) -> frozenset[str]:
        """The terms of a page (title and text); with the ``passing`` rule, less the
        question's names that a long page says only once outside its title."""
        words = terms_of(text)
        terms = content_terms(title).union(words)
        if "passing" not in self.rules or len(words) <= 400:
            return terms
        counts: dict[str, int] = {}
        for w in words:
            if w in self.named:
                counts[w] = counts.get(w, 0) + 1
        return terms - {n for n, c in counts.items() if c == 1} | content_terms(title)

    def meaning(self, text: str) -> float:
        """The cosine of the question with ``text``'s closest passage."""
        from sleuth.embedding import static_model

        model = static_model()
        windows = model.windows(text, PASSAGE_TOKENS, PASSAGE_TOKENS // 2)
        best = float((windows @ self._vector).max())
        for part in self._part_texts:
            best = max(best, float((windows @ model.embed(part)).max()))
        return best

    def page(self, title: str, text: str, floor: float = FLOOR) -> Verdict:
        """``title`` and ``text`` against the question."""
        terms = self.page_terms(title, text)
        words = self.words(terms, content_terms(title_core(title)))
        meaning = self.meaning(f"{title}\n{text}" if title else text)
        score = (words - WORDS_MEAN) / WORDS_SD + (meaning - MEANING_MEAN) / MEANING_SD
        reason = self.why(title, terms, words, meaning) if score < floor else ""
        return Verdict(score, words, meaning, reason, terms)

    def why(self, title: str, terms: frozenset[str], words: float, meaning: float) -> str:
        """Why a text with these measures is off-topic, as a reader would put it."""
        missing = [n for n in self.names if not n.terms <= terms]
        if missing and len(missing) == len(self.names):
            return f"it does not mention {_listed([n.text for n in missing])}"
        absent = [self._words_of.get(t, t) for t in self.weights if t not in terms]
        if absent and words < WORDS_MEAN:
            return f"it does not mention {_listed(absent[:3])}"
        subject = title_core(title)
        if subject:
            return f"it is about “{subject}” rather than what the question asks"
        return "it is about something other than what the question asks"

    def parts(self) -> list[frozenset[str]]:
        """The key terms of each part of the question ("the Moon, Europa and Titan"):
        each item of its main coordination, less the words the items share."""
        parsed = parse(self.question)
        if len(parsed.items) < 2:
            return []
        tokens = parsed.tokens
        context = content_terms(" ".join(tokens[: parsed.span[0]] + tokens[parsed.span[1] + 1 :]))
        items = [content_terms(" ".join(item)) - context for item in parsed.items]
        out = []
        for n, item in enumerate(items):
            others = frozenset().union(*(o for m, o in enumerate(items) if m != n))
            out.append(item - others or item)
        return [p for p in out if p]


def _surface(question: str) -> dict[str, str]:
    """Each key term of the question as the question writes it (for reasons)."""
    out: dict[str, str] = {}
    for token in _TOKEN.findall(question):
        for term in terms_of(token):
            out.setdefault(term, token if stem(token.lower()) == term else term)
    return out


def _listed(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} or {words[-1]}"


def title_core(title: str) -> str:
    """A page's title as another page would name it: no "(film)", no " - Site"."""
    core = re.sub(r"\s*\([^)]*\)\s*$", "", " ".join(title.split()))
    core = re.split(r"\s+[-–—|]\s+", core)[0]
    return core.strip(" \"'“”")
