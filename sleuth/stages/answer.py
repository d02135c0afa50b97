"""The answer first: the few sentences across the sources that best answer the question.

Every whole sentence of every source (:mod:`sleuth.stages.sentences`: no reference,
template, heading, headline or navigation lines) is a candidate. A sentence opening
with "He", "She", "It" or "They" is scored as saying its page's subject (the page's
title): "He was a two-time Pro Bowl selection" on Deltha O'Neal's page names him. Each
:class:`Scorer` (:mod:`sleuth.stages.answer_scores`) gives every candidate a number;
the numbers are standardised over the candidates (z-scores, each within ±3) and added
with the scorer's weight:

``bm25``
    BM25 (``bm25s``) of the sentence against the question;
``terms``
    the share of the question's key terms the sentence holds (its page's title counts
    half: a page about the question's subject makes "He was born in 1950" an answer);
``kind``
    whether it holds what the question asks for and does not say itself: a year or a
    date for "when", a number for "how many", a name for "who", "where", "which …",
    "what …" (:mod:`sleuth.stages.asks`); nothing for any other "how …" or "why …",
    which asks for an explanation;
``rank``
    the source's rank (the better-ranked page first, all else equal);
``meaning``
    the cosine of the question with the sentence (its page's title before it) in
    sleuth's static embedding (:mod:`sleuth.embedding`): words that are not the
    question's but mean what it asks;
``bridge``
    the second hop of a multi-hop question: the sentence names, or sits on the page of,
    a name that the best sentences of the first pass give and the question does not
    (no second hop for a "how …" or "why …").

The best sentences are taken in turn, each next one by its score less what the chosen
ones already say of the question (the question's terms they hold count for no second
sentence: one that says the rest of the question comes before one more restatement of
its first half) and less a cost per word; a sentence that says what a chosen one says
(most of its content words) is merged into it, both sources cited; at most
:data:`PER_SOURCE` from one source; until :data:`MAX_SENTENCES` sentences or
:data:`MAX_WORDS` words. They are shown best first, but a sentence opening with a
pronoun right after the sentence of its page that says whom it means. A sentence that
leans on the one before it (:func:`sleuth.stages.subjects.leaning`: "And …", "That's …",
"It …" after a sentence naming someone else) is taken only right after it. A sentence that
names its page's subject only by a pronoun or part of a name ("Bach is widely known …")
is labelled with the subject, as the page's first sentence names it in full ("Richard
David Bach") where it does.

A scorer is a name, a weight and a function of the question and the candidates
(:func:`default_scorers`); the weights were chosen on the tune split of
``python -m bench.answer`` (see bench/NOTEBOOK.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sleuth import tuned
from sleuth.models import Answer, AnswerSentence, Page, Source, TextSpan
from sleuth.stages.answer_scores import (
    BRIDGE_WEIGHT,
    Candidate,
    Scorer,
    Words,
    bridge_scores,
    bridges,
    combined,
    default_scorers,
    scorer_names,
    zscores,
)
from sleuth.stages.asks import question_kind
from sleuth.stages.names import named_by
from sleuth.stages.read import MAX_PASSAGE
from sleuth.stages.sentences import passages, sentences
from sleuth.stages.subjects import (
    leaning,
    leans_back,
    subject_of,
)
from sleuth.terms import content_terms

__all__ = [
    "MAX_SENTENCES",
    "MAX_WORDS",
    "Candidate",
    "Scorer",
    "answer_tree",
    "best_answer",
    "candidates_of",
    "default_scorers",
    "question_kind",
    "scorer_names",
    "with_answer_passages",
]

MAX_SENTENCES = 5
MIN_SENTENCES = 3
MAX_WORDS = 120
#: Sentences longer than this are not taken into an answer (they would crowd it out).
MAX_SENTENCE_WORDS = 60
MIN_SENTENCE_WORDS = 4
PER_SOURCE = 2
#: A sentence sharing this share of its content words with a chosen one says the same.
SAME_SHARE = 0.6
#: Sentences of one page considered (the first ones: a page's answer is rarely deeper).
PER_PAGE = 300
#: A question ("Have an Amazon Alexa device?"), a sentence its page cut short ("Google
#: confirmed this in a statement…") or one that opens a list ("The newly selected five
#: are:"): none states an answer.
_NOT_STATED = re.compile(r"(?:\?|…|\.\.\.|:)[\"'”’)\]]*$")


# -- the candidates -----------------------------------------------------------------------------
def candidates_of(sources: Sequence[Source], texts: Mapping[int, str]) -> list[Candidate]:
    """The sentences of each source that an answer may quote, in source order: whole,
    neither too short nor too long, not a question, not cut short by its page.

    ``texts`` holds each source's stored text by id; a source without one offers its
    passages (their sentences then have no place in a stored text).
    """
    out = []
    for rank, source in enumerate(sources):
        text = texts.get(source.id) or "\n\n".join(source.passages)
        said = sentences(text)[:PER_PAGE]
        leans = leaning([x.text for x in said], [x.block for x in said], source.title)
        for order, sentence in enumerate(said):
            words = len(sentence.text.split())
            if (
                sentence.whole
                and MIN_SENTENCE_WORDS <= words <= MAX_SENTENCE_WORDS
                and not _NOT_STATED.search(sentence.text)
            ):
                out.append(Candidate(source.id, rank, source.title, sentence, order, leans[order]))
    return out


# -- choosing -------------------------------------------------------------------------------------
@dataclass
class _Chosen:
    candidate: Candidate
    score: float
    terms: frozenset[str]
    also: list[Candidate]


def _same(terms: frozenset[str], other: frozenset[str]) -> bool:
    union = terms | other
    return bool(union) and len(terms & other) >= SAME_SHARE * len(union)


#: How much a sentence's share of the question's terms that the chosen sentences do not
#: yet say counts, beside its first-pass score (in the ``terms`` scorer's unit).
COVER_WEIGHT = tuned.COVER_WEIGHT
#: What a sentence's length costs it, per 20 words: the word budget holds more short
#: sentences than long ones.
LENGTH_WEIGHT = tuned.LENGTH_WEIGHT


@dataclass(frozen=True)
class _Cover:
    """What each candidate says of the question's terms, to weigh it against what the
    answer already says: the question's terms, each candidate's own and its title's."""

    asked: frozenset[str]
    own: list[frozenset[str]]
    titles: list[frozenset[str]]
    spread: float

    @classmethod
    def of(cls, question: str, candidates: Sequence[Candidate]) -> _Cover:
        asked = content_terms(question)
        own = [content_terms(c.said) & asked for c in candidates]
        titled_terms: dict[str, frozenset[str]] = {}
        titles = [
            titled_terms.setdefault(c.title, content_terms(c.title) & asked) for c in candidates
        ]
        cover = cls(asked, own, titles, 1.0)
        first = [cover.share(i, frozenset()) for i in range(len(candidates))]
        mean = sum(first) / max(1, len(first))
        spread = math.sqrt(sum((v - mean) ** 2 for v in first) / max(1, len(first)))
        return cls(asked, own, titles, spread if spread > 1e-9 else 1.0)

    def share(self, i: int, said: frozenset[str]) -> float:
        """Candidate ``i``'s share of the question's terms that ``said`` lacks (its
        title's count half, as in the ``terms`` scorer)."""
        if not self.asked:
            return 0.0
        own = self.own[i] - said
        title = self.titles[i] - said - own
        return (len(own) + 0.5 * len(title)) / len(self.asked)


