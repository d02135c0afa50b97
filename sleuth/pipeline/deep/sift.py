"""A deep research's sources judged together, once the tree is explored.

Each branch judges its pages as they arrive against the research's question
(:class:`~sleuth.stages.relevance.Relevance`), but only beside the pages *that branch*
read. Two things follow that only the whole tree shows:

* A branch whose searches found nothing good (a follow-up on "Los Angeles" for a
  question on two bands) keeps the best of what it found, a band formed in Los Angeles.
  Beside the whole tree's pages, that page is off-topic. :func:`sift` applies quick
  mode's comparison (:func:`~sleuth.stages.relevance.within`) to every branch's sources
  at once: a source scoring more than the margin under the tree's best page, on the
  question or on the part it is about, is left out, unless it is sure, titled (a second
  hop's own page, titled with the name it searched) or named by a source that stays (the
  page on "Pro Bowl" that the player's page names, for a question on his all-star
  selections).
* A page one branch set aside can be the second hop another branch's page names: the
  branch searching the question found "Australian National University" and set it
  aside (it does not mention Toad Hall) while the branch on "Toad Hall" read the page
  that says Toad Hall is at the Australian National University. :func:`hops` finds
  such pages, for the explorer to read as sources of the branch that found them.

Judging once at the end also makes the sources independent of the order in which the
pages arrived.
"""

from __future__ import annotations

from sleuth.models import Candidate, Failure, Page
from sleuth.pipeline.deep.tree import Branch, Tree
from sleuth.stages.relevance import Relevance, named_in, within

__all__ = ["hops", "sift"]


def sift(topic: str, tree: Tree) -> list[Failure]:
    """Leave out the sources of ``tree`` that are off-topic beside all of its sources
    (see the module docstring); the failures that say so, for the report's Gaps."""
    gate = Relevance(topic)
    entries = [
        (branch, candidate, page, branch.verdicts.get(candidate.canonical_url))
        for branch in tree.branches
        for candidate, page in branch.pages
    ]
    verdicts = [v if v is not None else gate.verdict(c, p) for _, c, p, v in entries]
    if len(verdicts) < 2:
        return []
    near = within(verdicts)
    on = [page.text for (_, _, page, _), keep in zip(entries, near, strict=True) if keep]
    bridges = _bridges(topic, _close(topic, tree))
    failures: list[Failure] = []
    for (branch, candidate, page, _), verdict, keep in zip(entries, verdicts, near, strict=True):
        title = page.title or candidate.title
        hop = named_in(title, on, as_name=True) and not gate.judge.titled(title)
        if keep or hop or _names_one(page.text, bridges):
            continue
        url = page.final_url or candidate.url
        branch.pages = [(c, p) for c, p in branch.pages if p is not page]
        branch.sources = [s for s in branch.sources if s.url != url]
        branch.read = len(branch.sources)
        reason = gate.why(candidate, page, verdict)
        failures.append(Failure(url=candidate.url, stage="read", reason=reason))
        if not branch.sources and branch.status == "done":
            branch.status = "empty"
            branch.note = "its pages were off-topic beside the rest of the research"
    return failures


def _bridges(topic: str, sources: list[tuple[Candidate, Page]]) -> list[str]:
    """The titles of ``sources`` that the question does not name: the second hops the
    tree found ("Paul Gross" for a question on the actor who played Benton Fraser).
    Callers pass the sources on-topic by their own score (close to the tree's best,
    not only sure, nor kept as a hop), so one off-topic page does not bring its
    neighbours."""
    titles = [page.title or candidate.title for candidate, page in sources]
    return [title for title in titles if not named_in(title, [topic])]


def _names_one(text: str, titles: list[str]) -> bool:
    """Whether ``text`` names, as a name, the subject of one of ``titles``: a page that
    says whose daughter she is ("the daughter of … Paul Gross") is about the second hop
    as much as the page on him is."""
    return any(named_in(title, [text], as_name=True) for title in titles)


def hops(
    tree: Tree, room: int, topic: str = ""
) -> list[tuple[Branch, list[tuple[Candidate, Page]]]]:
    """The pages some branch set aside whose subject a source of the tree names, or that
    name a source's subject the question (``topic``) does not (at most ``room``, in the
    order they were set aside), each with the branch that found it."""
    if room <= 0:
        return []
    texts = [page.text for branch in tree.branches for _, page in branch.pages]
    read = {c.canonical_url for branch in tree.branches for c, _ in branch.pages}
    bridges = _bridges(topic, _close(topic, tree)) if topic else []
    found: dict[str, list[tuple[Candidate, Page]]] = {}
    owner: dict[str, Branch] = {}
    for branch in tree.branches:
        for candidate, page in branch.aside:
            url = candidate.canonical_url
            named = named_in(page.title or candidate.title, texts, as_name=True)
            if url in read or not (named or _names_one(page.text, bridges)):
                continue
            read.add(url)
            found.setdefault(branch.id, []).append((candidate, page))
            owner[branch.id] = branch
            room -= 1
            if room == 0:
                return [(owner[b], pages) for b, pages in found.items()]
    return [(owner[b], pages) for b, pages in found.items()]


def _close(topic: str, tree: Tree) -> list[tuple[Candidate, Page]]:
    """The tree's sources within the margin of its best on ``topic`` (or titled)."""
    gate = Relevance(topic)
    pages = [
        (candidate, page, branch.verdicts.get(candidate.canonical_url))
        for branch in tree.branches
        for candidate, page in branch.pages
    ]
    if not pages:
        return []
    verdicts = [v if v is not None else gate.verdict(c, p) for c, p, v in pages]
    close = within(verdicts, sure_counts=False)
    return [(c, p) for (c, p, _), ok in zip(pages, close, strict=True) if ok]
