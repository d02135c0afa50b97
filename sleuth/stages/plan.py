"""Stage 1, plan: turn a question into search queries.

The rule-based planner writes the queries a person would type: every query
is a search of its own that names the question's subject, none is a run of another's
words, and none is the question with generic words glued on ("… explained",
"… advantages disadvantages"). By depth:

* depth 1: the question as asked;
* depth 2: one query per part of a multi-part question (its main coordination, see
  :mod:`sleuth.terms`: "the Moon, Jupiter's moon Europa and Saturn's moon Titan" gives a
  query per moon, each with the rest of the question's key words), or, for a question
  without parts, its key words as a keyword query;
* depth 3: adds the keyword query to a multi-part question's (unless it holds a part's
  query as a run of words).

A part query that would be a run of the question's own words ("Mozilla's Firefox web
browser developed") starts with the question's wh-word instead ("how Mozilla's Firefox
web browser developed"); a part with no other key word around it is asked about
("what is JWT"). Queries are de-duplicated case-insensitively, the question first.

With a model, :func:`llm_plan` plans as MetaGPT's Researcher does: the model writes
a few search queries, they are searched, and the model then writes follow-up
queries for what those results do not cover yet. Replies are parsed tolerantly and
their queries cleaned (control characters, no words, a bare URL); when no usable list
comes back the rule-based plan is used and ``Plan.note`` (and the report's Gaps) says
why. When the model's first queries find nothing at all, the rule-based queries are
searched instead, and the note says so.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from sleuth.errors import LLMAuthError, LLMError
from sleuth.llm.parse import expect_list, is_empty_answer
from sleuth.models import Failure, Plan, SearchHit
from sleuth.terms import is_subphrase, keywords, parse, phrase_words
from sleuth.urls import canonicalize

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM

_WH = frozenset(["how", "why", "what", "when", "where", "who", "which"])


def _core(question: str) -> str:
    """The question without trailing punctuation."""
    return question.strip().rstrip("?!.。？！ ").strip() or question.strip()


def _part_query(words: list[str], question: str) -> str | None:
    """A part's query, made a search of its own (see the module docstring)."""
    query = " ".join(words)
    if not query:
        return None
    if not is_subphrase(query, question):
        return query
    first = phrase_words(question)[:1]
    if first and first[0] in _WH:
        return f"{first[0]} {query}"
    if phrase_words(query) == phrase_words(question):
        return None
    return f"what is {query}"


def _coordination_queries(
    question: str, span: tuple[int, int], items: tuple[tuple[str, ...], ...]
) -> list[str]:
    tokens = parse(question).tokens
    before = keywords(tokens[: span[0]])
    after = keywords(tokens[span[1] + 1 :], start=span[1] + 1)
    out = []
    for item in items:
        query = _part_query([*before, *keywords(item, start=1), *after], question)
        if query:
            out.append(query)
    return out


def keyword_query(question: str) -> str | None:
    """The question's key words as one query; None when that is a run of its own words."""
    words = keywords(parse(question).tokens)
    query = " ".join(words)
    return query if words and not is_subphrase(query, question) else None


def part_queries(question: str) -> list[str]:
    """One query per part of the question's main coordination ([] without parts)."""
    parsed = parse(question)
    if len(parsed.items) < 2:
        return []
    return _coordination_queries(question, parsed.span, parsed.items)


def rule_queries(question: str, depth: int) -> list[str]:
    """The rule-based queries; see the module docstring."""
    if depth not in (1, 2, 3):
        raise ValueError(f"depth must be 1, 2 or 3, not {depth}")
    queries = [question.strip()]
    parts = part_queries(question)
    if depth >= 2:
        queries += parts
        if not parts or depth >= 3:
            queries += [q for q in [keyword_query(question)] if q]
    return no_subphrases(dedupe(queries))


def no_subphrases(queries: list[str]) -> list[str]:
    """``queries`` in order, without any whose words run inside an earlier one's, or
    hold an earlier one's words as a run (the earlier query is kept)."""
    kept: list[str] = []
    for query in queries:
        if not any(is_subphrase(query, other) or is_subphrase(other, query) for other in kept):
            kept.append(query)
    return kept


