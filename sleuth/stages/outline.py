"""Deep research's outline: the sections a report answers its question in.

With a model, :func:`llm_outline` asks for sections in a reader's order, each with a
scope and the sources it needs (not one section per branch by rote);
:func:`give_every_source` then gives every source no section took to the section that
has most of its branch's sources. Without one, :func:`fallback_outline` makes a section
per sub-question. :func:`section_count` sizes the outline to the report's length.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sleuth.errors import ParseError
from sleuth.llm.parse import json_values, strip_think

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM

__all__ = [
    "MAX_SECTIONS",
    "Planned",
    "fallback_outline",
    "give_every_source",
    "learnings_block",
    "llm_outline",
    "section_count",
]

MAX_SECTIONS = 7


@dataclass(frozen=True)
class Planned:
    """A section of the outline: its title, what it covers, the source ids it needs."""

    title: str
    covers: str
    sources: tuple[int, ...]


def section_count(words: int) -> int:
    """Sections for a report of ``words`` words: one per ~500 words, 2 to 7."""
    return max(2, min(MAX_SECTIONS, round(words / 500)))


def learnings_block(
    learnings: Sequence[tuple[str, Sequence[int]]], llm: RunLLM, budget: int, stage: str
) -> str:
    """The learnings as prompts show them ("- statement [1][3]"), as many as fit."""
    lines, used = [], 0
    for text, ids in learnings:
        line = f"- {' '.join(text.split())} " + "".join(f"[{n}]" for n in ids)
        cost = llm.tokens(line, stage) + 1
        if used + cost > budget:
            continue
        lines.append(line)
        used += cost
    return "\n".join(lines)


def _as_ids(value: object, known: set[int]) -> list[int]:
    items = value if isinstance(value, list) else []
    ids = []
    for item in items:
        match = re.fullmatch(r"\s*\[?(\d{1,4})\]?\s*", str(item))
        if match and int(match.group(1)) in known:
            ids.append(int(match.group(1)))
    return list(dict.fromkeys(ids))


def _parse_outline(text: str, known: set[int], count: int) -> list[Planned]:
    for value in json_values(strip_think(text)):
        items = (
            value
            if isinstance(value, list)
            else next((v for v in value.values() if isinstance(v, list)), [])
            if isinstance(value, dict)
            else []
        )
        planned, titles = [], set()
        for item in items:
            if not isinstance(item, dict):
                continue
            title = " ".join(str(item.get("title") or "").split())[:200]
            ids = _as_ids(item.get("sources"), known)
            if title and ids and title.lower() not in titles:
                titles.add(title.lower())
                covers = " ".join(str(item.get("covers") or "").split())[:400]
                planned.append(Planned(title, covers, tuple(ids)))
        if planned:
            return planned[:count]
    raise ParseError(
        "the model's outline had no section with a title and sources",
        excerpt=strip_think(text)[:80],
    )


def give_every_source(
    planned: list[Planned], ids: Sequence[int], related: Mapping[int, set[int]]
) -> list[Planned]:
    """``planned`` with each source no section was given added to the section that has
    most of its ``related`` sources (those its branch read), else the first."""
    sections = [list(p.sources) for p in planned]
    used = {n for p in planned for n in p.sources}
    for n in ids:
        if n in used:
            continue
        mates = related.get(n, set())
        best = max(range(len(sections)), key=lambda i: (len(mates & set(sections[i])), -i))
        sections[best].append(n)
    return [Planned(p.title, p.covers, tuple(s)) for p, s in zip(planned, sections, strict=True)]


async def llm_outline(
    llm: RunLLM,
    question: str,
    learnings: Sequence[tuple[str, Sequence[int]]],
    ids: Sequence[int],
    count: int,
) -> list[Planned]:
    """The model's outline (ParseError / LLMError when it gives none usable)."""
    from sleuth.llm.run import reply_tokens

    values: dict[str, object] = {"question": question, "count": count, "language": llm.language}
    reply_size = reply_tokens(60 * count, llm.window("outline"))
    budget = llm.text_budget(
        "outline", llm.overhead("outline", "outline", learnings="", **values), reply_size
    )
    reply = await llm.ask(
        "outline",
        stage="outline",
        max_tokens=reply_size,
        learnings=learnings_block(learnings, llm, budget, "outline"),
        **values,
    )
    return _parse_outline(reply.text, set(ids), count)


def fallback_outline(groups: Sequence[tuple[str, Sequence[int]]]) -> list[Planned]:
    """One section per sub-question (and the follow-ups it led to) that read anything."""
    return [Planned(title, "", tuple(ids)) for title, ids in groups if ids]
