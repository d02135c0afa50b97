"""The record of a deep research: its tree of questions, as explored.

:class:`Branch` is one question of the tree (the research's sub-questions at level 1,
their follow-ups below): what it searched, the pages it read, its sources, learnings and
follow-ups, and how it ended. :class:`Tree` is the branches level by level, with what the
exploration as a whole did. The explorer (:mod:`sleuth.pipeline.deep.explore`) writes
these records; the report (:mod:`sleuth.pipeline.deep.report`) reads them. No I/O here,
and no choice of what to explore.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sleuth.models import Candidate, Page, Plan, Source, TreeNode
from sleuth.stages.explore import Learning
from sleuth.stages.judge import Verdict

__all__ = ["Branch", "Tree"]


@dataclass
class Branch:
    """One question of the tree as it is researched (the report's :class:`TreeNode`)."""

    id: str
    parent: str | None
    level: int
    question: str
    queries: list[str]
    status: str = "waiting"
    note: str | None = None
    wanted: int = 0
    read: int = 0
    pages: list[tuple[Candidate, Page]] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    learnings: list[Learning] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    plan: Plan | None = None
    #: How each page read bears on the research's question, by canonical URL.
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    #: The pages it read and set aside as off-topic (a page another branch's page names
    #: may become a source after all: see ``sleuth.pipeline.deep.sift``).
    aside: list[tuple[Candidate, Page]] = field(default_factory=list)

    def node(self, ids: Iterable[int] = ()) -> TreeNode:
        """The record of this branch, with the report's ids of its sources."""
        status = self.status if self.status in ("done", "empty", "failed", "skipped") else "failed"
        return TreeNode(
            id=self.id,
            parent=self.parent,
            level=self.level,
            question=self.question,
            queries=self.queries,
            sources=list(ids),
            status=status,  # type: ignore[arg-type]
            note=self.note,
        )


@dataclass
class Tree:
    """The branches of one deep research, level by level, and what exploring them did:
    the downloads started, who planned the sub-questions (``llm`` or ``rules``), the
    budget that stopped it, and why the tree stopped growing (``stop_note``)."""

    branches: list[Branch] = field(default_factory=list)
    fetches: int = 0
    stopped_by: str | None = None
    planner: str = "rules"
    stop_note: str | None = None

    @property
    def read(self) -> int:
        """Pages read so far by every branch."""
        return sum(len(b.pages) for b in self.branches)

    def asked(self, question: str) -> list[str]:
        """Every question and query of the tree so far, the research's ``question`` first."""
        return [question, *(t for b in self.branches for t in (b.question, *b.queries))]

    def descendants(self, branch: Branch) -> list[Branch]:
        """The follow-ups ``branch`` led to, and theirs, in tree order."""
        out: list[Branch] = []
        for child in (b for b in self.branches if b.parent == branch.id):
            out += [child, *self.descendants(child)]
        return out

    def groups(self) -> list[tuple[Branch, list[Branch]]]:
        """Each sub-question with the follow-ups it led to, in tree order."""
        return [(b, self.descendants(b)) for b in self.branches if b.level == 1]