def _choose(
    question: str,
    ranked: Sequence[tuple[float, Candidate]],
    max_sentences: int,
    max_words: int,
    front: int = 0,
) -> list[_Chosen]:
    """The answer's sentences from ``ranked`` (its first ``front`` taken in order first):
    each next one the best by its score, where the question's terms count only as far as
    the sentences chosen so far do not say them (a second sentence that restates the
    first gains nothing from it; one that says the rest of the question does)."""
    cover = _Cover.of(question, [c for _, c in ranked])
    pool = list(range(len(ranked)))
    said: frozenset[str] = frozenset()
    chosen: list[_Chosen] = []
    words = 0
    per_source: dict[int, int] = {}

    def worth(i: int) -> float:
        lost = cover.share(i, frozenset()) - cover.share(i, said)
        size = len(ranked[i][1].text.split())
        return ranked[i][0] - COVER_WEIGHT * lost / cover.spread - LENGTH_WEIGHT * size / 20

    while pool and len(chosen) < max_sentences:
        # What the chosen say changes only when one is taken: rank the rest again then.
        order = pool[:1] if pool[0] < front else sorted(pool, key=lambda i: (-worth(i), i))
        for at in order:
            pool.remove(at)
            score, c = ranked[at]
            terms = content_terms(c.text)
            twin = next((x for x in chosen if _same(terms, x.terms)), None)
            if twin is not None:
                if c.source != twin.candidate.source and all(
                    a.source != c.source for a in twin.also
                ):
                    twin.also.append(c)
                continue
            size = len(c.text.split())
            if words + size > max_words or per_source.get(c.source, 0) >= PER_SOURCE:
                continue
            if _unexplained(c, chosen):
                continue
            chosen.append(_Chosen(c, score, terms, []))
            said |= cover.own[at]
            words += size
            per_source[c.source] = per_source.get(c.source, 0) + 1
            break
    return chosen


