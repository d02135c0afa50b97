"""Stage 3 with a model, select: the model picks the results worth reading.

One call per round of queries (the planner's first queries, then its follow-ups):
the model sees the question, the round's queries and the round's results (title, URL,
snippet), each result once however many queries found it, numbered in turn from each
query's best, and picks at most :data:`PICKS_PER_CALL` of them, best first. A
result an earlier call of the run showed is not shown again. (MetaGPT's
COLLECT_AND_RANKURLS asks once per query, and related queries find mostly the same
pages: on the bench, 64 results per run, 20–23 of them distinct.) The picks are then
merged with the quality ranking of :func:`sleuth.stages.rank.rank`, which both pipelines
share:

* picked candidates come first, round by round, each in the order the model gave;
* every other candidate follows in quality-ranking order, as reserves for pages
  that cannot be fetched;
* candidates are de-duplicated across queries by canonical URL (and one per
  registered domain, as in the quality ranking), so a page several queries want
  is fetched once.

A round whose reply picks nothing usable leaves its order to the quality ranking,
and the reason is recorded.

With ``decide="auto"`` (``--select auto``, the default) the model is asked only when the
relevance judgement (:class:`~sleuth.stages.judge.Judge`, on each result's title and
snippet) cannot tell which results to read first (:func:`clear_picks`): when the best
results, ``want`` of them or a few more, stand :data:`CLEAR_GAP` above the next one, or no
more than ``want`` results are on-topic at all, those are the round's picks (best score
first) and no call is made. A call in a
row before the report costs a model's latency; the judgement costs milliseconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from sleuth import tuned
from sleuth.errors import LLMAuthError, LLMError
from sleuth.llm.parse import expect_indices, is_empty_answer
from sleuth.models import Candidate, SearchHit
from sleuth.stages.judge import FLOOR, Judge
from sleuth.stages.rank import QualityRule, rank
from sleuth.urls import canonicalize

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM

__all__ = ["CLEAR_GAP", "PICKS_PER_CALL", "clear_picks", "merge_picks", "select_candidates"]

PICKS_PER_CALL = 8
SNIPPET_CHARS = 300
#: How far (on the judgement's scale) the results read first must score above the rest
#: for the judgement to choose them without asking the model.
CLEAR_GAP = tuned.CLEAR_GAP


def _results_block(candidates: list[Candidate]) -> str:
    lines = []
    for n, candidate in enumerate(candidates, start=1):
        snippet = " ".join(candidate.snippet.split())[:SNIPPET_CHARS]
        lines.append(
            f"{n}. {' '.join(candidate.title.split())}\n   URL: {candidate.url}\n   {snippet}"
        )
    return "\n".join(lines)


async def _pick(
    llm: RunLLM, question: str, queries: list[str], candidates: list[Candidate]
) -> list[str]:
    """Canonical URLs the model picked among ``candidates``, best first ([] for none)."""
    from sleuth.llm.run import reply_tokens

    reply = await llm.ask(
        "select",
        stage="select",
        max_tokens=reply_tokens(40, llm.window("select")),
        question=question,
        queries="\n".join(" ".join(q.split()) for q in queries),
        results=_results_block(candidates),
        count=PICKS_PER_CALL,
    )
    if is_empty_answer(reply.text):
        return []
    picked = expect_indices(reply.text, len(candidates), what="search results")
    return [candidates[i - 1].canonical_url for i in picked[:PICKS_PER_CALL]]


def clear_picks(question: str, candidates: list[Candidate], want: int) -> list[str] | None:
    """The canonical URLs to read first, best first, when the relevance judgement of
    ``candidates``' titles and snippets is clear; None when the model should choose.

    Clear: no more than ``want`` results are on-topic (at least one), or the ``k`` best
    (``want`` ≤ ``k`` ≤ twice ``want``, at most :data:`PICKS_PER_CALL`) score
    :data:`CLEAR_GAP` above the next one: those ``k`` are read first, whatever order the
    model would put them in (gathering starts more downloads than it keeps).
    """
    judge = Judge(question)
    scores = [judge.page(c.title, c.snippet).score for c in candidates]
    order = sorted(range(len(candidates)), key=lambda n: (-scores[n], n))
    on_topic = [n for n in order if scores[n] >= FLOOR]
    want = max(1, want)
    if 0 < len(on_topic) <= want:
        return [candidates[n].canonical_url for n in on_topic]
    for k in range(want, min(2 * want, PICKS_PER_CALL, len(on_topic) - 1) + 1):
        if scores[order[k - 1]] - scores[order[k]] >= CLEAR_GAP:
            return [candidates[n].canonical_url for n in order[:k]]
    return None


def _in_turn(
    queries: list[str], hits: list[SearchHit], ranked: list[Candidate], seen: set[str]
) -> list[Candidate]:
    """The candidates these queries found and no call showed yet, each query's best in turn.

    Each query's first result, then each one's second, and so on: every query's best
    results are near the top of the list, not only the pages many queries found.
    """
    by_url = {c.canonical_url: c for c in ranked}
    lists = [sorted((h for h in hits if h.query == q), key=lambda h: h.rank) for q in queries]
    out: dict[str, Candidate] = {}
    for turn in range(max((len(found) for found in lists), default=0)):
        for found in lists:
            url = canonicalize(found[turn].url) if turn < len(found) else ""
            if url in by_url and url not in seen and url not in out:
                out[url] = by_url[url]
    return list(out.values())


def merge_picks(
    ranked: list[Candidate],
    hits: list[SearchHit],
    picks: list[str],
    rules: tuple[QualityRule, ...] | None = None,
) -> list[Candidate]:
    """Picked candidates first, in the order picked, then the quality ranking's rest.

    ``picks`` holds canonical URLs, best first (a URL picked twice counts at its first
    place). The picked candidates are scored with :func:`rank` over all their hits.
    """
    order = {url: n for n, url in enumerate(dict.fromkeys(picks))}
    if not order:
        return ranked
    picked = rank([h for h in hits if canonicalize(h.url) in order], rules)
    picked.sort(key=lambda c: order[c.canonical_url])
    urls = {c.canonical_url for c in picked}
    rest = [c for c in ranked if c.canonical_url not in urls]
    return picked + rest


async def _round(
    llm: RunLLM,
    question: str,
    todo: list[str],
    fresh: list[Candidate],
    decide: Literal["auto", "model"],
    want: int,
) -> list[str] | None:
    """One round's picks among ``fresh``: the judgement's where it is clear (``auto``),
    else the model's; None when the model failed (the quality ranking then stands)."""
    judged = clear_picks(question, fresh, want) if decide == "auto" and fresh else None
    if judged is not None:
        return judged
    try:
        return await _pick(llm, question, todo, fresh) if fresh else []
    except LLMAuthError:
        raise
    except LLMError as exc:
        llm.fell_back("select", exc, "the quality ranking ordered those results")
        return None


