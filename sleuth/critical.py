"""A run's critical path, from its own timeline: the chain of requests its slowest cited
source needed.

For every cited page *s* the chain is (each part the span that decided it, timed as the
run saw it):

    planning call                          (``plan``, deep mode's ``subquestions``; none
                                            without a model)
    + slowest first-round search + refine  (only if *s* was found by a follow-up query)
    + the search that found *s*            (the quickest if several did; its round's
                                            slowest search when a select call ranked
                                            that round, since the call waited for it)
    + that round's select call
    + the download of *s* + its extraction
    + the summary of *s*                   (its slowest part + its merge calls)

The critical path is the longest such chain, then the writing: the report call and the
slowest verify call. A deep research's (:func:`deep_path`) goes level by level, each
level's slowest branch, since a level waits for the one above. It is what the run could
not have done faster with the same answers; the wall time beyond it is waiting that the
run added. ``bench/`` computes the same chains from the benchmark world's log.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sleuth.lang import LABELS
from sleuth.models import Report, Span, Timeline
from sleuth.urls import canonicalize

__all__ = ["Path", "cited_urls", "critical_path", "deep_path", "timeline_of"]

_SOURCES = re.compile(
    r"^#{1,3} (?:References|"
    + "|".join(re.escape(labels.sources) for labels in LABELS.values())
    + r")\s*$",
    re.MULTILINE,
)

_PLANNING = ("plan", "subquestions")
#: The writing phases, in order; each costs its slowest call.
_WRITING = (("report", "outline"), ("section", "frame"), ("verify",))


@dataclass
class Path:
    """The spans of a critical path (their ids, in order) and its length in seconds."""

    ids: list[int] = field(default_factory=list)
    seconds: float = 0.0


def _took(span: Span) -> float:
    return max(0.0, (span.end if span.end is not None else span.start) - span.start)


def _slowest(spans: Iterable[Span]) -> list[Span]:
    found = max(spans, key=_took, default=None)
    return [] if found is None else [found]


def _complete(spans: Sequence[Span], kind: str) -> dict[str, Span]:
    """The first span of ``kind`` that answered (ok or cached) for each URL or query."""
    out: dict[str, Span] = {}
    for span in spans:
        if span.kind != kind or span.end is None or span.outcome not in ("ok", "cached"):
            continue
        key = canonicalize(span.name) if kind in ("download", "extract") else span.name
        out.setdefault(key, span)
        if span.final_url:
            out.setdefault(canonicalize(span.final_url), span)
    return out


def _found(
    url: str,
    searches: Mapping[str, Span],
    hits: Mapping[str, Collection[str]],
    llm: Sequence[Span],
    before: float,
) -> list[Span]:
    """The quickest chain of spans that found ``url`` before ``before`` (its download's
    start; a search made later did not lead to it): refine wait, search, select."""
    refine = next((s for s in llm if s.stage == "refine" and s.end is not None), None)
    follow = _follow_up_wait(searches, refine)
    selects = [s for s in llm if s.stage == "select" and s.subject]
    options: list[list[Span]] = []
    for query, search in searches.items():
        if url not in hits.get(query, ()) or (search.end or search.start) > before + 0.001:
            continue
        chain = follow if refine is not None and search.start >= refine.start else []
        options.append([*chain, *_search_chain(query, search, searches, selects)])
    return min(options, key=lambda chain: sum(map(_took, chain)), default=[])


def _follow_up_wait(searches: Mapping[str, Span], refine: Span | None) -> list[Span]:
    """What a follow-up query waited for: the slowest first-round search and the refine
    call; nothing without a refine call."""
    if refine is None:
        return []
    first_round = [s for s in searches.values() if s.start < refine.start]
    return [*_slowest(first_round), refine]


def _search_chain(
    query: str, search: Span, searches: Mapping[str, Span], selects: Sequence[Span]
) -> list[Span]:
    """The search for ``query`` and the select call that ranked its round, which waited
    for that round's slowest search; the search alone when no select call ranked it."""
    select = next((s for s in selects if query in (s.subject or "").split("\n")), None)
    if select is None:
        return [search]
    round_ = [searches[q] for q in (select.subject or "").split("\n") if q in searches]
    return [*_slowest([search, *round_]), select]


def critical_path(
    spans: Sequence[Span], hits: Mapping[str, Sequence[str]], cited: Sequence[str]
) -> Path:
    """The critical path of a run (see the module docstring).

    ``hits`` maps each query searched to the URLs it found; ``cited`` are the URLs of
    the sources the report cites (the URL asked for or the page's final one).
    """
    llm = sorted((s for s in spans if s.kind == "llm" and s.end is not None), key=lambda s: s.start)
    found_by = {q: {canonicalize(u) for u in urls} for q, urls in hits.items()}
    searches = _complete(spans, "search")
    downloads, extracts = _complete(spans, "download"), _complete(spans, "extract")
    worst: list[Span] = []
    for url in cited:
        chain = _source_chain(url, searches, found_by, llm, downloads, extracts)
        if sum(map(_took, chain)) >= sum(map(_took, worst)):
            worst = chain
    plan = next(([s] for s in llm if s.stage in _PLANNING), [])
    tail = [span for stages in _WRITING for span in _slowest(s for s in llm if s.stage in stages)]
    path = list(dict.fromkeys([*plan, *worst, *tail]))  # a span counted once
    return Path([s.id for s in path], round(sum(map(_took, path)), 3))


