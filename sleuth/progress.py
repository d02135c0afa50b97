"""Progress events: one mechanism that the CLI, the MCP server and the web page consume.

A run reports progress by calling ``on_event(Event(...))``. Code that would rather
``async for`` over the events wraps that callback in an :class:`EventStream`::

    stream = EventStream()
    task = stream.close_when_done(asyncio.create_task(research(question, on_event=stream)))
    async for event in stream:
        print(event.kind, event.message)
    report = await task
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from sleuth._format import plural
from sleuth._valid import valid_data, valid_text

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

EventKind = Literal[
    "plan",
    "search",
    "search_failed",
    "rank",
    "fetch_start",
    "fetched",
    "fetch_failed",
    "read",
    "report",
    "info",
    # deep mode: a node of the question tree started, read a page, or ended
    # (data: node, parent, level, question, status, read, wanted)
    "branch",
    # one model call answered (tokens in data: prompt_tokens, completion_tokens)
    "llm",
    # the report as the model writes it, at most ten a second: data["delta"] is the new
    # text, starting at data["offset"] of the draft (0 again: the call was retried);
    # data["chars"] and data["words"] count the draft so far
    "report_text",
    # agent mode (sleuth agent): a round starts or fails, a tool is called or fails, the end
    "round",
    "round_failed",
    "tool",
    "tool_failed",
    "agent",
    # a batch (sleuth batch, research_many): a question starts, ends with a report, fails,
    # or is not started (a batch budget is spent); data["question_id"] says which. The
    # events of each question's run carry its question_id too.
    "question_start",
    "question_done",
    "question_failed",
    "question_skipped",
    # one request of the run (a search, download, extraction or model call) started
    # (data["end"] absent) or ended; data is its sleuth.models.Span
    "span",
]


@dataclass(frozen=True)
class Event:
    """Something that happened in a run; ``data`` holds its typed details as plain values."""

    kind: EventKind
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Messages quote titles, queries and tool arguments: untrusted text, which may
        # hold lone surrogates that no stream (stderr, SSE, MCP) could encode.
        object.__setattr__(self, "message", valid_text(self.message))
        object.__setattr__(self, "data", valid_data(self.data))


ProgressCallback = Callable[[Event], None]


def no_progress(event: Event) -> None:
    """The default consumer: ignores every event."""


class EventStream:
    """A progress callback that is also an async iterator over the events it receives.

    Pass the stream itself as ``on_event``; iterate it in the same event loop. It may
    also be called from another thread. Iteration ends after :meth:`close` once the
    events received before it have been yielded.
    """

    _END = object()

    def __init__(self) -> None:
        import asyncio  # here: the CLI imports this module, and --help needs no asyncio

        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def _put(self, item: object) -> None:
        import asyncio

        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if self._loop is None:
            self._loop = running
        if self._loop is None or running is self._loop:
            self._queue.put_nowait(item)
        else:  # called from another thread: hand the event to the stream's loop
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def __call__(self, event: Event) -> None:
        if not self._closed:
            self._put(event)

    def close(self) -> None:
        """End the iteration (after the events already received)."""
        if not self._closed:
            self._closed = True
            self._put(self._END)

    def close_when_done(self, task: asyncio.Future[T]) -> asyncio.Future[T]:
        """Close the stream when ``task`` finishes, however it finishes; returns ``task``."""
        task.add_done_callback(lambda _: self.close())
        return task

    async def __aiter__(self) -> AsyncIterator[Event]:
        import asyncio

        self._loop = self._loop or asyncio.get_running_loop()
        while True:
            item = await self._queue.get()
            if item is self._END:
                return
            assert isinstance(item, Event)
            yield item


#: What a model call's stage says the run is doing (the progress bar, MCP's messages).
_DOING = {
    "plan": "planning",
    "refine": "planning",
    "subquestions": "planning",
    "select": "ranking",
    "summarize": "reading",
    "merge": "reading",
    "learn": "learning",
    "outline": "writing",
    "section": "writing",
    "frame": "writing",
    "report": "writing",
    "verify": "checking citations",
}
_DOING_BY_KIND = {
    "plan": "searching",
    "search": "searching",
    "search_failed": "searching",
    "rank": "ranking",
    "fetch_start": "reading pages",
    "fetched": "reading pages",
    "fetch_failed": "reading pages",
    "read": "reading",
    "report": "writing",
    "report_text": "writing",
}


class Counts:
    """What a run has done so far, counted from its progress events: pages read of those
    wanted, searches done of those planned, tokens and cost, and what it is doing now.

    A deep research's pages are counted over its whole tree, from its ``branch`` events:
    each node's pages read (never fewer than it once said, at most its share), so the
    count only ever goes up while branches start and finish side by side.
    """

    def __init__(self, wanted: int | None = None) -> None:
        #: Pages the run means to read (``--max-sources``); None when it has no such aim.
        self.wanted = wanted
        self.read = 0
        self.planned: set[str] = set()
        self.searched: set[str] = set()
        self.tokens = 0
        self.cost_usd: float | None = None
        #: A deep research's nodes: pages read (the most said) and pages wanted, by node.
        self.nodes: dict[str, tuple[int, int]] = {}
        #: What the run is doing now ("searching", "reading pages", ...) and in which branch.
        self.doing = "starting"
        self.branch: str | None = None
        #: Words and characters of the report written so far, while the model writes it.
        self.draft_words: int | None = None
        self.draft_chars: int | None = None

    def add(self, event: Event) -> None:
        """Count ``event`` in."""
        data: dict[str, Any] = event.data
        kind = event.kind
        if kind == "plan" and isinstance(data.get("queries"), list):
            self.planned.update(str(q) for q in data["queries"])
        elif kind in ("search", "search_failed") and "query" in data:
            self.searched.add(str(data["query"]))
        elif kind == "fetched" and not data.get("off_topic"):
            self.read += 1
        elif kind == "read" and isinstance(data.get("sources"), int):
            self.read = data["sources"]  # the pages kept, once reading is done
        elif kind == "llm":
            self.tokens += int(data.get("prompt_tokens", 0)) + int(data.get("completion_tokens", 0))
            if isinstance(data.get("cost_usd"), int | float):
                self.cost_usd = (self.cost_usd or 0.0) + data["cost_usd"]
        elif kind == "branch" and isinstance(data.get("node"), str):
            self._branch(data)
        elif kind == "report_text" and isinstance(data.get("words"), int):
            self.draft_words, self.draft_chars = data["words"], int(data.get("chars") or 0)
        elif kind == "report":
            self.draft_words = self.draft_chars = None
        self.doing = (
            _DOING.get(str(data.get("stage")), self.doing)
            if kind == "llm"
            else (_DOING_BY_KIND.get(kind, self.doing))
        )

    def _branch(self, data: dict[str, Any]) -> None:
        node = data["node"]
        read, wanted = int(data.get("read") or 0), int(data.get("wanted") or 0)
        said, _ = self.nodes.get(node, (0, 0))
        self.nodes[node] = (max(said, read), wanted)
        if data.get("status") in ("searching", "reading"):
            self.branch = node

    def pages_done(self) -> int:
        """Pages read, at most the number wanted (a run may read a few more, then keep
        the best); a deep research's over its whole tree."""
        if self.nodes:
            read = sum(min(said, wanted) for said, wanted in self.nodes.values())
        else:
            read = self.read
        return read if self.wanted is None else min(read, self.wanted)

    def summary(self) -> str:
        """``pages 3/5 · searches 2/4 · 1,234 tokens · $0.0012`` (only what is known)."""
        pages = (
            f"pages {self.pages_done()}/{self.wanted}"
            if self.wanted is not None
            else plural(self.pages_done(), "page", "pages")
        )
        parts = [pages]
        if self.planned or self.searched:
            done = len(self.searched)
            parts.append(f"searches {done}/{max(done, len(self.planned))}")
        if self.tokens:
            parts.append(f"{self.tokens:,} tokens")
        if self.cost_usd is not None:
            parts.append(f"${self.cost_usd:.4f}")
        return " · ".join(parts)

    def stage(self) -> str:
        """What the run is doing now, and in which branch of a deep research."""
        doing = self.doing
        if doing == "writing" and self.draft_words is not None:
            doing = f"writing… {plural(self.draft_words, 'word', 'words')}"
        return f"{doing} · branch {self.branch}" if self.branch else doing