async def select_candidates(
    llm: RunLLM,
    question: str,
    queries: list[str],
    hits: list[SearchHit],
    rules: tuple[QualityRule, ...] | None = None,
    *,
    picked: dict[str, list[str]] | None = None,
    shown: set[str] | None = None,
    show: int | None = None,
    decide: Literal["auto", "model"] = "model",
    want: int = PICKS_PER_CALL,
) -> tuple[list[Candidate], int]:
    """Candidates in fetch order, and how many of them were picked (by the model, or
    with ``decide="auto"`` by the judgement where it is clear: :func:`clear_picks` of
    the ``want`` to read).

    One select call for the queries not asked about yet, over their results that no
    earlier call showed (at most ``show`` of them, each query's best in turn: a deep
    research's branch, which reads a few pages, is not shown every result).
    ``picked`` holds the picks so far (each query asked → its round's picks, best
    first) and ``shown`` the canonical URLs already shown; both are updated, so a later
    round asks only about what is new.
    """
    ranked = rank(hits, rules)
    known = picked if picked is not None else {}
    seen = shown if shown is not None else set()
    todo = [q for q in dict.fromkeys(queries) if q not in known and any(h.query == q for h in hits)]
    if not llm.usable or not (todo or known):
        return ranked, 0
    if todo:
        fresh = _in_turn(todo, hits, ranked, seen)[:show]
        chosen = await _round(llm, question, todo, fresh, decide, want)
        if chosen is not None:
            seen.update(c.canonical_url for c in fresh)
            known.update(dict.fromkeys(todo, chosen))
    # Round by round, each in the order the model gave: the first round's picks are
    # what the question needs most, the follow-ups' fill its gaps.
    picks = [url for urls in known.values() for url in urls]
    merged = merge_picks(ranked, hits, picks, rules)
    return merged, len(set(picks) & {c.canonical_url for c in merged})
