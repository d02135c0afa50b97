"""Issue 23: the rule-based planner writes queries a person would type.

Over the offline web's questions and 30 HotpotQA questions (tests/data/questions), at
every depth: no query is a fragment (shorter than three words and naming nothing), none
is a run of another query's words, every query names the question's subject, and none
is the question with generic words glued on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleuth.stages.plan import rule_queries
from sleuth.stages.relevance import name_terms
from sleuth.terms import content_terms, is_subphrase, parse, phrase_words
from sleuth.testing._corpus import Corpus

DATA = Path(__file__).parent / "data"
GENERIC = {"explained", "advantages", "disadvantages", "comparison", "overview", "news"}


def _questions() -> list[str]:
    corpus = Corpus.load(DATA / "corpus")
    hotpot = json.loads((DATA / "questions" / "hotpotqa30.json").read_text(encoding="utf-8"))
    return [t.question for t in corpus.topics] + [q["question"] for q in hotpot]


QUESTIONS = _questions()


def test_the_question_sets_are_there() -> None:
    assert len(QUESTIONS) == len(Corpus.load(DATA / "corpus").topics) + 30


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_no_planned_query_is_a_fragment(depth: int) -> None:
    bad: list[str] = []
    for question in QUESTIONS:
        queries = rule_queries(question, depth)
        names = name_terms(question)
        parsed = parse(question)
        # The subject: what the question names outside its parts ("South Dakota and
        # police" are two parts; "NASA" names the subject of every moon's query).
        outside = [*parsed.tokens[: parsed.span[0]], *parsed.tokens[parsed.span[1] + 1 :]]
        subject = name_terms(" ".join(outside)) if parsed.items else names
        for query in queries[1:]:
            words = phrase_words(query)
            named = bool(name_terms(query) & names) or bool(content_terms(query) & names)
            if len(words) < 3 and not named:
                bad.append(f"fragment: {query!r} ({question})")
            if subject and not content_terms(query) & subject:
                bad.append(f"names nothing the question names: {query!r} ({question})")
            if set(words) & GENERIC and not set(words) & set(phrase_words(question)) & GENERIC:
                bad.append(f"generic words glued on: {query!r}")
        for n, query in enumerate(queries):
            for other in queries[n + 1 :]:
                if is_subphrase(query, other) or is_subphrase(other, query):
                    bad.append(f"sub-phrase: {query!r} / {other!r}")
    assert bad == []


def test_the_old_fragments_are_gone() -> None:
    planned = {
        q.lower() for question in QUESTIONS for d in (1, 2, 3) for q in rule_queries(question, d)
    }
    for fragment in ("released", "what have nasa", "its founder adam neumann", "trade talks"):
        assert fragment not in planned
