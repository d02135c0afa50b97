"""Grading one answer: a normalised match against the gold answer, or a judge model.

The **response** graded is what a reader takes as the report's answer: its ``## Answer``
section (the no-model report's chosen sentences), else the report's text up to its
Confidence, Sources or Gaps, at most :data:`MAX_RESPONSE` characters.

**Match** (always recorded): the response, normalised as HotpotQA's evaluation does
(lower case, no punctuation, no articles), holds the gold answer or one of its aliases
as whole words; each accepted form also counts without a parenthesis, with digits for
number words, and (a gold with a comma) its part before the comma. A gold "yes" or "no"
must be the response's first word. ``correct`` when it holds, ``not_attempted`` when
there is no response (the question failed, or no source was read), else ``incorrect``.

**Judge** (with a model): the ``judge`` prompt, SimpleQA's three grades (correct,
incorrect, not attempted), the model's reply recorded. A judge that fails or answers
with none of the three words leaves the match's grade, and says why.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sleuth.errors import LLMAuthError, LLMError
from sleuth.llm.models_table import model_info
from sleuth.llm.prompts import render_messages
from sleuth.models import Report
from sleuth.report.quote_check import answer_section

if TYPE_CHECKING:
    from sleuth.llm.client import LLMClient

__all__ = [
    "GRADES",
    "MAX_RESPONSE",
    "Grade",
    "Grading",
    "gold_forms",
    "holds",
    "judge",
    "match",
    "normalise",
    "parse_verdict",
    "response_of",
]

Grading = Literal["correct", "incorrect", "not_attempted"]
GRADES: tuple[Grading, ...] = ("correct", "incorrect", "not_attempted")
#: The most of a report's text a judge reads (a model report's opening and findings).
MAX_RESPONSE = 6000
#: The judge's reply: one word; a reasoning model may think first (stripped).
JUDGE_MAX_TOKENS = 1024

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_WORDS = "one two three four five six seven eight nine ten eleven twelve"
_NUMBER_WORDS = {word: str(n) for n, word in enumerate(_WORDS.split(" "), start=1)}
_END = re.compile(r"^## (Confidence|Sources|Gaps)\b", re.MULTILINE)
_VERDICT = re.compile(r"\b(NOT[_ ]ATTEMPTED|INCORRECT|CORRECT)\b")


def normalise(text: str) -> str:
    """HotpotQA's answer normalisation: lower case, no punctuation, no articles, one space."""
    text = text.lower().replace("’", "'")
    text = "".join(" " if c in string.punctuation or c in "–—“”‘" else c for c in text)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _digits(norm: str) -> str:
    return " ".join(_NUMBER_WORDS.get(w, w) for w in norm.split())


def gold_forms(answer: str, aliases: Sequence[str] = ()) -> list[str]:
    """The normalised forms of a gold answer (and its aliases) that count as finding it,
    longest first."""
    forms: set[str] = set()
    for given in (answer, *aliases):
        variants = {given, re.sub(r"\s*\([^)]*\)", "", given)}
        if "," in given:
            variants.add(given.split(",")[0])
        for variant in variants:
            norm = normalise(variant)
            if norm:
                forms |= {norm, _digits(norm)}
    return sorted(forms, key=len, reverse=True)


def holds(text: str, forms: Sequence[str]) -> bool:
    """Whether ``text`` (normalised) holds one of ``forms`` as whole words."""
    norm = normalise(text)
    padded = {f" {norm} ", f" {_digits(norm)} "}
    return any(f" {form} " in p for form in forms for p in padded)


def response_of(report: Report | None) -> str:
    """The part of ``report`` that is graded (see the module doc); "" without one."""
    if report is None or not report.sources:
        return ""
    answer = answer_section(report.markdown)
    if answer:
        return answer[:MAX_RESPONSE]
    body = re.sub(r"\A# .*\n", "", report.markdown)
    end = _END.search(body)
    return (body[: end.start()] if end else body).strip()[:MAX_RESPONSE]


def match(response: str, answer: str, aliases: Sequence[str] = ()) -> Grading:
    """The match grade of ``response`` against the gold (see the module doc)."""
    if not response.strip():
        return "not_attempted"
    gold = normalise(answer)
    if gold in ("yes", "no"):
        first = normalise(response).split()[:1]
        return "correct" if first == [gold] else "incorrect"
    return "correct" if holds(response, gold_forms(answer, aliases)) else "incorrect"


def parse_verdict(reply: str) -> Grading | None:
    """The grade a judge's reply names first (None when it names none)."""
    found = _VERDICT.search(reply.upper())
    if found is None:
        return None
    word = found.group(1).replace(" ", "_")
    return (
        "not_attempted"
        if word == "NOT_ATTEMPTED"
        else "correct"
        if word == "CORRECT"
        else "incorrect"
    )


@dataclass(frozen=True)
class Grade:
    """How one question was graded: the ``grade``, what decided it (``match`` or
    ``judge``), the match's own grade, and the judge's model, reply, tokens, cost and
    error (when one was asked)."""

    grade: Grading
    graded_by: Literal["match", "judge"]
    match: Grading
    response: str = ""
    judge_model: str | None = None
    judge_reply: str | None = None
    judge_error: str | None = None
    judge_tokens: int = 0
    judge_cost_usd: float | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """The ``eval`` object of a ``results.jsonl`` line."""
        return {
            "grade": self.grade,
            "graded_by": self.graded_by,
            "match": self.match,
            "response": self.response,
            "judge": None
            if self.judge_model is None
            else {
                "model": self.judge_model,
                "reply": self.judge_reply,
                "error": self.judge_error,
                "tokens": self.judge_tokens,
                "cost_usd": self.judge_cost_usd,
            },
        }


async def judge(
    client: LLMClient,
    question: str,
    answer: str,
    aliases: Sequence[str],
    response: str,
    *,
    model: str | None = None,
) -> Grade:
    """Grade ``response`` with the judge prompt on ``client`` (``model``: the judge's
    model, default the client's). A response that is empty is not attempted, without a
    call; a refused key raises :class:`~sleuth.errors.LLMAuthError`."""
    matched = match(response, answer, aliases)
    if not response.strip():
        return Grade("not_attempted", "match", matched, response)
    name = model or client.model_for("judge")
    messages = render_messages(
        "judge", question=question, gold=" | ".join([answer, *aliases]), response=response
    )
    try:
        reply = await client.chat(
            messages, stage="judge", model=name, max_tokens=JUDGE_MAX_TOKENS, temperature=0.0
        )
    except LLMAuthError:
        raise
    except LLMError as exc:
        return Grade(matched, "match", matched, response, name, judge_error=str(exc))
    tokens = reply.prompt_tokens + reply.completion_tokens
    cost = model_info(reply.model).cost_usd(reply.prompt_tokens, reply.completion_tokens)
    verdict = parse_verdict(reply.answer)
    if verdict is None:
        return Grade(
            matched,
            "match",
            matched,
            response,
            reply.model,
            reply.text,
            "the judge's reply names no grade",
            tokens,
            cost,
        )
    return Grade(verdict, "judge", matched, response, reply.model, reply.text, None, tokens, cost)