def dedupe(queries: list[str]) -> list[str]:
    """Drop repeats (case and spacing insensitive), keeping first occurrences in order."""
    seen: set[str] = set()
    out: list[str] = []
    for query in queries:
        key = " ".join(query.lower().split())
        if key and key not in seen:
            seen.add(key)
            out.append(" ".join(query.split()))
    return out


def whole_question(queries: list[str]) -> list[str]:
    """The first query and the others that hold every key word of it.

    For a rule-based plan: the question and its keyword query, not the queries of
    its parts.
    """
    if not queries:
        return []
    from sleuth.terms import content_terms

    need = content_terms(queries[0])
    return [queries[0], *(q for q in queries[1:] if need <= content_terms(q))]


def make_plan(question: str, depth: int) -> Plan:
    """The rule-based plan; the LLM planner (when configured) returns the same record."""
    return Plan(question=question, queries=rule_queries(question, depth), planner="rules")


#: Queries the model writes first, and follow-ups it may add after seeing their
#: results, by depth (MetaGPT: 4 and 4). Depth 1 skips the follow-up round.
FIRST_QUERIES = {1: 3, 2: 4, 3: 6}
FOLLOW_UPS = {1: 0, 2: 4, 3: 6}
#: Results per query shown to the model when it plans follow-ups.
RESULTS_SHOWN = 5
#: Listed under a query in the refine prompt whose results were all listed before.
SAME_PAGES = "- (only pages listed above)"
MAX_QUERY_CHARS = 200

SearchFn = Callable[[list[str]], Awaitable[list[SearchHit]]]


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_WORD = re.compile(r"[^\W_]{2,}|\d")
_URL_ONLY = re.compile(r"^(?:https?://|www\.)\S*$", re.IGNORECASE)


def _clean_queries(items: list[str], count: int) -> list[str]:
    """Usable queries: one line, not too long, with a word, no control character (a NUL
    byte), not a bare URL; de-duplicated, at most ``count``. A model's reply is data."""
    kept = [" ".join(item.split()) for item in items]
    kept = [
        q
        for q in kept
        if q
        and len(q) <= MAX_QUERY_CHARS
        and not _CONTROL.search(q)
        and _WORD.search(q)
        and not _URL_ONLY.match(q)
    ]
    return dedupe(kept)[:count]


async def llm_plan(
    question: str,
    depth: int,
    llm: RunLLM,
    search: SearchFn,
    relates: Callable[[str], bool] | None = None,
) -> Plan:
    """Plan with the model: first queries, their search, then follow-up queries.

    ``search`` runs queries through the search stage (so their hits are kept for
    the rest of the run and never searched twice). ``relates`` judges each query the
    model writes against the question (the relevance judgement, given by the pipeline):
    one that does not relate is not searched. Falls back to :func:`make_plan` when the
    first reply holds no usable query, or none that relates (a small model that plans
    badly never makes the research worse than no model; said in the Gaps).
    """
    from sleuth.llm.run import reply_tokens

    try:
        reply = await llm.ask(
            "plan",
            stage="plan",
            max_tokens=reply_tokens(150, llm.window("plan")),
            today=llm.today,
            question=question,
            count=FIRST_QUERIES[depth],
            language=llm.language,
        )
        first = _clean_queries(expect_list(reply.text, what="search queries"), FIRST_QUERIES[depth])
    except LLMAuthError:
        raise
    except LLMError as exc:
        llm.fell_back("plan", exc, "the rule-based queries were used")
        plan = make_plan(question, depth)
        return plan.model_copy(update={"note": f"LLM planning failed: {exc}"})
    if not first:  # every query in the reply was junk (no words, a NUL byte, a URL)
        _note(
            llm,
            "LLM plan: the model's queries were unusable (no words, control "
            "characters or bare URLs); the rule-based queries were used",
        )
        return make_plan(question, depth).model_copy(
            update={"note": "the model's queries were unusable"}
        )
    related = [q for q in first if relates is None or relates(q)]
    if not related:
        _note(
            llm,
            "LLM plan: the model's queries do not bear on the question; the rule-based "
            "queries were used",
        )
        return make_plan(question, depth).model_copy(
            update={"note": "the model's queries do not bear on the question"}
        )
    first = related
    llm.info(f"LLM plan: {len(first)} queries", queries=first)
    hits = await search(first)
    if not hits:
        # The model's queries found nothing at all: the rule-based ones are searched.
        rules = [q for q in make_plan(question, depth).queries if q not in first]
        hits = await search(rules) if rules else []
        _note(
            llm,
            "LLM plan: the model's queries found nothing; the rule-based queries "
            "were searched instead",
        )
        first = first + rules
    follow_ups, note = await _follow_ups(question, depth, llm, first, hits)
    follow_ups = [q for q in follow_ups if relates is None or relates(q)]
    return Plan(question=question, queries=dedupe(first + follow_ups), planner="llm", note=note)