def _sentence(chosen: _Chosen, placed: set[int]) -> AnswerSentence:
    every = [chosen.candidate, *chosen.also]
    return AnswerSentence(
        text=chosen.candidate.text,
        sources=[c.source for c in every],
        spans=[
            TextSpan(source=c.source, start=c.sentence.start, end=c.sentence.end)
            for c in every
            if c.source in placed
        ],
        score=round(chosen.score, 3),
    )


def best_answer(
    question: str,
    sources: Sequence[Source],
    texts: Mapping[int, str],
    *,
    scorers: Sequence[Scorer] | None = None,
    max_sentences: int = MAX_SENTENCES,
    max_words: int = MAX_WORDS,
) -> list[AnswerSentence]:
    """The sentences of ``sources`` that best answer ``question``, best first.

    ``texts``: each source's stored text by id (the spans point into it). ``scorers``:
    the first pass's (:func:`default_scorers`); the bridge pass is added to them.
    """
    ranked = ranked_candidates(question, sources, texts, scorers)
    placed = {s.id for s in sources if texts.get(s.id)}
    ranked, front = _pages_first(question, ranked)
    chosen = _choose(question, ranked, max_sentences, max_words, front)
    return _subjects([_sentence(c, placed) for c in _reading_order(chosen)], chosen, texts)


def ranked_candidates(
    question: str,
    sources: Sequence[Source],
    texts: Mapping[int, str],
    scorers: Sequence[Scorer] | None = None,
) -> list[tuple[float, Candidate]]:
    """Every candidate sentence of ``sources`` with its score for ``question``, best
    first (the first pass's scorers, then the bridge pass)."""
    candidates = candidates_of(sources, texts)
    if not candidates:
        return []
    scorers = list(scorers if scorers is not None else default_scorers())
    first = combined(question, candidates, scorers)
    if question_kind(question) == "explain":  # "how …?", "why …?": no name to hop to
        total = first
    else:
        found = bridges(question, candidates, first)
        bridge = zscores(bridge_scores(candidates, found, Words.of(candidates)))
        total = [f + BRIDGE_WEIGHT * b for f, b in zip(first, bridge, strict=True)]
    return sorted(zip(total, candidates, strict=True), key=lambda p: (-p[0], p[1].rank, p[1].order))


#: Words of a question that sets things side by side ("X or Y", "both", "respective").
_COMPARES = re.compile(
    r"\b(?:or|both|either|neither|respective(?:ly)?|same|than|versus|vs)\b", re.IGNORECASE
)
#: Pages a comparing question names ("Robert Young" in "… or the birth of Robert Young?")
#: whose best sentence is taken first.
SUBJECT_PAGES = 2


def _pages_first(
    question: str, ranked: list[tuple[float, Candidate]]
) -> tuple[list[tuple[float, Candidate]], int]:
    """``ranked`` with, for a question that compares things it names ("Which came first,
    X or Y?"), the best sentence of each page it names moved to the front: the answer
    then says something of each side before what any one page says best. With how many
    were moved there."""
    if _COMPARES.search(question) is None:
        return ranked, 0
    best: dict[int, tuple[float, Candidate]] = {}
    for pair in ranked:
        best.setdefault(pair[1].source, pair)
    front = [p for p in best.values() if named_by(question, p[1].title)][:SUBJECT_PAGES]
    return front + [p for p in ranked if p not in front], len(front)


def _unexplained(c: Candidate, chosen: Sequence[_Chosen]) -> bool:
    """Whether ``c`` says something only right after the sentence before it (a pronoun
    its page's title does not explain, "They know that …"; "But it may …", "And …"), and
    that sentence is not chosen."""
    if not c.leans:
        return False
    return not any(
        x.candidate.source == c.source and x.candidate.order == c.order - 1 for x in chosen
    )


