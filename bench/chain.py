"""Two figures per timed run, from the world's log: the chain and the waste.

Both are computed from what the world logged (server side: when each search, page and
model request arrived and when its response ended) and what the run reported, as the
critical path is (:func:`bench.timing.critical_path`), but they ask simpler questions:

* **the chain**: what the run could not have done without, in a row:

      start-up          from the call to research to the first request the world saw
      + plan call       (with a model; 0 without)
      + slowest search  the slowest search the run made that was answered
      + slowest cited page and its reading
                        the cited page whose download plus summary calls (the slowest
                        chunk call and its merge calls; none without a model) took longest
      + report call     (with a model, and the slowest verify call; 0 without)

* **the waste**: time spent waiting, after the last cited page arrived, for pages that
  were then not cited: within the gathering window (from the arrival of the last cited
  page to the moment the run had read its sources, its ``read`` progress event), the
  time in which a page that is not cited was still downloading or being summarised
  while no cited page's summary was. Time with nothing outstanding at all is the run's
  own work, not waste.

``wall ≤ 1.2 × chain + waste`` then says the scheduling is tight, and the waste alone
judges the waiting rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Chain", "chain", "covered", "waste"]

_READING = ("summarize", "merge")


def _dur(entry: dict[str, Any]) -> float:
    return float(entry["end"]) - float(entry["start"])


@dataclass
class Chain:
    """A run's chain and its parts (seconds)."""

    total: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)


def _first_fetches(log: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """URL -> the first complete request for it (a request the client left is not one)."""
    fetches: dict[str, dict[str, Any]] = {}
    for entry in log:
        if entry["kind"] == "page" and not entry.get("left"):
            fetches.setdefault(entry["key"], entry)
    return fetches


def _reading(llm: Sequence[dict[str, Any]], url: str) -> float:
    """Seconds of a page's summary: its slowest chunk call and all its merge calls."""
    chunks = [_dur(e) for e in llm if e["stage"] == "summarize" and e["key"] == url]
    merges = [_dur(e) for e in llm if e["stage"] == "merge" and e["key"] == url]
    return max(chunks, default=0.0) + sum(merges)


def chain(log: Sequence[dict[str, Any]], cited: Sequence[str], started: float) -> Chain:
    """The chain of one run (see the module docstring); ``started`` is when the run was
    called, on the clock the world logs with (``time.time()``)."""
    llm = [e for e in log if e["kind"] == "llm"]
    stage = {e["stage"]: e for e in reversed(llm)}  # the first call of each stage
    first = min((float(e["start"]) for e in log), default=started)
    searches = [_dur(e) for e in log if e["kind"] == "search" and not e.get("left")]
    fetches = _first_fetches(log)
    page, reading = 0.0, 0.0
    for url in cited:
        fetch, read = (_dur(fetches[url]) if url in fetches else 0.0), _reading(llm, url)
        if fetch + read >= page + reading:
            page, reading = fetch, read
    verify = max((_dur(e) for e in llm if e["stage"] == "verify"), default=0.0)
    parts = {
        "start-up": max(0.0, first - started),
        "plan": _dur(stage["plan"]) if "plan" in stage else 0.0,
        "search": max(searches, default=0.0),
        "page": page,
        "reading": reading,
        "report": (_dur(stage["report"]) if "report" in stage else 0.0) + verify,
    }
    return Chain(sum(parts.values()), parts)


def covered(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of ``intervals`` as sorted, disjoint intervals (empty ones dropped)."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _length_outside(spans: list[tuple[float, float]], holes: list[tuple[float, float]]) -> float:
    """Total length of ``spans`` not covered by ``holes`` (both disjoint and sorted)."""
    total = 0.0
    for start, end in spans:
        total += end - start
        for h_start, h_end in holes:
            total -= max(0.0, min(end, h_end) - max(start, h_start))
    return total


def waste(log: Sequence[dict[str, Any]], cited: Sequence[str], read_at: float) -> float:
    """Seconds waited, after the last cited page arrived and before ``read_at`` (when the
    run had read its sources), for pages that were then not cited (module docstring)."""
    fetches = _first_fetches(log)
    arrived = [float(fetches[u]["end"]) for u in cited if u in fetches]
    if not arrived:
        return 0.0
    ready, mine = max(arrived), set(cited)

    def clip(entry: dict[str, Any]) -> tuple[float, float]:
        return max(ready, float(entry["start"])), min(read_at, float(entry["end"]))

    work = [e for e in log if e["kind"] == "page" or e.get("stage") in _READING]
    others = covered(clip(e) for e in work if e["key"] not in mine)
    own = covered(clip(e) for e in work if e["kind"] == "llm" and e["key"] in mine)
    return max(0.0, _length_outside(others, own))


#: The parts of a run's wall time along its last cited page's path (:func:`path`), in order.
PATH_PARTS = (
    "start-up",
    "searching",
    "asked later",
    "download",
    "extract wait",
    "extract",
    "gather end",
    "answer+write",
    "finish",
)

Events = Sequence[tuple[float, str, dict[str, Any]]]


def _first_event(events: Events, kind: str, url: str | None = None) -> float | None:
    for at, k, data in events:
        if k == kind and (url is None or data.get("url") == url):
            return at
    return None


def _extraction(events: Events, url: str) -> tuple[float, float] | None:
    """(start, end) of ``url``'s extraction on the events' clock, from its span's end event."""
    for at, kind, data in events:
        extract = kind == "span" and data.get("kind") == "extract"
        if extract and data.get("name") == url and data.get("end") is not None:
            return at - (float(data["end"]) - float(data["start"])), at
    return None


def path(
    log: Sequence[dict[str, Any]],
    events: Events,
    cited: Sequence[str],
    started: float,
    ended: float,
) -> dict[str, float] | None:
    """A run's wall time cut along the path of its last cited page to be read (P), each
    part from the run's own events (``events``: (``time.time()``, kind, data)) and the
    world's log, so that the parts add up to the wall time:

    start-up (call to the first request), searching (to the first page asked for),
    asked later (to P asked for: pages set aside and replaced, a fuller ranking), download
    (P's response ended, server side), extract wait (for an extraction worker), extract,
    gather end (P read to the sources read: waiting for other pages, choosing, picking
    passages), answer+write (to the report put together), finish (to the call's return).
    None when P cannot be followed (no cited page, or one reached by a redirect).
    """
    fetches = _first_fetches(log)
    read_at = {u: _first_event(events, "fetched", u) for u in cited}
    followed = [u for u in cited if read_at[u] is not None and u in fetches]
    if not followed or not log:
        return None
    last = max(followed, key=lambda u: read_at[u] or 0.0)
    asked, extraction = _first_event(events, "fetch_start", last), _extraction(events, last)
    first_asked = _first_event(events, "fetch_start")
    read, report = _first_event(events, "read"), _first_event(events, "report")
    if None in (asked, first_asked, read, report) or extraction is None:
        return None
    assert asked is not None and first_asked is not None and read is not None
    assert report is not None and read_at[last] is not None
    first = min(float(e["start"]) for e in log)
    marks = [
        started,
        first,
        first_asked,
        asked,
        float(fetches[last]["end"]),
        extraction[0],
        extraction[1],
        read,
        report,
        ended,
    ]
    # The page's "fetched" event follows its extraction at once: it is part of gather end.
    return {name: marks[i + 1] - marks[i] for i, name in enumerate(PATH_PARTS)}
