"""Sources numbered in the order a reader meets them.

A deep research numbers its sources as its tree read them, then writes its sections in
the outline's order: the first citation a reader met could be ``[7]``. :func:`reading_order`
gives each source the number of its first citation in the text as it reads (those never
cited follow, in their order); :class:`Renumbering` applies it to the text, the sources,
the sections, the tree, the claims and the answer's sentences, so every number still
names the same page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sleuth.models import AnswerSentence, Claim, Section, Source

__all__ = ["Renumbering", "reading_order"]

#: A citation marker; an escaped bracket (``\[3\]``, page text) is no citation.
_MARK = re.compile(r"(?<!\\)\[(\d{1,4})\]")


def reading_order(texts: Iterable[str], ids: Sequence[int]) -> dict[int, int]:
    """Old number → new: the ``ids`` cited in ``texts`` (read in order) numbered from 1 as
    they are first met, then those never cited, in their order."""
    known, order = set(ids), []
    for text in texts:
        for match in _MARK.finditer(text):
            n = int(match.group(1))
            if n in known and n not in order:
                order.append(n)
    order += [n for n in ids if n not in order]
    return {old: new for new, old in enumerate(order, start=1)}


@dataclass(frozen=True)
class Renumbering:
    """One mapping of old source numbers to new, applied to every record that holds one."""

    new: dict[int, int]

    def text(self, markdown: str) -> str:
        """``markdown`` with each citation's number replaced."""
        return _MARK.sub(lambda m: f"[{self.new.get(int(m.group(1)), int(m.group(1)))}]", markdown)

    def ids(self, numbers: Iterable[int]) -> list[int]:
        """``numbers`` replaced, in their order."""
        return [self.new.get(n, n) for n in numbers]

    def sources(self, sources: Sequence[Source]) -> list[Source]:
        """The sources with their new numbers, in the new order."""
        moved = [s.model_copy(update={"id": self.new.get(s.id, s.id)}) for s in sources]
        return sorted(moved, key=lambda s: s.id)

    def sections(self, sections: Sequence[Section]) -> list[Section]:
        """The sections, each with its sources' new numbers."""
        return [s.model_copy(update={"sources": self.ids(s.sources)}) for s in sections]

    def claims(self, claims: Sequence[Claim]) -> list[Claim]:
        """The claims, each with its sources' and spans' new numbers."""
        return [
            c.model_copy(
                update={
                    "sources": self.ids(c.sources),
                    "support": [
                        s.model_copy(update={"source": self.new.get(s.source, s.source)})
                        for s in c.support
                    ],
                }
            )
            for c in claims
        ]

    def answer(self, sentences: Sequence[AnswerSentence]) -> list[AnswerSentence]:
        """An answer's sentences, each with its sources' and spans' new numbers."""
        return [
            a.model_copy(
                update={
                    "sources": self.ids(a.sources),
                    "spans": [
                        s.model_copy(update={"source": self.new.get(s.source, s.source)})
                        for s in a.spans
                    ],
                }
            )
            for a in sentences
        ]