def _note(llm: RunLLM, reason: str) -> None:
    """Tell the report's Gaps how the plan came about."""
    llm.failures.append(Failure(url="", stage="llm", reason=reason))


def _results_text(queries: list[str], hits: list[SearchHit], llm: RunLLM, budget: int) -> str:
    """Titles and snippets per query, as many as fit ``budget`` tokens, best-ranked first.

    A page several queries found is listed once, under the first query to reach it:
    related queries find mostly the same pages, and a repeat tells the model nothing.
    """
    by_query = {q: [h for h in hits if h.query == q][:RESULTS_SHOWN] for q in queries}
    chosen: dict[str, list[str]] = {q: [] for q in queries}
    listed: set[str] = set()
    used = 0
    # Round-robin over queries, so a long answer to one query cannot crowd out the rest.
    for position in range(RESULTS_SHOWN):
        for query in queries:
            if position >= len(by_query[query]):
                continue
            hit = by_query[query][position]
            url = canonicalize(hit.url)
            if url in listed:
                continue
            line = f"- {' '.join(hit.title.split())}: {' '.join(hit.snippet.split())[:300]}"
            cost = llm.tokens(line, "refine") + 1
            if used + cost > budget:
                continue
            used += cost
            listed.add(url)
            chosen[query].append(line)
    return "\n\n".join(
        f"Query: {q}\n" + "\n".join(lines or [SAME_PAGES])
        for q, lines in chosen.items()
        if by_query[q]
    )


async def _follow_ups(
    question: str, depth: int, llm: RunLLM, first: list[str], hits: list[SearchHit]
) -> tuple[list[str], str | None]:
    """The model's follow-up queries after seeing the first results, and a note."""
    from sleuth.llm.run import reply_tokens

    count = FOLLOW_UPS[depth]
    if count == 0:
        return [], None
    if not hits:
        return [], "the first searches found nothing, so no follow-up queries were planned"
    values = {
        "today": llm.today,
        "question": question,
        "queries": "\n".join(first),
        "count": count,
        "language": llm.language,
    }
    try:
        reply_size = reply_tokens(150, llm.window("refine"))
        budget = llm.text_budget(
            "refine", llm.overhead("refine", "refine", results="", **values), reply_size
        )
        results = _results_text(first, hits, llm, budget)
        reply = await llm.ask(
            "refine", stage="refine", max_tokens=reply_size, results=results, **values
        )
        if is_empty_answer(reply.text):
            return [], "the model found the first searches sufficient"
        extra = _clean_queries(expect_list(reply.text, what="follow-up queries"), count)
    except LLMAuthError:
        raise
    except LLMError as exc:
        llm.fell_back("refine", exc, "only the first queries were searched")
        return [], f"LLM follow-up planning failed: {exc}"
    known = {" ".join(q.lower().split()) for q in first}
    return [q for q in extra if " ".join(q.lower().split()) not in known], None
