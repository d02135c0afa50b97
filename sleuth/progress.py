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
