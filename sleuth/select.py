"""Stage 3 with a model, select: the model picks the results worth reading.

For each query the model sees that query's hits (title, URL, snippet), numbered,
and picks at most :data:`PICKS_PER_QUERY` of them, best first (MetaGPT's
COLLECT_AND_RANKURLS). The picks are then merged with the quality ranking of
:func:`sleuth.rank.rank`, which both pipelines share:

* picked candidates come first, ordered by how many queries picked them, then by
  their quality-ranking score;
* every other candidate follows in quality-ranking order, as reserves for pages
  that cannot be fetched;
* candidates are de-duplicated across queries by canonical URL (and one per
  registered domain, as in the quality ranking), so a page several queries want
  is fetched once.

A query whose reply picks nothing usable leaves its order to the quality ranking,
and the reason is recorded.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING

from sleuth.llm.errors import LLMAuthError, LLMError
from sleuth.llm.parse import expect_indices, is_empty_answer
from sleuth.models import Candidate, SearchHit
from sleuth.rank import QualityRule, rank
from sleuth.urls import canonicalize

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM

__all__ = ["PICKS_PER_QUERY", "merge_picks", "select_candidates"]

PICKS_PER_QUERY = 4
SNIPPET_CHARS = 300


def _results_block(hits: list[SearchHit]) -> str:
    lines = []
    for n, hit in enumerate(hits, start=1):
        snippet = " ".join(hit.snippet.split())[:SNIPPET_CHARS]
        lines.append(f"{n}. {' '.join(hit.title.split())}\n   URL: {hit.url}\n   {snippet}")
    return "\n".join(lines)


async def _pick(llm: RunLLM, question: str, query: str, hits: list[SearchHit]) -> list[str]:
    """Canonical URLs the model picked for ``query``, best first ([] when it picked none)."""
    from sleuth.llm.run import reply_tokens

    reply = await llm.ask(
        "select", stage="select", max_tokens=reply_tokens(30, llm.window("select")),
        question=question, query=query, results=_results_block(hits), count=PICKS_PER_QUERY)
    if is_empty_answer(reply.text):
        return []
    picked = expect_indices(reply.text, len(hits), what="search results")[:PICKS_PER_QUERY]
    return [canonicalize(hits[i - 1].url) for i in picked]


def merge_picks(ranked: list[Candidate], hits: list[SearchHit], picks: list[list[str]],
                rules: tuple[QualityRule, ...] | None = None) -> list[Candidate]:
    """Picked candidates first (most votes, then score), then the quality ranking's rest.

    ``picks`` holds one list of canonical URLs per query. The picked candidates are
    ranked among themselves with :func:`rank` over all their hits, so their scores
    and one-per-domain rule are the quality ranking's; a picked URL therefore wins
    its domain over an unpicked one.
    """
    votes = Counter(url for chosen in picks for url in dict.fromkeys(chosen))
    if not votes:
        return ranked
    picked = rank([h for h in hits if canonicalize(h.url) in votes], rules)
    picked.sort(key=lambda c: (-votes[c.canonical_url], -c.score, c.canonical_url))
    urls = {c.canonical_url for c in picked}
    domains = {c.domain for c in picked}
    rest = [c for c in ranked if c.canonical_url not in urls and c.domain not in domains]
    return picked + rest


async def select_candidates(llm: RunLLM, question: str, queries: list[str],
                            hits: list[SearchHit], rules: tuple[QualityRule, ...] | None = None,
                            *, picked: dict[str, list[str]] | None = None
                            ) -> tuple[list[Candidate], int]:
    """Candidates in fetch order, and how many of them the model picked.

    One select call per query that has hits, run concurrently (the client bounds
    how many are in flight). ``picked`` holds the picks of queries already asked
    (query → canonical URLs): they are not asked again, and new picks are added.
    """
    ranked = rank(hits, rules)
    by_query = {q: [h for h in hits if h.query == q] for q in dict.fromkeys(queries)}
    asked = [(q, found) for q, found in by_query.items() if found]
    if not asked or not llm.usable:
        return ranked, 0
    known = picked if picked is not None else {}
    todo = [(q, found) for q, found in asked if q not in known]
    replies = await asyncio.gather(*(_pick(llm, question, q, found) for q, found in todo),
                                   return_exceptions=True)
    picks: list[list[str]] = [known[q] for q, _ in asked if q in known]
    for (query, _found), reply in zip(todo, replies, strict=True):
        if isinstance(reply, list):
            known[query] = reply
        if isinstance(reply, LLMAuthError):
            raise reply
        if isinstance(reply, LLMError):
            llm.fell_back("select", reply, "the quality ranking ordered those results")
        elif isinstance(reply, BaseException):
            raise reply
        else:
            picks.append(reply)
    merged = merge_picks(ranked, hits, picks, rules)
    chosen = len({url for chosen in picks for url in chosen} & {c.canonical_url for c in merged})
    return merged, chosen
