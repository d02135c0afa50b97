"""A run's timeline laid out as a network panel lays out requests: groups of rows of bars.

One row per search query, per page (its download, extraction and summary side by side)
and per other model call; rows grouped by stage (plan, search, rank, pages, write,
check), and in a deep research by the branch each request served. Each bar says what
ended it: done, from a cache, failed (why), or cut (the run did not wait for it; why,
from the report's gaps). The HTML report (:mod:`sleuth.report.waterfall`), the web page
and ``sleuth show --timeline`` draw this same layout.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sleuth.models import Failure, Report, Source, Span, Timeline
from sleuth.urls import canonicalize

__all__ = [
    "Bar",
    "Group",
    "Layout",
    "Row",
    "axis",
    "describe",
    "ending",
    "layout",
    "short_url",
    "subject",
]

#: Each model call's stage, by the group it is shown in (pages hold the rest).
_GROUPS = (
    ("Plan", ("plan", "refine", "subquestions")),
    ("Search", ()),
    ("Rank", ("select",)),
    ("Pages", ("summarize", "merge", "read")),
    ("Learn", ("learn",)),
    ("Write", ("report", "outline", "section", "frame")),
    ("Check", ("verify",)),
)
_OTHER = "Other"
_PAGE_KINDS = ("download", "extract")
_TICKS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600)


@dataclass
class Bar:
    """One span as drawn: its kind, times, whether it is on the critical path, and the
    words that say what it was and why it ended."""

    span: Span
    critical: bool
    #: What a model call was about (its stage, and its model when not the run's usual one).
    what: str = ""
    #: Where it was redirected and why it ended, when not with a plain answer.
    why: str = ""

    @property
    def ended(self) -> str:
        """The whole hover text: what it was, status, size, time, why it ended."""
        return describe(self.span, self.why, self.what)

    @property
    def took(self) -> float:
        end = self.span.end if self.span.end is not None else self.span.start
        return max(0.0, end - self.span.start)


@dataclass
class Row:
    """One line of the waterfall: a query, a page or a model call, and its bars."""

    label: str
    bars: list[Bar] = field(default_factory=list)
    #: What became of a page: ``source 2``, ``left out``, ``not waited for``, ``failed``.
    tag: str = ""
    url: str | None = None


@dataclass
class Group:
    """Rows under one heading (a stage; in a deep research, a branch and its question)."""

    title: str
    rows: list[Row] = field(default_factory=list)
    note: str = ""


@dataclass
class Layout:
    """The whole waterfall: its groups, the time it spans and its critical path."""

    groups: list[Group]
    wall_s: float
    critical_s: float
    requests: int
    #: The model most calls went to (each call names its model only when another).
    model: str = ""

    def bars(self) -> Iterable[Bar]:
        """Every bar, group by group."""
        return (bar for group in self.groups for row in group.rows for bar in row.bars)


def short_url(url: str) -> str:
    """A URL without its ``http(s)://``, for a row's label (a page's whole address)."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return url.split("://", 1)[1]
    return url


def axis(seconds: float) -> tuple[float, int]:
    """A tick step for an axis of ``seconds``, and the ticks it takes (at most 10)."""
    seconds = max(seconds, 0.1)
    step = next((t for t in _TICKS if seconds / t <= 10), _TICKS[-1])
    return step, max(1, math.ceil(seconds / step - 1e-9))


def _group_of(span: Span) -> str:
    if span.kind == "search":
        return "Search"
    if span.kind in _PAGE_KINDS:
        return "Pages"
    return next((name for name, stages in _GROUPS if span.stage in stages), _OTHER)


def _fates(report: Report | None) -> tuple[dict[str, Source], dict[str, Failure]]:
    if report is None:
        return {}, {}
    sources = {canonicalize(s.url): s for s in report.sources}
    failures = {canonicalize(f.url): f for f in report.failures if f.url}
    return sources, failures


def _tag(url: str, sources: dict[str, Source], failures: dict[str, Failure]) -> str:
    key = canonicalize(url)
    if key in sources:
        return f"source {sources[key].id}"
    failure = failures.get(key)
    if failure is None:
        return ""
    if failure.reason.startswith("not waited for"):
        return "not waited for"
    return "left out" if failure.stage == "read" else "failed"


