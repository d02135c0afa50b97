"""How a level of a deep research deals its pages to its branches.

A level may read a share of ``--max-sources``: :func:`spread` deals it, a page at a time,
to the branches that found something to read; :func:`assign` gives each page to the one
branch that ranks it best, none to two, so no page is fetched twice in the tree.
"""

from __future__ import annotations

from collections.abc import Sequence

from sleuth.models import Candidate
from sleuth.pipeline.gather.state import window

__all__ = ["assign", "spread"]


def spread(
    share: int, found: list[int], cap: int, first: Sequence[bool] | None = None
) -> list[int]:
    """Pages each branch may read: ``share`` dealt one at a time in turn to the branches
    that found something to read, none over ``cap`` or over what it found; the branches
    marked in ``first`` are dealt their first page before the others."""
    wants = [0] * len(found)
    for i, mark in enumerate(first or []):
        if mark and share > 0 and min(cap, found[i]) > 0:
            wants[i] = 1
            share -= 1
    while share > 0:
        dealt = False
        for i, n in enumerate(found):
            if share > 0 and wants[i] < min(cap, n):
                wants[i] += 1
                share -= 1
                dealt = True
        if not dealt:
            break
    return wants


def assign(
    lists: list[list[Candidate]],
    wants: list[int],
    taken: set[str],
    first: Sequence[int] | None = None,
) -> list[list[Candidate]]:
    """Each branch's candidates, no page given to two branches, none of ``taken``.

    The branches draft in turn, best-ranked first, each until it holds as many as it may
    fetch at once (:func:`~sleuth.pipeline.gather.state.window`): a page goes to the
    branch that ranks it best among those still drafting, and a branch that has enough
    leaves its lower-ranked pages to the others. Ties go to the branch that comes first
    in ``first`` (default: list order). What is left over then follows each list, for
    replacing pages that fail.
    """
    owner: dict[str, int] = {}
    owned: list[list[Candidate]] = [[] for _ in lists]
    turn = list(first) if first is not None else list(range(len(lists)))
    for position in range(max((len(c) for c in lists), default=0)):
        for branch in turn:
            candidates = lists[branch]
            if position >= len(candidates) or len(owned[branch]) >= window(wants[branch]):
                continue
            key = candidates[position].canonical_url
            if key not in taken and key not in owner:
                owner[key] = branch
                owned[branch].append(candidates[position])
    for branch, candidates in enumerate(lists):
        for candidate in candidates:
            key = candidate.canonical_url
            if key not in taken and key not in owner:
                owner[key] = branch
                owned[branch].append(candidate)
    return owned
