"""Deep research: a tree of questions researched with the quick research's stages.

``sleuth deep "QUESTION"`` (``--mode deep``, ``research(q, mode="deep")``). The question is
split into sub-questions (:mod:`sleuth.stages.explore`: the model's, or the rule-based
planner's); each is a branch researched as a quick research is (search → rank → fetch
→ read, the steps of :mod:`sleuth.pipeline.steps`), every branch of a level at once, all
sharing the run's one fetcher, caches, search client, model client and budget. A
branch yields learnings and follow-up questions (without a model: the names its pages
give that the question does not, searched as a second hop); the follow-ups are the next
level, with narrower breadth. The tree stops at ``--levels``, when the follow-ups repeat
what is known, or when a budget is spent; the report is then written from what was
gathered (:mod:`sleuth.pipeline.deep.report`).

No query is searched twice and no page fetched twice in the whole tree: each level's
branches search disjoint queries; once they have ranked their results, each page goes
to the one branch that ranks it best (ties to the narrower question); a page a branch
read is never offered again; one whose download was cut short is offered again only to
a later branch whose own page it is (titled with its name); a page fetched whole and
not kept (or a failure) is in the tree's memo, so a later branch that wants it gets it
without a download. The assignment waits
for the level's rankings, so it is the same in a resumed run, which re-walks the tree
from the store (searches, pages and model replies come from it: nothing is fetched or
asked again). The level's share of ``--max-sources`` (half of what is left, all of it
at the last level) is dealt in turn to the branches that found something to read
(without a model, a second hop whose ranking starts with its own page first). A
branch puts the page titled with its name first and waits for it however slow (the
fetch timeout bounds it); it summarises only pages it may keep, and its select call is
shown its ten best results. A branch that fails is recorded in the Gaps; the others
go on.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable
from dataclasses import replace
from typing import TypeVar

from sleuth import timeline, tuned
from sleuth.errors import LLMAuthError, StoreCorruptError
from sleuth.models import (
    Candidate,
    Failure,
    FetchFailure,
    Page,
    Plan,
)
from sleuth.pipeline.context import RunContext
from sleuth.pipeline.deep.deal import assign, spread
from sleuth.pipeline.deep.sift import hops
from sleuth.pipeline.deep.tree import Branch, Tree
from sleuth.pipeline.gather import Branch as BranchPolicy
from sleuth.pipeline.gather import Gathered, Waits
from sleuth.pipeline.searching import search_stage
from sleuth.pipeline.steps import Fetching, fetch_stage, rank_stage, read_stage
from sleuth.pipeline.tally import Tally
from sleuth.progress import Event
from sleuth.stages.explore import (
    bridge_entities,
    learn,
    llm_subquestions,
    mentions,
    named_by,
    own_first,
    repeats,
    rule_subquestions,
    terms,
    titled,
)
from sleuth.stages.read import gather_or_cancel
from sleuth.stages.relevance import OFF_TOPIC, Relevance
from sleuth.urls import canonicalize

__all__ = ["Explorer"]

T = TypeVar("T")


class Explorer:
    """Researches a deep research's tree, level by level, into its record
    (:attr:`tree`); see the module docstring."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.settings = ctx.settings
        self.tree = Tree()
        #: Canonical URLs of every page some branch read, or that failed for good.
        self.tried: set[str] = set()
        #: Canonical URLs of downloads cut short (never read whole), see _mark_tried.
        self.cut: set[str] = set()
        #: Every page fetched in the tree (and every failure), by canonical URL: a page a
        #: branch fetched and did not keep is another branch's without a second download.
        self.memo: dict[str, Page | FetchFailure] = {}

    # -- the tree ------------------------------------------------------------------------

    async def first_level(self) -> list[Branch]:
        """The sub-questions: the model's, or the rule-based planner's."""
        ctx, breadth = self.ctx, self.settings.breadth
        if ctx.llm is not None:
            subs, note = await llm_subquestions(ctx.topic, breadth, ctx.llm)
            self.tree.planner = "rules" if note else "llm"
        else:
            subs = rule_subquestions(ctx.topic, breadth)
        return self._new(None, 1, subs)

    def _new(self, parent: Branch | None, level: int, questions: list[str]) -> list[Branch]:
        """Branches for ``questions`` whose query no earlier branch searched."""
        searched = {" ".join(q.lower().split()) for b in self.tree.branches for q in b.queries}
        made: list[Branch] = []
        for question in questions:
            key = " ".join(question.lower().split())
            if key in searched:
                continue
            searched.add(key)
            index = len(made) + 1  # a question's follow-ups are made together
            made.append(
                Branch(
                    f"{parent.id}.{index}" if parent else str(index),
                    parent.id if parent else None,
                    level,
                    question,
                    [question],
                )
            )
        return made

    async def explore(self) -> None:
        """Research level after level until ``--levels``, no new follow-ups, or a budget."""
        frontier = await self.first_level()
        for level in range(1, self.settings.levels + 1):
            if not frontier:
                if level > 1:
                    self.tree.stop_note = (
                        f"the follow-ups of level {level - 1} repeat what is "
                        "known: the tree stops there"
                    )
                    self.ctx.emit(Event("info", self.tree.stop_note, {"level": level - 1}))
                return
            left = self.settings.max_sources - self.tree.read
            reason = self.ctx.budget.exhausted() or (
                f"source budget spent (--max-sources {self.settings.max_sources})"
                if left <= 0
                else None
            )
            if reason is not None:
                self._skip(frontier, reason)
                return
            last = level == self.settings.levels
            await self.run_level(frontier, left if last else math.ceil(left / 2))
            if not last:
                frontier = self.next_level(level + 1)

    def _skip(self, frontier: list[Branch], reason: str) -> None:
        self.tree.stopped_by = self.tree.stopped_by or reason
        for branch in frontier:
            branch.status, branch.note = "skipped", reason
            self.tree.branches.append(branch)
            self.tell(branch)
        self.ctx.tally.failures.append(
            Failure(
                url="",
                stage="budget",
                reason=f"{reason}: {len(frontier)} question{'s' if len(frontier) > 1 else ''} "
                f"of level {frontier[0].level} not explored",
            )
        )

    def next_level(self, level: int) -> list[Branch]:
        """The follow-ups of the last level, narrower: ``breadth / 2**(level-1)`` per
        question (at least 1), at most ``2 × breadth`` in all, in turn from each question.

        Without a model the follow-ups are names (see :func:`bridge_entities`), two more
        per question and ``3 × breadth`` in all; the names of a question that read a
        page the research's question names (its first hop) come before the others.
        """
        per_parent = max(1, math.ceil(self.settings.breadth / 2 ** (level - 1)))
        most = tuned.FOLLOW_UPS_PER_BREADTH * self.settings.breadth
        no_llm = self.ctx.llm is None
        if no_llm:
            # Names are cheap second hops: a search each, and pages only for those that
            # have a page of their own first (see run_level).
            per_parent += tuned.EXTRA_NAMES_PER_QUESTION
            most = tuned.NAMES_PER_BREADTH * self.settings.breadth
        parents = [b for b in self.tree.branches if b.level == level - 1 and b.status == "done"]
        first = [
            no_llm and any(named_by(self.ctx.topic, p.title) for _, p in b.pages) for b in parents
        ]
        offers = self._offers(parents, per_parent)
        chosen = _in_turn(parents, offers, first, per_parent, most)
        made: list[Branch] = []
        for parent in parents:
            mine = [q for p, q in chosen if p is parent]
            made += self._new(parent, level, mine)
        return made

    def _offers(self, parents: list[Branch], per_parent: int) -> list[list[str]]:
        """Each parent's follow-ups that repeat nothing asked (without a model: the names
        its pages give, found here), at most ``per_parent``."""
        known = self.tree.asked(self.ctx.topic)
        offers: list[list[str]] = []
        for parent in parents:
            if self.ctx.llm is None:
                pages = [(p.title, p.text) for _, p in parent.pages]
                parent.follow_ups = bridge_entities(self.ctx.topic, pages, per_parent, known)
            offers.append([q for q in parent.follow_ups if not repeats(q, known)][:per_parent])
        return offers

    # -- one level -----------------------------------------------------------------------
    async def run_level(self, branches: list[Branch], share: int) -> None:
        """Research ``branches`` at once, reading about ``share`` pages between them."""
        self.tree.branches += branches
        contexts = [self._context(b) for b in branches]
        ranked = await gather_or_cancel(
            self._guarded(b, self._rank(b, c)) for b, c in zip(branches, contexts, strict=True)
        )
        lists = self._deal(branches, ranked, share)
        await gather_or_cancel(
            self._told(b, self._guarded(b, self._read(b, c, cands)))
            for b, c, cands in zip(branches, contexts, lists, strict=True)
        )
        for branch, bctx in zip(branches, contexts, strict=True):
            # The level's branches saw results apart; later levels know what all saw.
            self.ctx.tally.shown |= bctx.tally.shown
            self.ctx.tally.picks.update(bctx.tally.picks)
            self.ctx.record_stage("node", branch.node())

    async def _told(self, branch: Branch, work: Awaitable[None]) -> None:
        """``work``, then the branch's end told as it comes (the live tree does not wait
        for the level's slowest branch)."""
        await work
        self.tell(branch)

    def _deal(
        self, branches: list[Branch], ranked: list[list[Candidate] | None], share: int
    ) -> list[list[Candidate]]:
        """How many pages each branch may read (``Branch.wanted``), and its candidates: no
        page given to two branches, none read already (see :func:`assign`)."""
        # A second hop without a model looks for one name's page: two pages are enough,
        # and the rest of the level's share goes to the other names.
        hop = self.ctx.llm is None and branches[0].level > 1
        cap = HOP_PAGES if hop else share
        # A page cut short at an earlier level is its name's page for a later branch:
        # worth a second request there, and nowhere else.
        ranked = [
            [c for c in r if c.canonical_url not in self.cut or titled(c.title, b.question)]
            if r is not None
            else None
            for r, b in zip(ranked, branches, strict=True)
        ]
        open_ = [[c for c in r or [] if c.canonical_url not in self.tried] for r in ranked]
        # A name with a page of its own is dealt a page first: that page is the hop.
        named = [
            bool(o) and titled(o[0].title, b.question) for o, b in zip(open_, branches, strict=True)
        ]
        wants = spread(share, [len(o) for o in open_], cap, first=named if hop else None)
        for branch, wanted in zip(branches, wants, strict=True):
            branch.wanted = wanted
        # A page two branches rank alike goes to the narrower question: a name's own page
        # to the branch that searched the name, not to the whole question's.
        narrow = sorted(range(len(branches)), key=lambda i: len(terms(branches[i].question)))
        return assign(
            [r or [] for r in ranked], [b.wanted for b in branches], self.tried, first=narrow
        )

    def _context(self, branch: Branch) -> RunContext:
        """The run's context as this branch uses it: its own question and reader, what the
        model was asked so far (the branch's own from there: the level's branches see
        results apart), the run's services, budget and record. What its searches, pages
        and reading did is folded into the run's tally as each step returns."""

        def emit(event: Event) -> None:
            self.ctx.emit(event)
            if event.kind == "fetched" and branch.status == "reading":
                branch.read += 1
                self.tell(branch)

        return replace(
            self.ctx,
            topic=branch.question,
            emit=emit,
            reader=None,
            passage_queries=[branch.question],
            tally=Tally(
                searched=dict(self.ctx.tally.searched),
                picks=dict(self.ctx.tally.picks),
                shown=set(self.ctx.tally.shown),
            ),
            report=None,
        )

    async def _guarded(self, branch: Branch, work: Awaitable[T]) -> T | None:
        """``work`` of one branch; a failure marks the branch failed, not the run."""
        try:
            with timeline.in_branch(branch.id):  # its requests are the node's on the timeline
                return await work
        except (LLMAuthError, StoreCorruptError):
            raise
        except Exception as exc:
            branch.status = "failed"
            branch.note = (
                str(exc) if isinstance(exc, _BranchFailed) else f"{type(exc).__name__}: {exc}"
            )
            self.ctx.tally.failures.append(
                Failure(
                    url="",
                    stage="search",
                    reason=f"the question “{branch.question}” could not be researched "
                    f"({branch.note}); the other branches went on",
                )
            )
            return None

    async def _rank(self, branch: Branch, bctx: RunContext) -> list[Candidate]:
        branch.status = "searching"
        self.tell(branch)
        branch.plan = Plan(
            question=branch.question,
            queries=branch.queries,
            planner="llm" if self.ctx.llm is not None else "rules",
        )
        searched = await search_stage(bctx, branch.plan)
        self.ctx.tally.fold(searched)
        hits = self.ctx.tally.hits(searched.planned)
        if not hits and self._searches_failed(branch):
            raise _BranchFailed("every search for it failed")
        # A branch reads a few pages: its select call is shown its best SHOWN results.
        chosen = await rank_stage(bctx, branch.plan, hits, show=SHOWN)
        bctx.tally.fold(chosen)
        ranked = own_first(branch.question, chosen.candidates)
        if self.ctx.llm is None and branch.level > 1:
            # A second hop searches a name: a result that does not even mention it is
            # another page that shares a word with it (no model is there to judge).
            ranked = [c for c in ranked if mentions(f"{c.title} {c.snippet}", branch.question)]
        return ranked

    def _searches_failed(self, branch: Branch) -> bool:
        said = [f.reason for f in self.ctx.tally.failures if f.stage == "search"]
        return all(any(f"“{q}”" in reason for reason in said) for q in branch.queries)

    async def _read(self, branch: Branch, bctx: RunContext, candidates: list[Candidate]) -> None:
        if branch.status == "failed" or branch.plan is None:
            return
        branch.candidates = candidates
        branch.status = "reading"
        self.tell(branch)
        if branch.wanted <= 0 or not candidates:
            branch.status = "empty"
            branch.note = (
                "its searches found nothing that was not read already"
                if not candidates
                else "no pages left to read (--max-sources)"
            )
            return
        # The run's question judges every branch's pages, as in quick mode; a second
        # hop's own page (titled with the name an on-topic page gave) is on-topic there.
        # A name's own page (its title carries the name) is what the branch is for: waited
        # for however slow (the fetch timeout bounds it), not cut for quicker pages.
        own = [
            c.canonical_url for c in candidates[: branch.wanted] if titled(c.title, branch.question)
        ][:OWN_PAGES]
        # Summarised only when it may be kept: a branch's share is small, and summaries of
        # the pages beyond it were most of deep mode's tokens per cited source.
        policy = BranchPolicy(Waits(top_s=self.settings.top_wait), own=frozenset(own))
        gate = Relevance(self.ctx.topic, bridge=branch.question if branch.level > 1 else "")
        how = Fetching(want=branch.wanted, memo=self.memo, policy=policy, gate=gate)
        fetched = await fetch_stage(bctx, candidates, how)
        self.ctx.tally.fold(fetched)
        gathered = fetched.gathered
        self.tree.fetches += gathered.attempted
        read = await read_stage(bctx, branch.plan, gathered)
        self.ctx.tally.fold(read)
        sources = read.sources
        kept = {s.url for s in sources}
        branch.pages = [(c, p) for c, p in gathered.pages if (p.final_url or c.url) in kept]
        branch.verdicts = {c.canonical_url: gate.verdict(c, p) for c, p in branch.pages}
        mine = set(branch.verdicts)
        branch.aside = [(c, p) for c, p in gate.judged() if c.canonical_url not in mine]
        self._mark_tried(branch.pages, gathered)
        branch.sources = sources
        branch.read = len(sources)
        if gathered.stopped_by:
            self.tree.stopped_by = self.tree.stopped_by or gathered.stopped_by
        if not sources:
            branch.status, branch.note = "empty", _why_empty(gathered)
            return
        if bctx.llm is not None:
            branch.learnings, branch.follow_ups = await learn(
                bctx.llm,
                self.ctx.topic,
                branch.question,
                sources,
                max(1, math.ceil(self.settings.breadth / 2**branch.level)),
            )
        branch.status = "done"

    async def read_hops(self) -> None:
        """Read as sources the pages a branch set aside whose subject a source of the tree
        names (:func:`~sleuth.pipeline.deep.sift.hops`), within ``--max-sources``."""
        room = self.settings.max_sources - sum(len(b.sources) for b in self.tree.branches)
        for branch, pages in hops(self.tree, room, self.ctx.topic):
            if branch.plan is None:
                continue
            read = await read_stage(self._context(branch), branch.plan, Gathered(pages=pages))
            self.ctx.tally.fold(read)
            urls = {c.url for c, _ in pages}
            self.ctx.tally.failures = [
                f
                for f in self.ctx.tally.failures
                if f.url not in urls or not f.reason.startswith(OFF_TOPIC)
            ]
            kept = {s.url for s in read.sources}
            branch.pages += [(c, p) for c, p in pages if (p.final_url or c.url) in kept]
            branch.sources += read.sources
            branch.read = len(branch.sources)
            if branch.sources and branch.status == "empty":
                branch.status, branch.note = "done", None

    def _mark_tried(self, read: list[tuple[Candidate, Page]], gathered: Gathered) -> None:
        # A page fetched whole and not kept stays open to other branches: the memo
        # answers for it. A download cut short ("not waited for") is asked again only
        # by a later branch whose own page it is (see run_level).
        self.tried |= {c.canonical_url for c, _ in read}
        for failure in gathered.failures:
            key = canonicalize(failure.url) if failure.url else ""
            if not key or (key in self.memo and failure.reason.startswith("not waited for")):
                continue
            if failure.reason.startswith("not waited for"):
                self.cut.add(key)
            else:
                self.tried.add(key)

    def tell(self, branch: Branch) -> None:
        """Tell the progress stream where ``branch`` stands (a ``branch`` event)."""
        progress = f" {branch.read}/{branch.wanted} pages" if branch.wanted else ""
        self.ctx.emit(
            Event(
                "branch",
                f"level {branch.level} · {branch.id} {branch.status}{progress}: {branch.question}",
                {
                    "node": branch.id,
                    "parent": branch.parent,
                    "level": branch.level,
                    "question": branch.question,
                    "status": branch.status,
                    "read": branch.read,
                    "wanted": branch.wanted,
                    "note": branch.note,
                },
            )
        )


