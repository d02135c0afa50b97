"""The relevance judgement: how much a text bears on a question, and if not, why not.

Two measures of the same question, summed on one scale:

* **words**: the weighted share of the question's key terms that the text holds (title
  and body); a name (capitalised words, a quoted title) weighs twice and counts only
  whole ("Federal Reserve", not "Reserve"). Rare names are where words win: the
  embedding reads an unfamiliar name as word pieces.
* **meaning**: the cosine between the question and the text's closest passage (about a
  hundred words) in sleuth's static embedding (:mod:`sleuth.embedding`): "the Fed" is
  near "the Federal Reserve", and a meth campaign is far from tariffs however many words
  they share.

Each measure is put on one scale (less its mean, over its spread, over the pages the
tune questions of ``bench/semantic.py`` read) and the two are added: the **score**, 0 for
a page as close as the average page a search brings back. When the question has parts
("the Moon, Jupiter's moon Europa and Saturn's moon Titan"), a page is also judged
against each part's own query (the planner's: "NASA astronomers found Saturn's moon
Titan") and keeps its best score: a page on Titan says nothing of Europa. A text scoring
under :data:`FLOOR` is off-topic, with a reason in words a reader understands.

:class:`Judge` judges any text against one question: a page, a search result, a query
or a sub-question someone else wrote. Nothing here reads the network or a model.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from sleuth import tuned
from sleuth.terms import STOP, content_terms, parse, stem, terms_of

__all__ = ["FLOOR", "Judge", "Name", "Verdict", "name_phrases", "name_terms", "title_core"]

#: Under this score a text is off-topic: 95% of the tune split's relevant pages score more.
FLOOR = tuned.JUDGE_FLOOR
#: Tokens of the passages compared with the question (about 100 words), half overlapping.
PASSAGE_TOKENS = 128
#: A text of more passages than this (over twice :data:`PASSAGE_TOKENS`) is long: its
#: best passage may be one in passing, and its title says what it is about.
LONG = 3
#: The least score of a page titled with a name the question gives for the title to
#: count (``Verdict.titled``).
TITLED = tuned.JUDGE_TITLED
#: The two measures' means and spreads over the tune split's pages (bench/semantic.py).
WORDS_MEAN, WORDS_SD = 0.213, 0.161
MEANING_MEAN, MEANING_SD = 0.537, 0.157
#: The judgement's rules (``Judge.rules``; ``bench/semantic.py --rules`` ablates them).
RULES = frozenset({"names", "whole", "parts", "tf", "specific"})
#: A key word's weight under the ``specific`` rule: the length of its vector in the static
#: embedding (frequent, general words are short: "good" 2.5, "make" 2.5; specific ones
#: long: "coffee" 6.0, "tariffs" 6.0) over this, within [_LEAST, _MOST].
_SPECIFIC, _LEAST, _MOST = 4.0, 0.5, 1.5
# BM25's term-frequency saturation and length normalisation (the ``tf`` rule), and the
# length of a typical page in content words (of 77, 300 and 1,000, the best on tune).
_K1, _B, _TYPICAL_LENGTH = 1.2, 0.75, 300

_TOKEN = re.compile(r"[^\W\d_]\.(?=\s+[^\W\d_])|[^\W_](?:[\w'’.\-&]*[^\W_])?|[^\w\s]")
_POSSESSIVE = re.compile(r"['’]s$")
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
    """A name the text gives: its words as written, and their stemmed terms."""

    text: str
    terms: frozenset[str]


def name_phrases(text: str) -> list[Name]:
    """The names in ``text``: runs of capitalised words (joined across the small words
    inside a title), quoted titles; a capital opening the text counts unless it is a
    function word; demonyms are not names; a possessive ends a name."""
    runs: list[list[str]] = [[]]
    inside: list[str] = []  # connectors after a capitalised word, kept if one follows
    for n, token in enumerate(_TOKEN.findall(text)):
        if token[:1].isupper() and (n > 0 or token.lower() not in STOP):
            owner = _POSSESSIVE.sub("", token)
            runs[-1] += [*inside, owner]
            inside = []
            if owner != token:  # "Mozilla's Firefox": two names, the owner and its own
                runs.append([])
        elif runs[-1] and token.lower() in _CONNECTORS:
            inside.append(token)
        elif runs[-1]:
            runs.append([])
            inside = []
    phrases = [" ".join(run) for run in runs if run]
    phrases += [q[0] or q[1] for q in _QUOTED.findall(text)]
    out: dict[frozenset[str], Name] = {}
    for phrase in phrases:
        terms = frozenset(content_terms(phrase) - _DEMONYMS)
        if terms and terms not in out:
            out[terms] = Name(phrase, terms)
    return list(out.values())


def name_terms(text: str) -> frozenset[str]:
    """The stemmed terms of ``text``'s names (see :func:`name_phrases`)."""
    return frozenset().union(*(n.terms for n in name_phrases(text)))


