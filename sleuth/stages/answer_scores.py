"""How the Answer's candidate sentences are scored (:mod:`sleuth.stages.answer` chooses
among them): each scorer gives every candidate a score for the question; the scores are
z-scored across the candidates and added with the scorer's weight (:func:`combined`),
and a second pass adds what a second hop is worth (:func:`bridge_scores`).

A scorer is a name, a weight and a function of the question and the candidates
(:func:`default_scorers`); the weights were chosen on the tune split of
``python -m bench.answer`` (see bench/NOTEBOOK.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sleuth import tuned
from sleuth.stages.asks import kind_scores, new_names
from sleuth.stages.judge import title_core
from sleuth.stages.names import titled
from sleuth.stages.read import bm25_scores
from sleuth.stages.sentences import Sentence
from sleuth.stages.subjects import SUBJECT
from sleuth.terms import content_terms

__all__ = [
    "BRIDGE_FROM",
    "BRIDGE_WEIGHT",
    "Z_BOUND",
    "Bridge",
    "Candidate",
    "Scorer",
    "Words",
    "bridge_scores",
    "bridges",
    "combined",
    "default_scorers",
    "scorer_names",
    "zscores",
]


#: The first pass's best sentences whose names are taken as second hops.
BRIDGE_FROM = tuned.BRIDGE_FROM


@dataclass(frozen=True)
class Candidate:
    """A sentence of a source, as the scorers see it."""

    source: int
    rank: int
    title: str
    sentence: Sentence
    order: int
    #: It says something only right after the sentence before it (see
    #: :func:`sleuth.stages.subjects.leaning`).
    leans: bool = False

    @property
    def text(self) -> str:
        """The sentence as quoted."""
        return self.sentence.text

    @property
    def said(self) -> str:
        """The sentence as scored: a leading "He", "She", "It" or "They" (or "His", "Its",
        …) read as the page's subject, its title ("He was a two-time Pro Bowl selection"
        on Deltha O'Neal's page says "Deltha O'Neal was …")."""
        found = SUBJECT.match(self.text)
        if not found:
            return self.text
        subject = title_core(self.title)
        owner = found.group(1).lower() in ("his", "her", "its", "their")
        return subject + ("'s" if owner else "") + self.text[found.end() :]


ScoreFn = Callable[[str, Sequence[Candidate]], Sequence[float]]


@dataclass(frozen=True)
class Scorer:
    """One way of scoring the candidates: its name, its weight, its function."""

    name: str
    weight: float
    score: ScoreFn


def _kind_score(question: str, candidates: Sequence[Candidate]) -> list[float]:
    return kind_scores(question, [c.text for c in candidates])


# -- the scorers -----------------------------------------------------------------------------
def _bm25(question: str, candidates: Sequence[Candidate]) -> list[float]:
    return bm25_scores([c.said for c in candidates], [question])


def _terms(question: str, candidates: Sequence[Candidate]) -> list[float]:
    asked = content_terms(question)
    if not asked:
        return [0.0] * len(candidates)
    titles: dict[str, frozenset[str]] = {}
    out = []
    for c in candidates:
        own = content_terms(c.said) & asked
        title = titles.setdefault(c.title, content_terms(c.title)) & asked
        out.append((len(own) + 0.5 * len(title - own)) / len(asked))
    return out


def _rank(question: str, candidates: Sequence[Candidate]) -> list[float]:
    return [1.0 / (1 + c.rank) for c in candidates]


def _meaning(question: str, candidates: Sequence[Candidate]) -> list[float]:
    """The cosine of the question with each sentence (its page's title before it) in
    sleuth's static embedding: "the all-star game" is near "a Pro Bowl selection"."""
    from sleuth.embedding import static_model

    model = static_model()
    asked = model.embed(question)
    texts = [f"{c.title}: {c.said}" for c in candidates]
    return [float(v) for v in model.embed_many(texts) @ asked]


def default_scorers() -> list[Scorer]:
    """The first pass's scorers, each with its weight (the bridge pass is added after).

    The weights were chosen on the tune split of ``python -m bench.answer`` (HotpotQA
    questions 0-49 over their paragraphs as notes); see bench/NOTEBOOK.md.
    """
    weights = tuned.ANSWER_WEIGHTS
    return [
        Scorer("bm25", weights["bm25"], _bm25),
        Scorer("terms", weights["terms"], _terms),
        Scorer("kind", weights["kind"], _kind_score),
        Scorer("rank", weights["rank"], _rank),
        Scorer("meaning", weights["meaning"], _meaning),
    ]


BRIDGE_WEIGHT = tuned.BRIDGE_WEIGHT


#: A z-score's bound. A score that few candidates have (one sentence of 180 names a
#: second hop) would otherwise be worth about the square root of their number (13 where
#: every other scorer gives at most 3 or 4), and carry that sentence alone.
Z_BOUND = 3.0


def zscores(values: Sequence[float]) -> list[float]:
    """``values`` standardised (mean 0, spread 1), each within ±:data:`Z_BOUND`."""
    n = len(values)
    mean = sum(values) / n
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / n)
    if spread <= 1e-9:
        return [0.0] * n
    return [max(-Z_BOUND, min(Z_BOUND, (v - mean) / spread)) for v in values]


