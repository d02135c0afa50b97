"""The gaps a rerun from the cache did not meet itself, taken from the run it repeats.

A rerun answered from the cache reads its pages at once, so it may fill its sources
before it reaches the pages the run before could not read: its report would say less
about what is missing than that run's, over the same pages. The last finished run of the
same question (the one whose sources the page cache hands back first, see
:meth:`~sleuth.pipeline.recorder.StoreSession.fresh_results`) lends its page gaps, each
marked as from the cache, except pages this run read or met itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sleuth.models import Failure
from sleuth.urls import canonicalize

if TYPE_CHECKING:
    from sleuth.pipeline.context import RunContext

__all__ = ["cached_gaps"]

log = logging.getLogger(__name__)

#: What a carried gap's reason ends with (the run id follows).
MARK = " (from the cache: run "


async def cached_gaps(ctx: RunContext, cited: Iterable[str]) -> list[Failure]:
    """The page gaps of the last run of ``ctx.topic`` that this run, answered at least in
    part from the page cache, neither read (``cited``) nor met (the driver adds them to
    the run's failures)."""
    store = ctx.session.store
    if store is None or ctx.tally.cached_fetches == 0:
        return []
    try:
        last: dict[str, Any] = (
            await asyncio.to_thread(store.last_report, ctx.topic, exclude=ctx.run_id) or {}
        )
    except Exception:  # a broken store costs the carried gaps, never the run
        log.debug("no earlier report to take gaps from", exc_info=True)
        return []
    known = {canonicalize(url) for url in cited} | {
        canonicalize(f.url) for f in ctx.tally.failures if f.url
    }
    carried: list[Failure] = []
    run_id = last.get("run_id") or "?"
    for entry in last.get("failures") or []:
        url = str(entry.get("url") or "")
        reason = str(entry.get("reason") or "")
        if not url or not reason or canonicalize(url) in known:
            continue
        known.add(canonicalize(url))
        carried.append(
            Failure(
                url=url,
                # Carried before: it already names the run that met it.
                reason=reason if MARK in reason else f"{reason}{MARK}{run_id})",
                stage=entry.get("stage") or "fetch",
                detail=str(entry.get("detail") or ""),
            )
        )
    return carried
