"""The relevance gate: a page becomes a source only if what it says bears on the question.

A research tool that fills its quota with whatever it read loses the reader's trust
faster than one that says "I found three". Every pipeline (with and without a model,
web or local documents) passes each page through the same gate, on its extracted text,
before it counts as read (and, with a model, before it is summarised). The gate judges
a page with :class:`~sleuth.stages.judge.Judge` (its words and its meaning against the
question, one score) and then:

1. **Floor.** A page scoring under :data:`~sleuth.stages.judge.FLOOR` is set aside as
   it arrives, with the reason ("it does not mention the Federal Reserve"), and so is a
   page already off-topic beside the pages read before it (rule 2). At most as many
   pages as sources wanted are set aside before gathering stops looking (see
   ``sleuth.pipeline.gather``).
2. **Against the others.** Once gathering ends, a page scoring more than
   :data:`MARGIN` under the best page read is off-topic by comparison (a page on a
   part of the question is compared with the best page on that part), unless it is
   sure (:func:`sure`: it scores :data:`SURE`, and a long page's title bears on the
   question too; an encyclopedia's long article on the question's subject does not
   push out the pages on its parts, and a report on another subject that names the
   question's in one passage is not sure) or its title names something the question
   names (the page on a person the question asks about is on-topic, however little of
   the question it repeats, if it scores as much as the average page).
3. **One hop.** A page left out whose title an on-topic page names is on-topic after
   all: the second page of a two-step question often shares no word with the question
   (a page titled with a name the question gives is no second step).
4. **Parts first.** When the question has parts ("the Moon, Jupiter's moon Europa and
   Saturn's moon Titan"), the sources cover each part before any part gets a second
   source; then the best-ranked on-topic pages fill the rest. A page read and on-topic
   is never left out while a worse-ranked one is kept.

Every page left out as off-topic is named in the report's Gaps, its reason in the
run's failures. The thresholds were chosen on the tune split of ``bench/semantic.py``
and ``bench/relevance.py``; figures in bench/NOTEBOOK.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from sleuth import tuned
from sleuth.models import Candidate, Failure, Page
from sleuth.stages.judge import FLOOR, Judge, Verdict, name_terms, title_core
from sleuth.terms import STOP

__all__ = [
    "FLOOR",
    "MARGIN",
    "OFF_TOPIC",
    "SUBJECT",
    "SURE",
    "Relevance",
    "name_terms",
    "named_in",
    "sure",
    "within",
]

#: A page scoring this much under the best page read is off-topic by comparison, unless
#: its title names something the question names.
MARGIN = tuned.GATE_MARGIN
#: A page scoring this much is on-topic whatever else was read (2% of the pages the tune
#: questions read that are off-topic score as much, 70% of the relevant ones).
SURE = tuned.GATE_SURE
#: ... and, if it is long, its title judged alone scores this much.
SUBJECT = tuned.GATE_SUBJECT
#: The reason every off-topic page is given in the report's Gaps (they are grouped by it).
OFF_TOPIC = "read and left out as off-topic"


def named_in(title: str, texts: Sequence[str], *, as_name: bool = False) -> bool:
    """Whether one of ``texts`` names the subject of the page titled ``title`` (its title
    less the site's name and any qualifier), as a whole word: one hop (rule 3 above).

    ``as_name``: only as a name, written as the title writes it, and a one-word subject
    only where the texts never write it in lower case ("Always (2011 film)" is not named
    by "always", nor "Twins (group)" by "twins").
    """
    core = title_core(title)
    if len(core) < 4 or core.lower() in STOP:
        return False
    flags = 0 if as_name else re.IGNORECASE
    pattern = re.compile(rf"(?<!\w){re.escape(core)}(?!\w)", flags)
    if as_name and " " not in core:
        common = re.compile(rf"(?<!\w){re.escape(core.lower())}(?!\w)")
        if core != core.lower() and any(common.search(text) for text in texts):
            return False
    return any(pattern.search(text) for text in texts)


def within(
    verdicts: Sequence[Verdict], margin: float = MARGIN, *, sure_counts: bool = True
) -> list[bool]:
    """Which of ``verdicts`` (the pages that passed the floor) are on-topic beside the
    others: within ``margin`` of the best page on the question or on one of its parts,
    sure (see :func:`sure`; unless not ``sure_counts``), or titled with a name the
    question gives."""
    best = [max(column) for column in zip(*(v.scores for v in verdicts), strict=True)]
    return [
        v.titled
        or (sure_counts and sure(v))
        or any(s >= b - margin for s, b in zip(v.scores, best, strict=True))
        for v in verdicts
    ]


def sure(verdict: Verdict) -> bool:
    """Whether a page is on-topic whatever else was read: it scores :data:`SURE` and, if
    long, its title judged alone scores :data:`SUBJECT` (a market report that names a
    city's protests in one passage is not sure for a question on those protests)."""
    return verdict.score >= SURE and verdict.subject >= SUBJECT


@dataclass
class _Read:
    candidate: Candidate
    page: Page
    verdict: Verdict

    @property
    def score(self) -> float:
        return self.verdict.score


@dataclass
class Relevance:
    """The gate of one run (see the module docstring): ``check`` judges each page as it
    arrives, ``choose`` picks the sources once gathering ends (``sleuth.pipeline.gather``)."""

    question: str
    #: In a deep research's second hop, the name the branch searched: the page of that
    #: name (titled with it) is on-topic there, whatever it shares with the question (an
    #: on-topic page named it).
    bridge: str = ""
    #: Pages judged so far, by canonical URL.
    read: dict[str, _Read] = field(default_factory=dict)
    #: Canonical URLs set aside by the floor, in the order they came.
    aside: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.judge = Judge(self.question)
        self.parts = self.judge.parts()

    def likely(self, candidate: Candidate) -> bool:
        """Whether a page not read yet may become a source: its search result (title and
        snippet) is over the floor, or says too little to judge (no snippet)."""
        if not candidate.snippet.strip() or self._bridged(candidate.title):
            return True
        return self.judge.page(candidate.title, candidate.snippet).on_topic

    def verdict(self, candidate: Candidate, page: Page) -> Verdict:
        """The verdict on a page: the one given as it arrived, else judged now."""
        entry = self.read.get(candidate.canonical_url)
        if entry is not None and entry.page is page:
            return entry.verdict
        return self._verdict(page.title or candidate.title, page.text)

    def why(self, candidate: Candidate, page: Page, verdict: Verdict) -> str:
        """The reason a page is left out as off-topic, in the report's words."""
        return self._why(_Read(candidate, page, verdict))

    def _verdict(self, title: str, text: str) -> Verdict:
        verdict = self.judge.page(title, text)
        if self._bridged(title):
            return replace(verdict, reason="", titled=True)
        return verdict

    def _bridged(self, title: str) -> bool:
        """Whether ``title`` is the bridge's own page ("Ilsa Varenne (composer)")."""
        core = " ".join(title_core(title).lower().split())
        return bool(self.bridge) and core == " ".join(self.bridge.lower().split())

    def check(self, candidate: Candidate, page: Page) -> str | None:
        """As the page arrives: None to read it on, else why it is set aside (under the
        floor, or already off-topic beside the pages read so far: gathering then reads
        another page in its place rather than count one that will not be a source)."""
        url = candidate.canonical_url
        title = page.title or candidate.title
        verdict = self._verdict(title, page.text)
        others = [r.verdict for u, r in self.read.items() if u != url and u not in self.aside]
        self.read[url] = _Read(candidate, page, verdict)
        reason = verdict.reason
        if not reason and others and not within([*others, verdict])[-1]:
            reason = self.judge.why(title, verdict.terms, verdict.words)
        if not reason:
            return None
        self.aside.append(url)
        return f"{OFF_TOPIC} ({reason})"

    def outranked(self, urls: Sequence[str]) -> list[str]:
        """Of the pages read and kept so far (canonical ``urls``), those now off-topic
        beside the others (:func:`within`): a better page came after them. They count as
        set aside from now on, so gathering reads others in their place rather than stop
        at pages that will not be sources; :meth:`choose` still sees them among the pages
        set aside (one an on-topic page names is kept after all)."""
        kept = [url for url in urls if url in self.read and url not in self.aside]
        if len(kept) < 2:
            return []
        near = within([self.read[url].verdict for url in kept])
        out = [url for url, keep in zip(kept, near, strict=True) if not keep]
        self.aside += out
        return out

    def judged(self) -> list[tuple[Candidate, Page]]:
        """Every page judged so far, in the order judged."""
        return [(r.candidate, r.page) for r in self.read.values()]

    def forget(self, urls: set[str]) -> None:
        """Drop what was judged of ``urls`` (canonical URLs): as if never read."""
        self.aside = [url for url in self.aside if url not in urls]
        for url in urls:
            self.read.pop(url, None)

    def choose(
        self, pages: Sequence[tuple[Candidate, Page]], want: int
    ) -> tuple[list[tuple[Candidate, Page]], list[Failure]]:
        """The sources among the pages read (in rank order), and the off-topic pages.

        ``pages`` passed the floor; the pages set aside are this gate's own record.
        """
        passed = [self._entry(c, p) for c, p in pages]
        near = within([r.verdict for r in passed])
        on = [r for r, keep in zip(passed, near, strict=True) if keep]
        weak = [r for r, keep in zip(passed, near, strict=True) if not keep]
        aside = [self.read[url] for url in self.aside if url in self.read]
        hops = [r for r in [*weak, *aside] if self._named_by(r, on)]
        order = {c.canonical_url: n for n, (c, _) in enumerate(pages)}
        rank = [*on, *hops]
        rank.sort(key=lambda r: order.get(r.candidate.canonical_url, len(order)))
        kept = self._parts_first(rank, want)
        kept_urls = {r.candidate.canonical_url for r in kept}
        out = [
            r
            for r in [*weak, *aside]
            if r.candidate.canonical_url not in kept_urls and r not in hops
        ]
        failures = [Failure(url=r.candidate.url, stage="read", reason=self._why(r)) for r in out]
        return [(r.candidate, r.page) for r in kept], failures

    def _why(self, entry: _Read) -> str:
        """The reason given for a page left out (see ``Judge.why``)."""
        reason = entry.verdict.reason
        if not reason:  # over the floor, under the best page read by more than MARGIN
            title = entry.page.title or entry.candidate.title
            reason = self.judge.why(title, entry.verdict.terms, entry.verdict.words)
        return f"{OFF_TOPIC} ({reason})"

    def _entry(self, candidate: Candidate, page: Page) -> _Read:
        entry = self.read.get(candidate.canonical_url)
        if entry is None or entry.page is not page:
            verdict = self._verdict(page.title or candidate.title, page.text)
            entry = self.read[candidate.canonical_url] = _Read(candidate, page, verdict)
        return entry

    def _named_by(self, entry: _Read, on: list[_Read]) -> bool:
        """Whether an on-topic page names this page's title (one hop; see the docstring).
        A page titled with a name the question gives is no hop: it was judged as such."""
        title = entry.page.title or entry.candidate.title
        if self.judge.titled(title):
            return False
        return named_in(title, [other.page.text for other in on if other is not entry])

    def _parts_first(self, ranked: list[_Read], want: int) -> list[_Read]:
        """``want`` of ``ranked``: one for each part first (best-ranked), then by rank."""
        if not self.parts:
            return ranked[:want]
        covered: set[int] = set()
        first: list[_Read] = []
        for entry in ranked:
            terms = entry.verdict.terms
            new = {
                n
                for n, part in enumerate(self.parts)
                if n not in covered and len(part & terms) >= math.ceil(len(part) / 2)
            }
            if new and len(first) < want:
                first.append(entry)
                covered |= new
        rest = [r for r in ranked if r not in first]
        chosen = {id(r) for r in [*first, *rest][:want]}
        return [r for r in ranked if id(r) in chosen]
