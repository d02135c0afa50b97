"""Budgets: limits on time, fetches, tokens and cost for one run.

The pipeline asks :meth:`Budget.exhausted` before starting more work; once any
budget is reached, gathering stops and the report is written from what is in,
saying which budget stopped it. ``--max-time`` is a deadline for the whole run:
model calls (:class:`~sleuth.llm.run.RunLLM`) and searches are bounded by
:meth:`Budget.seconds_left` too, so a call in flight when it passes is cancelled.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sleuth.settings import Settings


class Budget:
    """Counts what a run has spent against the limits in its settings."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        self.started = clock()
        self.fetches = 0
        self.tokens = 0
        self.cost = 0.0

    def charge_fetch(self, n: int = 1) -> None:
        """Record ``n`` page fetches started."""
        self.fetches += n

    def charge_tokens(self, tokens: int, cost: float | None = None) -> None:
        """Record model tokens (and their estimated cost, when the price is known)."""
        self.tokens += tokens
        if cost:
            self.cost += cost

    def seconds_left(self) -> float | None:
        """Time left under ``--max-time``; None when there is no time budget."""
        if self.settings.max_time is None:
            return None
        return max(0.0, self.settings.max_time - (self.clock() - self.started))

    @property
    def time_reason(self) -> str:
        """What the report says when ``--max-time`` stopped the run."""
        return f"time budget reached (--max-time {self.settings.max_time or 0:g}s)"

    def out_of_time(self) -> str | None:
        """:attr:`time_reason` once ``--max-time`` has passed; None before (or without one)."""
        left = self.seconds_left()
        return self.time_reason if left is not None and left <= 0 else None

    def exhausted(self) -> str | None:
        """Which budget is used up, as the reason shown in the report; None while all are left."""
        s = self.settings
        time_up = self.out_of_time()
        if time_up is not None:
            return time_up
        if s.max_fetches is not None and self.fetches >= s.max_fetches:
            return f"fetch budget reached (--max-fetches {s.max_fetches})"
        if s.max_tokens is not None and self.tokens >= s.max_tokens:
            return f"token budget reached (--max-tokens {s.max_tokens})"
        if s.max_cost is not None and self.cost >= s.max_cost:
            return f"cost budget reached (--max-cost ${s.max_cost:g})"
        return None