def describe(span: Span, why: str = "", what: str = "") -> str:
    """What a bar shows on hover: what it was (its row's label says which page or query),
    its status, size and time, then ``why`` (see :func:`ending`); ``what``: a model
    call's :func:`subject`."""
    end = span.end if span.end is not None else span.start
    took = f"{end - span.start:.2f} s"
    if span.start - span.queued >= 0.01:
        took += f" (queued {span.start - span.queued:.2f} s)"
    parts: list[str] = []
    if span.kind == "download":
        parts = ["download", f"HTTP {span.status}" if span.status else "", _bytes(span.size)]
    elif span.kind == "extract":
        parts = ["extraction", f"{span.size:,} characters" if span.size is not None else ""]
    elif span.kind == "search":
        parts = [f"{span.size} hits" if span.size is not None else ""]
    else:
        parts = [what or span.stage]
    parts += [took, why]
    return " · ".join(p for p in parts if p)


def subject(span: Span, model: str = "") -> str:
    """A model call's stage, and its model when not ``model`` (the run's usual one)."""
    return span.stage if span.name == model else f"{span.stage} · {span.name}"


def ending(span: Span, why: str = "") -> str:
    """Where a request was redirected, and why it ended (``why``, else its own
    outcome) when that was not a plain answer."""
    moved = f"→ {span.final_url}" if span.final_url else ""
    return " · ".join(p for p in (moved, why or _ended(span)) if p)


def _bytes(size: int | None) -> str:
    if size is None:
        return ""
    return f"{size / 1000:,.1f} kB" if size >= 1000 else f"{size} B"


def _ended(span: Span) -> str:
    """Why a span ended, when it did not end with a plain answer (its detail otherwise)."""
    if span.end is None:
        return "still going"
    if span.outcome == "cached":
        return f"no request: {span.detail or 'cached'}"
    if span.outcome == "failed":
        return f"failed: {span.detail}" if span.detail else "failed"
    if span.outcome == "cut":
        return "cut: the run did not wait for it"
    return "" if span.kind == "extract" and span.detail == "text/html" else span.detail


def layout(timeline: Timeline, report: Report | None = None) -> Layout:
    """The waterfall of ``timeline``; ``report`` tells what became of each page."""
    sources, failures = _fates(report)
    critical = set(timeline.critical)
    questions = {node.id: node.question for node in (report.tree if report else None) or []}
    models = Counter(s.name for s in timeline.spans if s.kind == "llm")
    model = models.most_common(1)[0][0] if models else ""
    branched = any(s.branch for s in timeline.spans)
    groups: dict[str, Group] = {}
    rows: dict[tuple[str, str], Row] = {}
    for span in sorted(timeline.spans, key=lambda s: (s.start, s.id)):
        title = _group_of(span)
        if branched and span.branch and title not in ("Plan", "Write", "Check"):
            title = f"Branch {span.branch}"
        group = groups.setdefault(title, Group(title, note=questions.get(span.branch or "", "")))
        url = _page_of(span)
        key = _row_key(title, span, url)
        row = rows.get(key)
        if row is None:
            row = rows[key] = Row(short_url(url) if url else _label(span), url=url)
            if url:
                row.tag = _tag(url, sources, failures)
            group.rows.append(row)
        what = subject(span, model) if span.kind == "llm" else ""
        why = _why_cut(span, url, failures)
        row.bars.append(Bar(span, span.id in critical, what, ending(span, why)))
    order = [name for name, _ in _GROUPS] + [_OTHER]
    ranked = sorted(groups.values(), key=lambda g: _rank(g.title, order))
    wall = max([timeline.wall_s, *(s.end or s.start for s in timeline.spans)])
    return Layout(ranked, wall, timeline.critical_s, len(timeline.spans), model)


def _row_key(title: str, span: Span, url: str | None) -> tuple[str, str]:
    """The row a span's bar goes on: one per search, per page, else per span."""
    if span.kind == "search":
        return title, f"search:{span.name}"
    return (title, canonicalize(url)) if url else (title, f"#{span.id}:{span.name}")


def _why_cut(span: Span, url: str | None, failures: dict[str, Failure]) -> str:
    """Why a page's download was cut, as its failure says."""
    if not (url and span.outcome == "cut"):
        return ""
    failure = failures.get(canonicalize(url))
    return f"cut: {failure.reason}" if failure else ""


def _rank(title: str, order: Sequence[str]) -> tuple[int, str]:
    if title.startswith("Branch "):
        # After the plan, before the writing; branches in their tree order (1, 1.1, 2).
        return order.index("Search"), title
    return order.index(title), ""


def _page_of(span: Span) -> str | None:
    """The page a span is about: its URL (downloads, extractions, summaries)."""
    if span.kind in _PAGE_KINDS:
        return span.name
    if span.kind == "llm" and span.stage in ("summarize", "merge") and span.subject:
        return span.subject
    return None


def _label(span: Span) -> str:
    if span.kind == "search":
        return span.name
    if span.stage == "select" and span.subject:
        queries = span.subject.count("\n") + 1
        return f"select: {queries} {'query' if queries == 1 else 'queries'}"
    return span.stage
