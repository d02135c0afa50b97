"""Telling a run that a search request is out.

A quick research with a model sends the question's search before the OpenAI SDK loads
and waits for that request to leave before it loads the SDK (an import thread would
take the interpreter's lock from the search on its way out). The task that sends the
search sets :data:`ON_SENT`; whatever sends the request on its behalf calls
:func:`request_sent` once it is out: the search client's request hook
(:func:`trace_sent`, through httpcore's ``trace`` extension) when the body is written,
a provider with an HTTP stack of its own when it hands the request to it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = ["ON_SENT", "request_sent", "trace_sent"]

#: Set by the task whose first request is awaited (tasks it starts see it too).
ON_SENT: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "sleuth_on_sent", default=None
)


def request_sent() -> None:
    """Say that a request of the current task is out (a no-op when nobody waits)."""
    on_sent = ON_SENT.get()
    if on_sent is not None:
        on_sent()


async def trace_sent(request: httpx.Request) -> None:
    """An httpx request hook: :func:`request_sent` once ``request``'s body is on the wire
    (when the sending task set :data:`ON_SENT`)."""
    on_sent = ON_SENT.get()
    if on_sent is None:
        return

    async def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith("send_request_body.complete"):
            on_sent()

    request.extensions = {**request.extensions, "trace": trace}
