"""A run's timeline: one span per search, page download, extraction and model call.

A driver starts a :class:`Timing` for its run and makes it the current one
(:meth:`Timing.activate`); the code that makes requests opens a span around each
(:func:`span`), and every task the run starts inherits the current timing through a
context variable, so a service shared by several runs (a batch's fetcher, its model
client) times each request for the run that asked. With no current timing a span
costs nothing and records nothing: the services work as before outside a run.

Each span is told to the timing's listener twice, when it starts (``end`` None) and
when it ends, so a live view can draw it growing; the run's record keeps the ended ones.
:func:`critical_path` (in :mod:`sleuth.critical`) then finds the chain of spans the
slowest cited source needed.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sleuth.models import Span, SpanKind, SpanOutcome
from sleuth.progress import Event, ProgressCallback

__all__ = [
    "OpenSpan",
    "Timing",
    "about",
    "current",
    "in_branch",
    "instant",
    "note",
    "span",
    "started",
    "telling",
]

#: The run's timing, for the task that runs it and every task it starts.
_TIMING: contextvars.ContextVar[Timing | None] = contextvars.ContextVar(
    "sleuth_timing", default=None
)
#: The innermost span open in this task (what :func:`note` and :func:`started` mark).
_OPEN: contextvars.ContextVar[OpenSpan | None] = contextvars.ContextVar(
    "sleuth_open_span", default=None
)
#: What the model calls made here are about (a page's URL, a round's queries).
_SUBJECT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "sleuth_span_subject", default=None
)
#: The deep research's node the requests made here serve.
_BRANCH: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "sleuth_span_branch", default=None
)
_DETAIL_CHARS = 300

Listener = Callable[[Span], None]


@dataclass
class OpenSpan:
    """A span while it is open: what the code inside it says about its request."""

    id: int
    kind: SpanKind
    stage: str
    name: str
    queued: float
    start: float
    subject: str | None = None
    branch: str | None = None
    outcome: SpanOutcome = "ok"
    status: int | None = None
    size: int | None = None
    detail: str = ""
    final_url: str | None = None
    begun: bool = False

    def record(self, end: float | None) -> Span:
        """The span as a record (``end`` None: still going)."""
        return Span(
            id=self.id,
            kind=self.kind,
            stage=self.stage,
            name=self.name,
            queued=round(self.queued, 3),
            start=round(self.start, 3),
            end=None if end is None else round(max(end, self.start), 3),
            outcome=self.outcome,
            status=self.status,
            size=self.size,
            detail=self.detail[:_DETAIL_CHARS],
            final_url=self.final_url,
            subject=self.subject,
            branch=self.branch,
        )


#: Ended spans kept for the run record before they are written, as one ``spans`` record.
RECORD_BATCH = 16


@dataclass
class Timing:
    """The spans of one run, timed from its start (``t0``, a ``time.monotonic`` reading).

    ``listener`` hears of each span as it starts and as it ends (a listener that raises
    is dropped from the run rather than failing a request). ``record`` (the run
    record's) is given the ended spans as ``spans`` records, :data:`RECORD_BATCH` at a
    time and the rest at :meth:`flush`: a run's record gets a few rows, not one a request.
    """

    t0: float = field(default_factory=time.monotonic)
    listener: Listener | None = None
    record: Callable[[str, Any], None] | None = None
    spans: list[Span] = field(default_factory=list)
    _next: int = 0
    _recorded: int = 0

    def now(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.t0

    @contextmanager
    def activate(self) -> Iterator[Timing]:
        """Make this the current timing of the running task (and of the tasks it starts)."""
        token = _TIMING.set(self)
        try:
            yield self
        finally:
            _TIMING.reset(token)

    def open(self, kind: SpanKind, stage: str, name: str) -> OpenSpan:
        """A new span, started now."""
        self._next += 1
        at = self.now()
        return OpenSpan(
            id=self._next,
            kind=kind,
            stage=stage,
            name=name,
            queued=at,
            start=at,
            subject=_SUBJECT.get(),
            branch=_BRANCH.get(),
        )

    def flush(self) -> None:
        """Give ``record`` the ended spans it has not had yet."""
        fresh = self.spans[self._recorded :]
        self._recorded = len(self.spans)
        if fresh and self.record is not None:
            self.record("spans", [s.model_dump(mode="json", exclude_none=True) for s in fresh])

    def tell(self, opened: OpenSpan, ended: bool) -> None:
        """Say ``opened`` started (or ended: it joins :attr:`spans`)."""
        record = opened.record(self.now() if ended else None)
        if ended:
            self.spans.append(record)
            if len(self.spans) - self._recorded >= RECORD_BATCH:
                self.flush()
        if self.listener is not None:
            try:
                self.listener(record)
            except Exception:  # a broken live view must not fail a request
                self.listener = None


def current() -> Timing | None:
    """The running task's timing (None outside a run)."""
    return _TIMING.get()


@contextmanager
def span(kind: SpanKind, stage: str, name: str) -> Iterator[OpenSpan | None]:
    """Time the request made inside the block as one span of the current run.

    A cancelled block ends the span ``cut``; one that raises ends it ``failed`` (with
    the error's type unless the block said why with :func:`note`). Yields None, and
    records nothing, outside a run.
    """
    timing = _TIMING.get()
    if timing is None:
        yield None
        return
    opened = timing.open(kind, stage, name)
    token = _OPEN.set(opened)
    timing.tell(opened, ended=False)
    try:
        yield opened
    except (asyncio.CancelledError, GeneratorExit):
        opened.outcome = "cut"
        raise
    except BaseException as exc:
        if opened.outcome == "ok":
            opened.outcome = "failed"
            opened.detail = opened.detail or f"{type(exc).__name__}: {exc}"
        raise
    finally:
        _OPEN.reset(token)
        timing.tell(opened, ended=True)


def instant(
    kind: SpanKind, stage: str, name: str, outcome: SpanOutcome = "cached", **fields: Any
) -> None:
    """A span of no duration: a result the store or a rule gave without a request."""
    with span(kind, stage, name) as opened:
        if opened is not None:
            note(outcome=outcome, **fields)


def note(**fields: Any) -> None:
    """Say something about the innermost open span: ``outcome``, ``status``, ``size``,
    ``detail``, ``final_url`` (a no-op outside one)."""
    opened = _OPEN.get()
    if opened is None:
        return
    for key, value in fields.items():
        if not hasattr(opened, key) or key in ("id", "queued", "start", "begun"):
            raise TypeError(f"a span has no field {key!r} to note")
        setattr(opened, key, value)


def started() -> None:
    """Say the innermost open span's request really began now (it waited until here for
    a slot); the time before is shown as queued. Only the first call counts."""
    opened, timing = _OPEN.get(), _TIMING.get()
    if opened is None or timing is None or opened.begun:
        return
    opened.begun = True
    opened.start = timing.now()
    timing.tell(opened, ended=False)


@contextmanager
def about(subject: str) -> Iterator[None]:
    """The model calls made inside the block (and in tasks it starts) are about ``subject``."""
    token = _SUBJECT.set(subject)
    try:
        yield
    finally:
        _SUBJECT.reset(token)


@contextmanager
def in_branch(node: str) -> Iterator[None]:
    """The requests made inside the block serve the deep research's node ``node``."""
    token = _BRANCH.set(node)
    try:
        yield
    finally:
        _BRANCH.reset(token)


def telling(emit: ProgressCallback) -> Listener:
    """A listener telling the progress stream of each span as it starts and as it ends
    (``data`` the span): a live view draws it growing."""

    def tell(span: Span) -> None:
        data = span.model_dump(mode="json", exclude_none=True)
        if span.end is None:
            message = f"{span.kind} {span.name}"
        else:
            message = f"{span.kind} {span.name}: {span.end - span.start:.2f} s, {span.outcome}"
        emit(Event("span", message, data))

    return tell