def title_core(title: str) -> str:
    """A page's title as another page would name it: no "(film)", no " - Site"."""
    core = re.sub(r"\s*\([^)]*\)\s*$", "", " ".join(title.split()))
    core = re.split(r"\s+[-–—|]\s+", core)[0]
    return core.strip(" \"'“”")


@dataclass(frozen=True)
class Verdict:
    """How much a text bears on the question: the ``score`` (see the module docstring),
    its two measures, and, when off-topic, why, in words a reader understands."""

    score: float
    words: float
    meaning: float
    reason: str = ""
    #: The text's title names something the question names ("Nigella Lawson" for a
    #: question on her book): the page is about the question's subject, whatever it says.
    titled: bool = False
    #: The text's terms (title and body), for choosing sources part by part.
    terms: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    #: The score against the question, then against each part's query (``score`` is the
    #: best of them): a page is compared with the other pages on the same part.
    scores: tuple[float, ...] = field(default=(), repr=False, compare=False)
    #: For a text longer than :data:`LONG` passages, its title's own score, judged alone
    #: (the best over the question and its parts): what the page says it is about. A long
    #: page on a neighbouring subject that names the question's names in passing scores
    #: high in that passage and low here. ``inf`` for a shorter text (its best passage is
    #: most of it) or one without a title.
    subject: float = field(default=float("inf"), compare=False)

    @property
    def on_topic(self) -> bool:
        return not self.reason


