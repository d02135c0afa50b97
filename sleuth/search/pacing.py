"""Turns for the services that publish a rate limit (arXiv, NCBI, Semantic Scholar, ...).

A :class:`Limit` is one service's published rule: at least ``interval`` seconds between
the starts of two requests, and for some, one request in flight at a time. The
:class:`Pacer` hands out turns: a request reserves the next free start time of its
service and waits for it. A service that asked to be left alone (a 429 with
``Retry-After``, GitHub's exhausted quota) is held off until then. A turn further away
than the time a search has left is refused at once, with the limit in words, rather
than waited for and cut off by the search's timeout.

One pacer serves the whole process (:data:`PACER`): the limits are per client address,
so every run and every provider of a kind share them. Its clock and sleep are
parameters, so tests can check the waits without waiting.
"""

from __future__ import annotations

import asyncio
import email.utils
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sleuth.errors import ProviderFailure
from sleuth.search.jsonapi import seconds

__all__ = ["MAX_HOLD_S", "PACER", "Limit", "Pacer", "retry_after"]

#: The longest ``Retry-After`` (seconds) a header may set; a larger one is read as this.
MAX_HOLD_S = 24 * 3600.0


@dataclass(frozen=True)
class Limit:
    """A service's published rate limit."""

    #: Seconds between the starts of two requests (0: no spacing).
    interval: float
    #: How the service words it, for failure reasons ("one request every 3 s").
    said: str
    #: One request in flight at a time (arXiv: "a single connection at a time").
    serial: bool = False


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date);
    None when absent or unreadable. ``now`` (epoch seconds) is for tests."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return min(float(text), MAX_HOLD_S)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    wait = when.timestamp() - (time.time() if now is None else now)
    return min(max(0.0, wait), MAX_HOLD_S)


class Pacer:
    """Turns per service key, shared across runs (see the module docstring)."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.clock = clock
        self.sleep = sleep
        self._next: dict[str, float] = {}
        self._held: dict[str, float] = {}
        # Reservations come from event loops in several threads (a batch's workers).
        self._lock = threading.Lock()
        # Serial services: one asyncio lock per key and event loop (a lock belongs to one).
        self._serial: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Lock]
        ] = weakref.WeakKeyDictionary()

    def hold_off(self, key: str, wait: float) -> None:
        """No request to ``key`` before ``wait`` seconds from now (a 429's ``Retry-After``)."""
        until = self.clock() + min(max(0.0, wait), MAX_HOLD_S)
        with self._lock:
            self._held[key] = max(self._held.get(key, 0.0), until)

    def held_for(self, key: str) -> float:
        """Seconds until ``key`` may be asked again after a hold (0 when not held)."""
        with self._lock:
            return max(0.0, self._held.get(key, 0.0) - self.clock())

    def _reserve(self, key: str, limit: Limit, deadline: float) -> float:
        """Reserve the next start time for ``key`` and return the wait until it."""
        with self._lock:
            now = self.clock()
            budget = deadline - now
            held = self._held.get(key, 0.0)
            start = max(now, self._next.get(key, now), held)
            wait = start - now
            if wait > budget:
                if held >= start:
                    raise ProviderFailure(f"rate limited: asked to wait {seconds(round(wait))}")
                raise ProviderFailure(
                    f"rate limit ({limit.said}): the next turn is in "
                    f"{seconds(round(wait, 1))}, past this search's time"
                )
            self._next[key] = start + limit.interval
            return wait

    def _serial_lock(self, key: str) -> asyncio.Lock:
        locks = self._serial.setdefault(asyncio.get_running_loop(), {})
        return locks.setdefault(key, asyncio.Lock())

    @asynccontextmanager
    async def turn(self, key: str, limit: Limit, *, deadline: float) -> AsyncIterator[None]:
        """Wait for ``key``'s next turn, then hold it while the request runs (a serial
        service's next request waits for this one to end). ``ProviderFailure`` when the
        turn would start after ``deadline`` (a time of :attr:`clock`)."""
        if limit.serial:
            async with self._serial_lock(key):
                await self._wait(key, limit, deadline)
                yield
        else:
            await self._wait(key, limit, deadline)
            yield

    async def _wait(self, key: str, limit: Limit, deadline: float) -> None:
        wait = self._reserve(key, limit, deadline)
        if wait > 0:
            await self.sleep(wait)


#: The process's pacer: every paced provider takes its turns here.
PACER = Pacer()