def _subjects(
    said: list[AnswerSentence], chosen: Sequence[_Chosen], texts: Mapping[int, str]
) -> list[AnswerSentence]:
    """``said`` with whom each sentence is about where it does not say in full
    (:func:`sleuth.stages.subjects.subject_of`) and the answer holds no earlier sentence
    of that page (see :attr:`AnswerSentence.subject`)."""
    by_text = {c.candidate.text: c.candidate for c in chosen}
    out = []
    for n, sentence in enumerate(said):
        c = by_text[sentence.text]
        earlier = any(by_text[x.text].source == c.source for x in said[:n])
        subject = None if earlier else subject_of(c.text, c.title, texts.get(c.source))
        out.append(sentence.model_copy(update={"subject": subject}) if subject else sentence)
    return out


def _reading_order(chosen: list[_Chosen]) -> list[_Chosen]:
    """Best first; but a sentence opening with a pronoun (or going on from the one before
    it: "But it …") follows the sentence of its own
    page, chosen too, that comes before it there ("It was founded in 1850" after the
    sentence that says what "it" is), which moves up to it if it ranked lower."""
    out: list[_Chosen] = []
    for c in chosen:
        if any(x is c for x in out):
            continue
        earlier = [
            x
            for x in chosen
            if x.candidate.source == c.candidate.source and x.candidate.order < c.candidate.order
        ]
        if not leans_back(c.candidate.text) or not earlier:
            out.append(c)
            continue
        antecedent = max(earlier, key=lambda x: x.candidate.order)
        at = next((n for n, x in enumerate(out) if x is antecedent), None)
        if at is None:
            out += [antecedent, c]
        else:
            out.insert(at + 1, c)
    return out


#: A deep report's section answers: fewer sentences, each section being one part.
SECTION_SENTENCES = 3
SECTION_WORDS = 80


def answer_tree(
    topic: str,
    sources: list[Source],
    pages: Sequence[tuple[object, Page]],
    groups: Sequence[tuple[str, Sequence[int]]],
) -> tuple[list[Source], Answer, list[list[AnswerSentence]]]:
    """A deep report's answers: the whole question's over every source, and each group's
    (a sub-question with its follow-ups: its question and source ids) over its own
    sources; with the sources' passages holding what the answers quote."""
    by_url = {page.final_url or page.url: page.text for _, page in pages}
    texts = {s.id: by_url[s.url] for s in sources if s.url in by_url}
    overall, parts = tree_answers(topic, sources, texts, groups)
    quoted = [*overall, *(s for part in parts for s in part)]
    answer = Answer(sentences=overall, scored_by=scorer_names())
    return with_answer_passages(sources, texts, quoted), answer, parts


def tree_answers(
    topic: str,
    sources: Sequence[Source],
    texts: Mapping[int, str],
    groups: Sequence[tuple[str, Sequence[int]]],
) -> tuple[list[AnswerSentence], list[list[AnswerSentence]]]:
    """A deep report's overall answer and each group's answer, from the sources' stored
    ``texts`` (see :func:`answer_tree`)."""
    overall = best_answer(topic, sources, texts)
    by_id = {s.id: s for s in sources}
    parts = [
        best_answer(
            question,
            [by_id[n] for n in dict.fromkeys(ids) if n in by_id],
            texts,
            max_sentences=SECTION_SENTENCES,
            max_words=SECTION_WORDS,
        )
        for question, ids in groups
    ]
    return overall, parts


def with_answer_passages(
    sources: Sequence[Source], texts: Mapping[int, str], answer: Sequence[AnswerSentence]
) -> list[Source]:
    """``sources`` with the passage around each answer sentence among its quoted passages
    (in page order), so the evidence under a source shows what the answer quotes of it."""
    wanted: dict[int, list[int]] = {}
    for sentence in answer:
        for span in sentence.spans:
            wanted.setdefault(span.source, []).append(span.start)
    out = []
    for source in sources:
        text = texts.get(source.id)
        if not text or source.id not in wanted:
            out.append(source)
            continue
        every = passages(text, MAX_PASSAGE)
        index = {p.text: n for n, p in enumerate(every)}
        have = {index[p] for p in source.passages if p in index}
        for start in wanted[source.id]:
            around = next((n for n, p in enumerate(every) if p.start <= start < p.end + 1), None)
            if around is not None:
                have.add(around)
        if any(p not in index for p in source.passages):  # passages of another making
            out.append(source)
            continue
        out.append(source.model_copy(update={"passages": [every[n].text for n in sorted(have)]}))
    return out
