"""What the batch bench reads from the world's log and from /proc (:mod:`bench.batch`)."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

__all__ = ["Manners", "manners", "tree_pss_kib"]


def tree_pss_kib(root: int) -> int:
    """Memory of ``root`` and its descendants (KiB): the sum of their PSS (each page shared
    by N processes counted 1/N in each: the forked extraction workers share most of theirs),
    from /proc."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
                children[ppid].append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                line = next((x for x in rollup if x.startswith("Pss:")), "Pss: 0 kB")
            total += int(line.split()[1])
        except OSError:
            pass
    return total


@dataclass(frozen=True)
class Manners:
    """How a batch treated the world's hosts, from its request log."""

    fetches: int
    duplicates: int  # the same URL again
    pairs: int  # consecutive request starts on one host
    close: int  # of those, closer than the host delay
    smallest: float | None  # the smallest such gap (None: no host asked twice)
    busiest: tuple[str, int]  # the host asked most, and how often


def manners(log: list[dict[str, Any]], host_delay: float = 0.2) -> Manners:
    """Page fetches, duplicates and the gaps between request starts on one host, as the
    world saw them (sleuth's default ``--host-delay`` is 0.2 s)."""
    pages = [e for e in log if e.get("kind") == "page"]
    counts = Counter(e["key"] for e in pages)
    starts: dict[str, list[float]] = defaultdict(list)
    for e in pages:
        starts[e["key"].split("/")[2].rsplit(":", 1)[0]].append(float(e["start"]))
    gaps = [b - a for s in starts.values() for a, b in zip(sorted(s), sorted(s)[1:], strict=False)]
    busiest = max(starts.items(), key=lambda kv: len(kv[1]), default=("", []))
    return Manners(
        len(pages),
        sum(n - 1 for n in counts.values()),
        len(gaps),
        sum(g < host_delay for g in gaps),
        min(gaps) if gaps else None,
        (busiest[0], len(busiest[1])),
    )
