"""A run's passages, picked as each page arrives rather than once the sources are read.

Picking a page's best passages (:func:`~sleuth.stages.read.best_passages`) splits it into
sentences and scores them: CPU work of tens of milliseconds a page. Done for every
source at the read stage, it sat between the last page's arrival and the report. A
:class:`Passages` starts it for each page as the page is read, in one worker thread of
its own, while the other pages are still downloading; the read stage then takes what is
done (and waits for what is not).

Each job may do more for its page once its passages are picked (``then``): the quick
research scores the page's sentences for the answer there, so that the sentence splits,
terms, names and vectors the answer needs are in their caches when it is chosen.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from sleuth._threads import OneThread
from sleuth.stages.read import best_passages

__all__ = ["Passages"]

log = logging.getLogger(__name__)

_Key = tuple[str, tuple[str, ...], int]

# One thread for the process: the work is CPU-bound and the GIL would serialise more.
_pool = OneThread("sleuth-passages")


def _job(text: str, queries: list[str], k: int, then: Callable[[], object] | None) -> list[str]:
    picked = best_passages(text, queries, k)
    if then is not None:
        try:
            then()
        except Exception:  # a warm-up: the work is done again, in full, where it is needed
            log.debug("work ahead of the read stage failed", exc_info=True)
    return picked


class Passages:
    """The best passages of each page of one run, by its text and the queries asked."""

    def __init__(self) -> None:
        self._made: dict[_Key, Future[list[str]]] = {}

    def start(
        self, text: str, queries: Sequence[str], k: int, then: Callable[[], object] | None = None
    ) -> None:
        """Start picking ``text``'s ``k`` best passages for ``queries`` in the background,
        and then run ``then`` (work that only warms caches: its failure is logged)."""
        key = (text, tuple(queries), k)
        if key not in self._made:
            self._made[key] = _pool().submit(_job, text, list(queries), k, then)

    async def ready(self) -> None:
        """Wait until every pick started is made (without holding up the event loop)."""
        pending = [asyncio.wrap_future(f) for f in self._made.values() if not f.done()]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    def get(self, text: str, queries: Sequence[str], k: int) -> list[str]:
        """``text``'s ``k`` best passages for ``queries``: the pick made in the background
        if there is one, else picked now."""
        made = self._made.get((text, tuple(queries), k))
        if made is not None and made.done() and made.exception() is None:
            return list(made.result())
        return best_passages(text, list(queries), k)

    def forget(self) -> None:
        """Drop every pick (the run is over); a pick still running is let finish."""
        for future in self._made.values():
            future.cancel()
        self._made.clear()
