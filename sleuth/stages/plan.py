"""Stage 1, plan: turn a question into search queries.

The rule-based planner follows grip's ``web_research`` decomposition by depth:

* depth 1: the question, and "what is <question>";
* depth 2: adds each side of an "and" / "vs" / "versus" split, "<question> comparison"
  for comparisons, and "<question> explained";
* depth 3: adds "how does <question> work", "why <question>" and
  "<question> advantages disadvantages".

Queries are de-duplicated case-insensitively, the original question first.

With a model, :func:`llm_plan` plans as MetaGPT's Researcher does: the model writes
a few search queries, they are searched, and the model then writes follow-up
queries for what those results do not cover yet. Replies are parsed tolerantly;
when no usable list comes back the rule-based plan is used and ``Plan.note`` (and
the report's Gaps) says why.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from sleuth.errors import LLMAuthError, LLMError
from sleuth.llm.parse import expect_list, is_empty_answer
from sleuth.models import Plan, SearchHit
from sleuth.urls import canonicalize

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM

_SPLIT = re.compile(r"\s+(?:and|vs\.?|versus)\s+", re.IGNORECASE)
_COMPARISON = re.compile(r"\b(?:vs\.?|versus|compared?|comparison|difference between)\b",
                         re.IGNORECASE)
# Prefixes a variant would otherwise repeat ("what is what is X").
_QUESTION_WORDS = re.compile(
    r"^(?:what|how|why|who|whom|whose|when|where|which|is|are|was|were|do|does|did|can|could|"
    r"should|would|will|shall|may|might|has|have|had)\b", re.IGNORECASE)


def _core(question: str) -> str:
    """The question without trailing punctuation, for templated variants."""
    return question.strip().rstrip("?!.。？！ ").strip() or question.strip()


def rule_queries(question: str, depth: int) -> list[str]:
    """grip's depth-based decomposition; see the module docstring."""
    if depth not in (1, 2, 3):
        raise ValueError(f"depth must be 1, 2 or 3, not {depth}")
    core = _core(question)
    asks = bool(_QUESTION_WORDS.match(core))
    queries = [question.strip()]
    if not asks:
        queries.append(f"what is {core}")
    if depth >= 2:
        parts = [p.strip() for p in _SPLIT.split(core) if p.strip()]
        if len(parts) > 1:
            queries.extend(parts)
        if _COMPARISON.search(core):
            queries.append(f"{core} comparison")
        queries.append(f"{core} explained")
    if depth >= 3:
        if not asks:
            queries.extend([f"how does {core} work", f"why {core}"])
        queries.append(f"{core} advantages disadvantages")
    return dedupe(queries)


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
    """The first query and the others that hold it whole (case-insensitively).

    For a rule-based plan: the question and its templated variants ("what is …",
    "… explained"), not the sides of a split comparison.
    """
    if not queries:
        return []
    core = " ".join(_core(queries[0]).lower().split())
    return [queries[0], *(q for q in queries[1:] if core in " ".join(q.lower().split()))]


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


def _clean_queries(items: list[str], count: int) -> list[str]:
    """Usable queries: one line, not too long, de-duplicated, at most ``count``."""
    kept = [" ".join(item.split()) for item in items]
    kept = [q for q in kept if q and len(q) <= MAX_QUERY_CHARS]
    return dedupe(kept)[:count]


async def llm_plan(question: str, depth: int, llm: RunLLM, search: SearchFn) -> Plan:
    """Plan with the model: first queries, their search, then follow-up queries.

    ``search`` runs queries through the search stage (so their hits are kept for
    the rest of the run and never searched twice). Falls back to
    :func:`make_plan` when the first reply holds no queries.
    """
    from sleuth.llm.run import reply_tokens

    try:
        reply = await llm.ask(
            "plan", stage="plan", max_tokens=reply_tokens(150, llm.window("plan")),
            today=llm.today, question=question, count=FIRST_QUERIES[depth],
            language=llm.language)
        first = _clean_queries(expect_list(reply.text, what="search queries"),
                               FIRST_QUERIES[depth])
    except LLMAuthError:
        raise
    except LLMError as exc:
        llm.fell_back("plan", exc, "the rule-based queries were used")
        plan = make_plan(question, depth)
        return plan.model_copy(update={"note": f"LLM planning failed: {exc}"})
    llm.info(f"LLM plan: {len(first)} queries", queries=first)
    hits = await search(first)
    follow_ups, note = await _follow_ups(question, depth, llm, first, hits)
    return Plan(question=question, queries=dedupe(first + follow_ups), planner="llm", note=note)


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
    return "\n\n".join(f"Query: {q}\n" + "\n".join(lines or [SAME_PAGES])
                        for q, lines in chosen.items() if by_query[q])


async def _follow_ups(question: str, depth: int, llm: RunLLM, first: list[str],
                      hits: list[SearchHit]) -> tuple[list[str], str | None]:
    """The model's follow-up queries after seeing the first results, and a note."""
    from sleuth.llm.run import reply_tokens

    count = FOLLOW_UPS[depth]
    if count == 0:
        return [], None
    if not hits:
        return [], "the first searches found nothing, so no follow-up queries were planned"
    values = {"today": llm.today, "question": question, "queries": "\n".join(first),
              "count": count, "language": llm.language}
    try:
        reply_size = reply_tokens(150, llm.window("refine"))
        budget = llm.text_budget("refine", llm.overhead("refine", "refine", results="", **values),
                                 reply_size)
        results = _results_text(first, hits, llm, budget)
        reply = await llm.ask("refine", stage="refine", max_tokens=reply_size,
                              results=results, **values)
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