def _why_empty(gathered: Gathered) -> str:
    """Why a branch that found pages has no source: off-topic, or none could be read."""
    if any(f.reason.startswith(OFF_TOPIC) for f in gathered.failures):
        return "the pages it found were off-topic"
    return "none of the pages it found could be read"


class _BranchFailed(Exception):
    """A branch that could not be researched (its searches all failed)."""


#: Pages a second hop reads without a model (see :meth:`Explorer.run_level`).
HOP_PAGES = tuned.HOP_PAGES
#: A branch's own pages (titled with its name) waited for until they come, at most.
OWN_PAGES = tuned.OWN_PAGES
#: Search results a branch's select call is shown (each query's best in turn). A branch
#: reads its share of a level, 2-5 pages; showing all of its ~20 results made the select
#: calls a third of deep mode's tokens per cited source.
SHOWN = tuned.BRANCH_RESULTS_SHOWN


def _in_turn(
    parents: list[Branch],
    offers: list[list[str]],
    first: list[bool],
    per_parent: int,
    most: int,
) -> list[tuple[Branch, str]]:
    """The follow-ups taken, at most ``most``, none repeating another: the parents marked
    ``first`` give all theirs first, then the others in turn, one question each."""
    chosen: list[tuple[Branch, str]] = []

    def offer(parent: Branch, question: str) -> None:
        if len(chosen) < most and not repeats(question, [q for _, q in chosen]):
            chosen.append((parent, question))

    for parent, offered, early in zip(parents, offers, first, strict=True):
        for question in offered if early else []:
            offer(parent, question)
    for turn in range(per_parent):
        for parent, offered, early in zip(parents, offers, first, strict=True):
            if turn < len(offered) and not early:
                offer(parent, offered[turn])
    return chosen
