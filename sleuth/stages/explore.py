"""Deep research's exploring step: sub-questions, learnings and follow-up questions.

A deep research (:mod:`sleuth.pipeline.deep`) researches a tree of questions. This
stage writes its parts:

* **Sub-questions** (the first level). With a model, the ``subquestions`` prompt; without
  one, :func:`rule_subquestions`: the question itself, then the things it names (titles
  in quotes, capitalised names) and the sides of a comparison, each researched on its own.
* **Learnings and follow-ups** of a branch once its pages are read. With a model, the
  ``learn`` prompt: short cited statements, and follow-up questions for what the sources
  leave open. Without one, :func:`bridge_entities`: the names and titles the branch's
  pages mention and the question does not (the bridge of a multi-hop question: the film
  a town page names, the publisher an author's page names), to be searched as a second
  hop.
* **What is known already** (:func:`repeats`): a follow-up whose words all appear in a
  question already asked, or that shares most of them with one, is not explored.

Replies are parsed tolerantly; when no usable answer comes back the rule-based path is
taken and the run's Gaps say why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sleuth.errors import LLMAuthError, LLMError, ParseError
from sleuth.llm.parse import expect_list, json_values, parse_list, strip_think
from sleuth.models import Failure, Source
from sleuth.stages.judge import Judge
from sleuth.stages.names import (
    bridge_entities,
    mentions,
    named_by,
    named_things,
    own_first,
    quoted_titles,
    repeats,
    terms,
    titled,
)
from sleuth.stages.plan import MAX_QUERY_CHARS, dedupe
from sleuth.stages.write import sources_block
from sleuth.terms import parse
from sleuth.urls import canonicalize

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM

__all__ = [
    "Learning",
    "bridge_entities",
    "learn",
    "llm_subquestions",
    "mentions",
    "named_by",
    "named_things",
    "own_first",
    "quoted_titles",
    "repeats",
    "rule_subquestions",
    "terms",
    "titled",
]

#: Learnings kept per branch (the prompt asks for at most 8).
MAX_LEARNINGS = 8
_SPLIT = re.compile(r"\s*(?:,\s*(?:and|or)\s+|\s+(?:and|or|vs\.?|versus)\s+|,\s*)", re.IGNORECASE)
_CITE = re.compile(r"\[(\d{1,3})\]")
#: Words that open a question, not a side of a comparison ("Which is better, X or Y").
_ASKS = frozenset(
    {
        "which",
        "what",
        "who",
        "whom",
        "whose",
        "how",
        "why",
        "when",
        "where",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
    }
)


# -- sub-questions -----------------------------------------------------------------------
def rule_subquestions(question: str, breadth: int) -> list[str]:
    """The sub-questions of ``question`` without a model, at most ``breadth``.

    The question itself comes first (its own search finds the pages that answer it
    most directly); then the parts it names, as it names them ("the Moon, Jupiter's moon
    Europa and Saturn's moon Titan": ``Moon``, ``Jupiter's moon Europa``, ``Saturn's moon
    Titan``; not the agency that found them); parts that are plain words ("markets and
    trade talks") are each the question asked of that part alone. Without parts, each
    thing it names (a film in quotes, a person, a place), researched on its own, which
    is how the first hop of a multi-hop question is found; then the sides of a
    comparison ("X or Y", "X vs Y") when it names nothing.
    """
    subs = [question.strip(), *_part_questions(question)]
    if len(subs) == 1:
        core = question.strip().rstrip("?!.。？！ ").strip()
        names = [
            n for n in named_things(core) if n.lower() != core.lower() and not _describes(n, core)
        ]
        # A name inside a longer one ("York" in "New York") is researched as the longer one.
        names = [
            n
            for n in names
            if not any(n != other and n.lower() in other.lower() for other in names)
        ]
        parts = [p.strip() for p in _SPLIT.split(core) if len(terms(p)) >= 1]
        # The sides of a comparison are short phrases, not what comes before them.
        parts = [p for p in parts if _phrase(p.split()) and p.split()[0].lower() not in _ASKS]
        subs += names
        if len(subs) == 1 and len(parts) > 1:
            subs += parts
    return dedupe(subs)[: max(1, breadth)]


def _describes(name: str, question: str) -> bool:
    """Whether the question uses ``name`` to describe something else: after "a" or "an"
    and before a word in lower case ("an NFL team", "a 2016 Indian Hindi-language film")."""
    pattern = rf"\b[Aa]n?\s+(?:\d+\s+)?{re.escape(name)}\s+[a-z]"
    return re.search(pattern, question) is not None


def _part_questions(question: str) -> list[str]:
    """The parts of the question's main coordination as sub-questions: each part as the
    question names it when every part is a name (its capitalised words, not the words
    in lower case around them), else the question asked of each part alone when every
    part is a short phrase of words; [] without parts, when names and plain words are
    mixed, or when the coordination is inside one name ("Minister for Mines and
    Energy")."""
    parsed = parse(question)
    if len(parsed.parts) < 2:
        return []
    named = [any(w[:1].isupper() for w in item) for item in parsed.items]
    if all(named):
        joined = " and ".join(parsed.parts)
        if any(joined in name for name in named_things(question)):
            return []
        return [_name_of(item) for item in parsed.items]
    if any(named) or not all(_phrase(item) for item in parsed.items):
        return []
    tokens, (start, end) = parsed.tokens, parsed.span
    before, after = list(tokens[:start]), list(tokens[end + 1 :])
    out = []
    for part in parsed.parts:
        text = " ".join([*before, part, *after])
        out.append(re.sub(r"\s+([?!.,;:])", r"\1", text))
    return out


def _name_of(item: Sequence[str]) -> str:
    """A coordinated item as a name: from its first capitalised word to its last
    capitalised word or number ("overthrew Gruffydd" is "Gruffydd", "Big Hero 6 films"
    "Big Hero 6")."""
    marks = [n for n, w in enumerate(item) if w[:1].isupper() or w[:1].isdigit()]
    first = next(n for n, w in enumerate(item) if w[:1].isupper())
    return " ".join(item[first : marks[-1] + 1])


def _phrase(item: Sequence[str]) -> bool:
    """Whether a coordinated item of plain words is a short phrase with a word of its
    own ("trade talks"; not "70 m", nor a clause)."""
    return len(item) <= 4 and any(w.isalpha() and len(w) > 2 for w in item)


def _clean_questions(items: Sequence[str], count: int) -> list[str]:
    kept = [" ".join(item.split()) for item in items]
    return dedupe([q for q in kept if q and len(q) <= MAX_QUERY_CHARS])[:count]


async def llm_subquestions(
    question: str, breadth: int, llm: RunLLM
) -> tuple[list[str], str | None]:
    """The question itself, then the model's sub-questions that bear on it (judged as a
    page would be, :mod:`sleuth.stages.judge`), and a note; the rule-based sub-questions
    when the call fails or none of the model's relates to the question (a small model
    that plans badly never makes the research worse than no model)."""
    from sleuth.llm.run import reply_tokens

    try:
        reply = await llm.ask(
            "subquestions",
            stage="subquestions",
            max_tokens=reply_tokens(40 * breadth, llm.window("subquestions")),
            today=llm.today,
            question=question,
            count=breadth,
            language=llm.language,
        )
        subs = _clean_questions(expect_list(reply.text, what="sub-questions"), breadth)
    except LLMAuthError:
        raise
    except LLMError as exc:
        llm.fell_back("subquestions", exc, "the rule-based sub-questions were used")
        return rule_subquestions(question, breadth), f"LLM sub-questions failed: {exc}"
    judge = Judge(question)
    own = _key(question)
    related = [q for q in subs if " ".join(q.lower().split()) != own and judge.page("", q).on_topic]
    if subs and not related:
        note = "the model's sub-questions do not bear on the question"
        llm.failures.append(
            Failure(
                url="",
                stage="llm",
                reason=f"LLM sub-questions: {note}; the rule-based sub-questions were used",
            )
        )
        return rule_subquestions(question, breadth), note
    subs = dedupe([question.strip(), *related])[: max(1, breadth)]
    llm.info(f"LLM plan: {len(subs)} sub-questions", subquestions=subs)
    return subs, None


def _key(question: str) -> str:
    return " ".join(question.lower().rstrip("?!.。？！ ").split())


# -- learnings and follow-ups ------------------------------------------------------------
@dataclass(frozen=True)
class Learning:
    """A statement a branch's sources make, and the canonical URLs of those sources."""

    text: str
    urls: tuple[str, ...] = field(default_factory=tuple)


def _fallback_learnings(sources: Sequence[Source]) -> list[Learning]:
    """Each source's summary (or first passage) as one learning: the path without a model."""
    out = []
    for source in sources:
        text = source.summary or (source.passages[0] if source.passages else "")
        if text.strip():
            out.append(Learning(" ".join(text.split())[:600], (canonicalize(source.url),)))
    return out[:MAX_LEARNINGS]


def _parse_learn(text: str) -> tuple[list[str], list[str]]:
    """(learnings, follow-ups) of a learn reply; ParseError when it has neither."""
    answer = strip_think(text)
    for value in json_values(answer):
        if isinstance(value, dict):
            lists = {
                str(k).lower().replace("-", "_").replace(" ", "_"): v
                for k, v in value.items()
                if isinstance(v, list)
            }
            learned = [str(v) for v in lists.get("learnings", []) if isinstance(v, str)]
            follow = [
                str(v)
                for v in lists.get("follow_ups", lists.get("followups", []))
                if isinstance(v, str)
            ]
            if learned or follow or "learnings" in lists:
                return learned, follow
    learned = parse_list(answer)
    if not learned:
        raise ParseError("the model's reply had no learnings", excerpt=answer[:80])
    return learned, []


async def learn(
    llm: RunLLM, question: str, subquestion: str, sources: Sequence[Source], count: int
) -> tuple[list[Learning], list[str]]:
    """What a branch's ``sources`` established (cited), and at most ``count`` follow-ups.

    ``sources`` are numbered as the branch read them (1, 2, …); a learning's citations
    become the canonical URLs of those sources, and one that cites none is dropped. On a
    model failure each source's summary is a learning and there are no follow-ups.
    """
    from sleuth.llm.run import reply_tokens

    if not sources:
        return [], []
    local = [s.model_copy(update={"id": n}) for n, s in enumerate(sources, start=1)]
    urls = {s.id: canonicalize(s.url) for s in local}
    values: dict[str, object] = {
        "question": question,
        "subquestion": subquestion,
        "count": count,
        "language": llm.language,
    }
    try:
        reply_size = reply_tokens(60 * MAX_LEARNINGS, llm.window("learn"))
        budget = llm.text_budget(
            "learn", llm.overhead("learn", "learn", sources="", **values), reply_size
        )
        reply = await llm.ask(
            "learn",
            stage="learn",
            max_tokens=reply_size,
            sources=sources_block(local, llm, budget, stage="learn"),
            **values,
        )
        learned, follow = _parse_learn(reply.text)
    except LLMAuthError:
        raise
    except LLMError as exc:
        llm.fell_back("learn", exc, "each source's summary stands as what the branch learned")
        return _fallback_learnings(sources), []
    out = []
    for text in learned[:MAX_LEARNINGS]:
        cited = tuple(dict.fromkeys(urls[n] for n in map(int, _CITE.findall(text)) if n in urls))
        statement = " ".join(_CITE.sub("", text).split())
        if cited and statement:
            out.append(Learning(statement, cited))
    return out, _clean_questions(follow, count)
