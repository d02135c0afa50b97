"""Stage 1, plan: turn a question into search queries.

The rule-based planner follows grip's ``web_research`` decomposition by depth:

* depth 1: the question, and "what is <question>";
* depth 2: adds each side of an "and" / "vs" / "versus" split, "<question> comparison"
  for comparisons, and "<question> explained";
* depth 3: adds "how does <question> work", "why <question>" and
  "<question> advantages disadvantages".

Queries are de-duplicated case-insensitively, the original question first.
"""

from __future__ import annotations

import re

from sleuth.models import Plan

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


def make_plan(question: str, depth: int) -> Plan:
    """The rule-based plan; the LLM planner (when configured) returns the same record."""
    return Plan(question=question, queries=rule_queries(question, depth), planner="rules")