def combined(
    question: str, candidates: Sequence[Candidate], scorers: Sequence[Scorer]
) -> list[float]:
    total = [0.0] * len(candidates)
    for scorer in scorers:
        for i, z in enumerate(zscores(list(scorer.score(question, candidates)))):
            total[i] += scorer.weight * z
    return total


@dataclass(frozen=True)
class Words:
    """The content terms of each candidate's title and text, for the bridge pass."""

    titles: list[frozenset[str]]
    texts: list[frozenset[str]]

    @classmethod
    def of(cls, candidates: Sequence[Candidate]) -> Words:
        titles: dict[str, frozenset[str]] = {}
        return cls(
            [titles.setdefault(c.title, content_terms(c.title)) for c in candidates],
            [content_terms(c.text) for c in candidates],
        )


@dataclass(frozen=True)
class Bridge:
    """A name a best first-pass sentence gives: its words, the weight of the best such
    sentence (1, then 1/2, 1/3, …), and the title of the page that gave it."""

    name: str
    terms: frozenset[str]
    weight: float
    origin: str


def bridges(question: str, candidates: Sequence[Candidate], first: Sequence[float]) -> list[Bridge]:
    """The names the best first-pass sentences give that the question does not, best
    first."""
    asked = content_terms(question)
    order = sorted(range(len(candidates)), key=lambda i: -first[i])
    found: dict[str, Bridge] = {}
    for place, i in enumerate(order[:BRIDGE_FROM]):
        for name in new_names(candidates[i].text, asked):
            terms = content_terms(name) - asked
            if terms and name.lower() not in found:
                found[name.lower()] = Bridge(name, terms, 1.0 / (1 + place), candidates[i].title)
    return list(found.values())


def bridge_scores(
    candidates: Sequence[Candidate], names: Sequence[Bridge], words: Words
) -> list[float]:
    """Each candidate's second-hop score: the weight of a name that its page is the page
    of (not the page that gave the name), half that of a name it mentions."""
    out = []
    for c, text in zip(candidates, words.texts, strict=True):
        best = 0.0
        for bridge in names:
            if c.title != bridge.origin and titled(c.title, bridge.name):
                best = max(best, bridge.weight)
            elif bridge.terms <= text and c.title != bridge.origin:
                best = max(best, 0.5 * bridge.weight)
        out.append(best)
    return out


def scorer_names(scorers: Sequence[Scorer] | None = None) -> list[str]:
    """The names of the scores an answer is chosen by."""
    return [s.name for s in (scorers if scorers is not None else default_scorers())] + ["bridge"]