def _source_chain(
    url: str,
    searches: Mapping[str, Span],
    found_by: Mapping[str, set[str]],
    llm: Sequence[Span],
    downloads: Mapping[str, Span],
    extracts: Mapping[str, Span],
) -> list[Span]:
    """One cited source's chain: the quickest way it was found, its download and
    extraction, its slowest summary and its merges."""
    key = canonicalize(url)
    download = downloads.get(key)
    names = {key}
    if download is not None:
        names |= {canonicalize(n) for n in (download.name, download.final_url) if n}
    fetched_at = download.queued if download is not None else float("inf")
    chain = _found_any(names, searches, found_by, llm, fetched_at)
    chain += [d for d in (download, extracts.get(key)) if d is not None]
    summaries = [s for s in llm if s.stage == "summarize" and _about(s, names)]
    merges = [s for s in llm if s.stage == "merge" and _about(s, names)]
    return chain + _slowest(summaries) + merges


def _found_any(
    names: set[str],
    searches: Mapping[str, Span],
    found_by: Mapping[str, set[str]],
    llm: Sequence[Span],
    before: float,
) -> list[Span]:
    chains = [c for name in sorted(names) if (c := _found(name, searches, found_by, llm, before))]
    return min(chains, key=lambda chain: sum(map(_took, chain)), default=[])


def _about(span: Span, names: set[str]) -> bool:
    return span.subject is not None and canonicalize(span.subject) in names


def deep_path(spans: Sequence[Span], report: Report) -> Path:
    """The critical path of a deep research, as ``bench/`` computes it from its world: the
    sub-questions call; then, level by level (a level waits for the one above), the
    slowest branch's chain: its slowest search, its select call, its slowest page read
    (download, extraction, summary and merges), its learn call; then the outline call and
    the slowest section or introduction-and-conclusion call."""
    done = [s for s in spans if s.end is not None and s.outcome in ("ok", "cached")]
    llm = [s for s in done if s.kind == "llm"]
    path = _slowest(s for s in llm if s.stage == "subquestions")
    path += _levels(done, report)
    path += _slowest(s for s in llm if s.stage == "outline")
    path += _slowest(s for s in llm if s.stage in ("section", "frame"))
    return Path([s.id for s in path], round(sum(map(_took, path)), 3))


def _levels(done: Sequence[Span], report: Report) -> list[Span]:
    """The deep research's levels in order, each its slowest branch's chain."""
    urls = {s.id: canonicalize(s.url) for s in report.sources}
    levels: dict[int, list[Span]] = {}
    for node in report.tree or []:
        chain = _branch_chain([s for s in done if s.branch == node.id], node.sources, urls)
        if sum(map(_took, chain)) >= sum(map(_took, levels.get(node.level, []))):
            levels[node.level] = chain
    return [s for level in sorted(levels) for s in levels[level]]


def _branch_chain(
    mine: Sequence[Span], sources: Iterable[int], urls: Mapping[int, str]
) -> list[Span]:
    """One branch's chain (``mine``: its finished spans; ``sources``: its sources' ids):
    its slowest search, its select call, its slowest page read, its learn call."""
    reads = [_read_chain(mine, urls[n]) for n in sources if n in urls]
    return [
        *_slowest(s for s in mine if s.kind == "search"),
        *_slowest(s for s in mine if s.stage == "select"),
        *max(reads, key=lambda c: sum(map(_took, c)), default=[]),
        *_slowest(s for s in mine if s.stage == "learn"),
    ]


def _read_chain(spans: Sequence[Span], url: str) -> list[Span]:
    """A page's reading in one branch: its download, extraction, slowest summary, merges."""

    def about(span: Span) -> bool:
        names = (span.name, span.final_url) if span.kind != "llm" else (span.subject,)
        return any(name and canonicalize(name) == url for name in names)

    mine = [s for s in spans if about(s)]
    return [
        *_slowest(s for s in mine if s.kind == "download"),
        *_slowest(s for s in mine if s.kind == "extract"),
        *_slowest(s for s in mine if s.stage == "summarize"),
        *(s for s in mine if s.stage == "merge"),
    ]


def cited_urls(report: Report) -> list[str]:
    """The URLs of the sources the report cites as ``[n]`` before its Sources section."""
    body = _SOURCES.split(report.markdown, maxsplit=1)[0]
    ids = {int(n) for n in re.findall(r"\[(\d+)\]", body)}
    return [s.url for s in report.sources if s.id in ids]


def timeline_of(
    spans: Sequence[Span], wall_s: float, hits: Mapping[str, Sequence[str]], report: Report
) -> Timeline:
    """The run's :class:`Timeline`: its spans in start order, with the critical path of
    ``report`` (``hits``: each query's URLs)."""
    if report.mode == "deep" and report.tree:
        path = deep_path(spans, report)
    else:
        path = critical_path(spans, hits, cited_urls(report))
    return Timeline(
        spans=sorted(spans, key=lambda s: (s.start, s.id)),
        wall_s=round(wall_s, 3),
        critical=path.ids,
        critical_s=path.seconds,
    )