@dataclass
class Judge:
    """Judges texts against one question (see the module docstring)."""

    question: str
    #: The rules: ``names`` (a name weighs twice), ``whole`` (a name of several words counts
    #: only whole), ``parts`` (a page is also judged against each part's own query).
    rules: frozenset[str] = RULES

    def __post_init__(self) -> None:
        self.names = name_phrases(self.question)
        self.named = frozenset().union(*(n.terms for n in self.names))
        heavy = 2.0 if "names" in self.rules else 1.0
        self._wording = _wording(self.question)
        self.weights = {
            t: (heavy if t in self.named else 1.0) * self._specific(t)
            for t in terms_of(self.question)
        }
        self._parts: list[Judge] = []
        if "parts" in self.rules:
            from sleuth.stages.plan import part_queries

            self._parts = [Judge(q, self.rules - {"parts"}) for q in part_queries(self.question)]

    def _specific(self, term: str) -> float:
        """How specific a key word is (the ``specific`` rule; 1.0 without it)."""
        if "specific" not in self.rules:
            return 1.0
        from sleuth.embedding import static_model

        model = static_model()
        rows = model.rows(model.ids(self._wording.get(term, term)))
        length = float(np.linalg.norm(rows.sum(axis=0))) if len(rows) else _SPECIFIC
        return min(_MOST, max(_LEAST, length / _SPECIFIC))

    @cached_property
    def _vector(self) -> npt.NDArray[np.float32]:
        from sleuth.embedding import static_model

        return static_model().embed(self.question)

    def words(self, counts: Counter[str], length: int = 0, *, whole: bool = True) -> float:
        """The weighted share of the question's key terms among a text's term ``counts``
        (its title's count twice); with the ``tf`` rule, each term counts as BM25 counts
        it: a term said once in a long text counts for little (``length``: its terms).
        ``whole=False`` lets a part of a name count (a headline says "Stadia", not
        "Google Stadia")."""
        total = sum(self.weights.values())
        held = {t for t in self.weights if counts.get(t)}
        if "whole" in self.rules and whole:
            for name in self.names:
                if not all(counts.get(t) for t in name.terms):
                    held -= name.terms
        if "tf" not in self.rules:
            return sum(self.weights[t] for t in held) / total if total else 0.0
        norm = _K1 * (1 - _B + _B * length / _TYPICAL_LENGTH)
        return sum(self.weights[t] * counts[t] / (counts[t] + norm) for t in held) / total

    def meaning(self, text: str) -> float:
        """The cosine of the question with ``text``'s closest passage."""
        return float((_passages(text) @ self._vector).max())

    def _measures(
        self,
        counts: Counter[str],
        length: int,
        passages: npt.NDArray[np.float32],
        whole: bool = True,
    ) -> tuple[float, float, float]:
        words = self.words(counts, length, whole=whole)
        meaning = float((passages @ self._vector).max())
        score = (words - WORDS_MEAN) / WORDS_SD + (meaning - MEANING_MEAN) / MEANING_SD
        return score, words, meaning

    def titled(self, title: str) -> bool:
        """Whether ``title`` names something the question names, and nothing else."""
        core = content_terms(title_core(title))
        return bool(core & self.named) and core <= set(self.weights)

    def page(self, title: str, text: str) -> Verdict:
        """``title`` and ``text`` (a page, a search result; a query or a sub-question as
        ``text`` alone) against the question."""
        body = terms_of(text)
        counts = Counter(body)
        for term in content_terms(title):
            counts[term] += 2  # a title says what the page is about
        terms = frozenset(counts)
        passages = _passages(f"{title}\n{text}" if title else text)
        score, words, meaning = self._measures(counts, len(body), passages)
        # A page on one part of the question is judged as that part's own question too.
        parts = (part._measures(counts, len(body), passages)[0] for part in self._parts)
        scores = (score, *parts)
        # The page of a name the question gives is on-topic if it bears on the question
        # at least as much as the average page a search brings back (the state's page
        # for a question on that state's drug campaign does not).
        titled = self.titled(title) and max(scores) >= TITLED
        reason = self.why(title, terms, words) if max(scores) < FLOOR and not titled else ""
        subject = self._subject(title) if len(passages) > LONG else float("inf")
        return Verdict(max(scores), words, meaning, reason, titled, terms, scores, subject)

    def _subject(self, title: str) -> float:
        """``title`` judged alone against the question and its parts (``inf`` when it has
        no key word to judge); a part of a name counts, as headlines shorten names."""
        counts = Counter(terms_of(title))
        if not counts:
            return float("inf")
        passages = _passages(title)
        judges = [self, *self._parts]
        return max(j._measures(counts, counts.total(), passages, False)[0] for j in judges)

    def why(self, title: str, terms: frozenset[str], words: float) -> str:
        """Why a page with these ``terms`` and word measure bears little on the question:
        the question's names it does not mention, else its key words, else what it is
        about instead."""
        if self.names and not any(n.terms <= terms for n in self.names):
            return f"it does not mention {_listed([self._named(n) for n in self.names])}"
        absent = [t for t in self.weights if t not in terms]
        if absent and words < WORDS_MEAN:
            absent.sort(key=lambda t: -self.weights[t])
            return f"it does not mention {_listed([self._wording.get(t, t) for t in absent[:3]])}"
        held = [self._named(n) for n in self.names if n.terms <= terms]
        held = held or [self._wording.get(t, t) for t in self.weights if t in terms]
        subject = title_core(title)
        if held and subject:
            return f"it mentions {_listed(held[:3], 'and')} but is about “{subject}”"
        return "it is about something other than what the question asks"

    def _named(self, name: Name) -> str:
        """A name as the question writes it, with its "the" ("the Federal Reserve")."""
        found = re.search(rf"\b(the)\s+{re.escape(name.text)}", self.question, re.IGNORECASE)
        return f"the {name.text}" if found else name.text

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


def _passages(text: str) -> npt.NDArray[np.float32]:
    from sleuth.embedding import static_model

    return static_model().windows(text, PASSAGE_TOKENS, PASSAGE_TOKENS // 2)


def _wording(question: str) -> dict[str, str]:
    """Each key term of the question as the question writes it (for reasons)."""
    out: dict[str, str] = {}
    for token in _TOKEN.findall(question):
        word = _POSSESSIVE.sub("", token)
        for term in terms_of(token):
            out.setdefault(term, word if stem(word.lower()) == term else term)
    return out


def _listed(words: list[str], last: str = "or") -> str:
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {last} {words[-1]}"
