"""What a question asks for, and whether a sentence gives it.

:func:`question_kind` reads the question's wording: a date for "when" or "what year", a
number for "how many" or "how tall", a name for "who", "where" and "which …" / "what …"
followed by a noun; an explanation for any other "how …" or "why …"; ``any``
otherwise. :func:`kind_scores` says of each sentence whether it holds that kind of thing
and does not merely repeat the question (a year the question gives is not an answer to
it); :func:`new_names` are the names a text gives that the question does not hold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from sleuth.stages.explore import named_things
from sleuth.terms import CACHED_CHARS, content_terms

__all__ = ["kind_scores", "new_names", "question_kind"]

_KINDS = [
    ("date", re.compile(r"\b(?:when|what (?:year|date|decade|century)|which year|how long ago)\b")),
    (
        "number",
        re.compile(
            r"\bhow (?:many|much|long|old|tall|high|far|big|large|deep|wide|heavy)\b"
            r"|\bwhat (?:(?:is|was|are|were) )?(?:the )?(?:number|percentage|amount|population"
            r"|size)\b"
        ),
    ),
    ("name", re.compile(r"\b(?:who|whom|whose|where)\b")),
]
#: "Which location", "what station", "what is the name of": a name is asked for too.
_WHICH = (
    "name",
    re.compile(r"\b(?:which|what)\s+(?!(?:is|are|was|were|do|does|did|have|has)\b)[a-z]+"),
)

#: "How is Firefox developed?", "Why is WeWork investigated?": an explanation is asked
#: for, which no kind of word marks (a name or a number does not make a sentence one).
_EXPLAIN = ("explain", re.compile(r"^\W*(?:how|why)\b"))

_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b")
_MONTH = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December)\b"
)
_NUMBER = re.compile(r"\b\d[\d,.]*\b")
_NUMBER_WORDS = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"forty|fifty|hundred|thousand|million|billion)\b",
    re.IGNORECASE,
)


def question_kind(question: str) -> str:
    """What the question asks for: ``date``, ``number``, ``name``, ``explain`` or ``any``."""
    lowered = question.lower()
    for kind, rule in [*_KINDS, _WHICH, _EXPLAIN]:
        if rule.search(lowered):
            return kind
    return "any"


def new_names(text: str, asked: frozenset[str]) -> list[str]:
    """The names in ``text`` the question does not already hold."""
    if len(text) <= CACHED_CHARS:  # a sentence: scored again when the pages are together
        return list(_new_names(text, asked))
    return [n for n in named_things(text) if not content_terms(n) <= asked]


@lru_cache(maxsize=1 << 12)
def _new_names(text: str, asked: frozenset[str]) -> tuple[str, ...]:
    return tuple(n for n in named_things(text) if not content_terms(n) <= asked)


def kind_scores(question: str, texts: Sequence[str]) -> list[float]:
    """Each text's score for holding what ``question`` asks for: 1 when it holds it,
    0.5 for a month where a date is asked (or any name or number where the kind is
    ``any``), else 0; 0 for every text where an explanation is asked."""
    kind, asked = question_kind(question), content_terms(question)
    asked_numbers = set(_NUMBER.findall(question))
    out = []
    for text in texts:
        numbers = [n for n in _NUMBER.findall(text) if n not in asked_numbers]
        years = [y for y in _YEAR.findall(text) if y not in asked_numbers]
        names = new_names(text, asked) if kind in ("name", "any") else []
        if kind == "date":
            out.append(1.0 if years else 0.5 if _MONTH.search(text) else 0.0)
        elif kind == "number":
            out.append(1.0 if numbers or _NUMBER_WORDS.search(text) else 0.0)
        elif kind == "name":
            out.append(1.0 if names else 0.0)
        elif kind == "explain":
            out.append(0.0)
        else:
            out.append(0.5 if names or numbers else 0.0)
    return out
