"""The relevance gate: a page becomes a source only if what it says bears on the question.

Issue 23: a research tool that fills its quota with whatever is left loses the reader's
trust faster than one that says "I found three". Both pipelines (with and without a
model) pass every page through the same gate, on its extracted text, before it counts
as read (and, with a model, before it is summarised):

1. **Score.** The page's weighted coverage (title and text) of the key terms of the
   question, of the planner's query for each of its parts ("NASA astronomers found
   Saturn's moon Titan" for the Titan page, which says nothing of Europa), or of a
   search query that found it and names the question's subject. Names (capitalised
   words, quoted titles; not demonyms such as "American") weigh twice; a page that
   names none of a query's names scores 0 for it (a name of several words counts
   only whole, across the small words of a title: "Welcome to the Show" is not named
   by a page on a band that "performs multiple shows"), and so does one with none of its
   other words ("Beer in Hong Kong" for how China responds to the protests there),
   unless the page is about something the question names (its title is made of the
   question's words: "Audrey Williams"). When the question is plainly about its parts
   (three or more, or topics such as "markets and trade talks"), a page naming none
   of them scores 0. A search query counts only when it keeps every name the
   question gives and at least half of what it asks: fragments ("War awarded
   medal", "Eat released year") found ski jumpers and novels for questions on a
   film and a cookbook, and "China responding protests" (no Hong Kong) a trade-war
   piece for the protests there. A long page (over :data:`LONG_PAGE` content words)
   does not name what it names only once outside its title: a byline "reporting
   from Hong Kong", a company named once in an essay on something else.
2. **Floor.** A page under :data:`FLOOR` is set aside as it arrives: it shares a
   word or two with the question and nothing more ("'Meth. We're On It'" for a
   question on tariffs). At most as many pages as sources wanted are set aside
   before gathering stops looking (see ``sleuth.pipeline.gather``).
3. **Against the others.** Once gathering ends, a page scoring under
   :data:`RELATIVE` of the best page read is off-topic by comparison.
4. **One hop.** A page set aside whose title an on-topic page names ("Boston Beer
   Company" in the page on the lobbyist who joined it) is on-topic after all: the
   second page of a two-step question often shares no word with the question.
5. **Parts first.** When the question has parts ("the Moon, Jupiter's moon Europa
   and Saturn's moon Titan"), the sources cover each part before any part gets a
   second source; then the best-ranked on-topic pages fill the rest. A page read
   and on-topic is never left out while a worse-ranked one is kept.

Every page left out as off-topic is named in the report's Gaps. The thresholds and
rules were chosen on the tune splits of ``bench/relevance.py`` and on the gold pages of
the first 100 HotpotQA questions (how many fall under the floor); figures in
bench/README.md.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from sleuth.models import Candidate, Failure, Page
from sleuth.stages.plan import part_queries
from sleuth.terms import STOP, content_terms, parse, terms_of

__all__ = ["FLOOR", "OFF_TOPIC", "RELATIVE", "Relevance", "name_terms"]

#: A page covering less of the question's (or its part's) key terms is set aside.
FLOOR = 0.3
#: A page scoring under this share of the best page read is off-topic by comparison.
RELATIVE = 0.55
#: Content words past which a page is long: a question's name it says once does not count.
LONG_PAGE = 400
#: A search query must cover this much of the question (as a page would) to count.
QUERY_SHARE = 0.5
#: Lower-case words a name runs on across ("Welcome to the Show", "Minister for Agriculture").
_CONNECTORS = frozenset(["of", "to", "the", "for", "de", "del", "du", "von", "van", "la", "le"])
#: The reason every off-topic page is given in the report's Gaps (they are grouped by it).
OFF_TOPIC = "read and left out as off-topic"
_DEMONYMS = frozenset(
    [
        "african",
        "american",
        "arab",
        "asian",
        "australian",
        "austrian",
        "belgian",
        "brazilian",
        "british",
        "canadian",
        "chinese",
        "danish",
        "dutch",
        "egyptian",
        "english",
        "european",
        "finnish",
        "french",
        "german",
        "greek",
        "indian",
        "iranian",
        "irish",
        "israeli",
        "italian",
        "japanese",
        "korean",
        "mexican",
        "norwegian",
        "polish",
        "portuguese",
        "russian",
        "scottish",
        "spanish",
        "swedish",
        "swiss",
        "turkish",
        "welsh",
    ]
)
_TOKEN = re.compile(r"[^\W\d_]\.(?=\s+[^\W\d_])|[^\W_](?:[\w'’.\-&]*[^\W_])?|[^\w\s]")
_QUOTED = re.compile(r"\"([^\"\n]{2,120})\"|“([^”\n]{2,120})”")


def name_terms(text: str) -> frozenset[str]:
    """The stemmed terms of ``text``'s names: capitalised words (a capital opening the
    text counts unless it is a function word), quoted titles; demonyms left out."""
    found: set[str] = set()
    for n, token in enumerate(_TOKEN.findall(text)):
        if token[:1].isupper() and (n > 0 or token.lower() not in STOP):
            found |= content_terms(token)
    for quoted in _QUOTED.findall(text):
        found |= content_terms(quoted[0] or quoted[1])
    return frozenset(found - _DEMONYMS)


def name_phrases(text: str) -> list[frozenset[str]]:
    """The terms of each name in ``text``: a run of capitalised words, joined across
    the small words inside a title ("Grace Krilanovich", "Welcome to the Show"), a
    quoted title; demonyms left out. A page names it when it holds every term of it
    ("Grace" alone is not "Grace Krilanovich"; a band's page that "performs multiple
    shows" does not name the sitcom "Welcome to the Show")."""
    runs: list[list[str]] = [[]]
    inside: list[str] = []  # connectors after a capitalised word, kept if one follows
    for n, token in enumerate(_TOKEN.findall(text)):
        if token[:1].isupper() and (n > 0 or token.lower() not in STOP):
            runs[-1] += [*inside, token]
            inside = []
        elif runs[-1] and token.lower() in _CONNECTORS:
            inside.append(token)
        elif runs[-1]:
            runs.append([])
            inside = []
    phrases = [content_terms(" ".join(run)) for run in runs]
    phrases += [content_terms(q[0] or q[1]) for q in _QUOTED.findall(text)]
    return [frozenset(p - _DEMONYMS) for p in phrases if p - _DEMONYMS]


@dataclass(frozen=True)
class _Query:
    """A query's key terms, their weights, and its names."""

    weights: dict[str, float]
    names: frozenset[str]
    phrases: tuple[frozenset[str], ...] = ()

    @classmethod
    def of(cls, text: str) -> _Query:
        names = name_terms(text)
        terms = dict.fromkeys(terms_of(text))
        return cls({t: 2.0 if t in names else 1.0 for t in terms}, names, tuple(name_phrases(text)))

    def coverage(self, terms: frozenset[str], about: frozenset[str] | None = frozenset()) -> float:
        """The weighted share of the query's terms in ``terms``: 0 without any of its
        names, or without any of its other words when it has some (a page on "Beer in
        Hong Kong" names the place but says nothing of protests or responses), unless
        the page is about something the query names (``about``: its title's terms,
        such as "Audrey Williams" for a question on what she was pregnant with; None
        for a part's query, whose other words are the question's, not the part's)."""
        total = sum(self.weights.values())
        if not total or (self.names and not self.names & terms):
            return 0.0
        if self.phrases and not any(phrase <= terms for phrase in self.phrases):
            return 0.0
        plain = set(self.weights) - self.names
        if (
            about is not None
            and plain
            and not plain & terms
            and not (about and about <= set(self.weights))
        ):
            return 0.0
        return sum(w for t, w in self.weights.items() if t in terms) / total


def page_terms(title: str, text: str, names: frozenset[str]) -> frozenset[str]:
    """The terms a page covers (title and text), less the ``names`` (the question's)
    that a long page (over :data:`LONG_PAGE` content words) says only once outside its
    title: a name said once in a long article is said in passing (a trade-war piece
    ending "contributed reporting from Hong Kong" is no page on Hong Kong)."""
    words = terms_of(text)
    terms = content_terms(title).union(words)
    if len(words) <= LONG_PAGE:
        return terms
    counts = Counter(w for w in words if w in names)
    return terms - {name for name, n in counts.items() if n == 1} | content_terms(title)


@dataclass
class _Read:
    candidate: Candidate
    page: Page
    score: float
    terms: frozenset[str]


def _title_core(title: str) -> str:
    """A page's title as another page would name it: no "(film)", no " - Site"."""
    core = re.sub(r"\s*\([^)]*\)\s*$", "", " ".join(title.split()))
    core = re.split(r"\s+[-–—|]\s+", core)[0]
    return core.strip(" \"'“”")


@dataclass
class Relevance:
    """The gate of one run (see the module docstring): ``check`` judges each page as it
    arrives, ``choose`` picks the sources once gathering ends (``sleuth.pipeline.gather``)."""

    question: str
    #: Pages scored so far, by canonical URL.
    read: dict[str, _Read] = field(default_factory=dict)
    #: Canonical URLs set aside by the floor, in the order they came.
    aside: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._question = _Query.of(self.question)
        self._queries: dict[str, _Query] = {}
        self.parts = self._part_terms()
        # The planner's query for each part of the question ("how police fighting meth
        # methamphetamine drug use"), trusted whatever found the page: a part need not
        # name the question's other parts.
        self._own = [_Query.of(q) for q in part_queries(self.question)]
        # A page must name one of the parts when the question is plainly about them:
        # three or more ("the Moon, Europa and Titan"), or topics rather than names
        # ("markets and trade talks"). Two names may be a bridge question's own words
        # ("Welcome to the Show and the band f(x)": the answer's page names neither).
        items = parse(self.question).items
        self._about_parts = bool(self.parts) and (
            len(items) >= 3 or not any(w[:1].isupper() for item in items for w in item)
        )

    def _part_terms(self) -> list[frozenset[str]]:
        parsed = parse(self.question)
        if len(parsed.items) < 2:
            return []
        tokens = parsed.tokens
        context = content_terms(" ".join(tokens[: parsed.span[0]] + tokens[parsed.span[1] + 1 :]))
        items = [content_terms(" ".join(item)) - context for item in parsed.items]
        parts = []
        for n, item in enumerate(items):
            others = frozenset().union(*(o for m, o in enumerate(items) if m != n))
            parts.append(item - others or item)
        return [p for p in parts if p]

    def _query(self, text: str) -> _Query | None:
        """A query that found a page, if it stands for the question: it keeps every name
        the question gives (else, without names, two of its words) and at least
        :data:`QUERY_SHARE` of what it asks. A fragment ("War awarded medal", "China
        responding protests" for the protests in Hong Kong) is about something else."""
        if text not in self._queries:
            query = _Query.of(text)
            held = frozenset(query.weights)
            named = (
                all(phrase <= held for phrase in self._question.phrases)
                if self._question.phrases
                else len(held & set(self._question.weights)) >= 2
            )
            named = named and self._question.coverage(held, None) >= QUERY_SHARE
            self._queries[text] = query if named else _Query({}, frozenset())
        found = self._queries[text]
        return found if found.weights else None

    def score(self, candidate: Candidate, title: str, text: str) -> tuple[float, frozenset[str]]:
        """The page's score and its terms (see the module docstring)."""
        terms = page_terms(title, text, self._question.names)
        if self._about_parts and not any(part & terms for part in self.parts):
            return 0.0, terms  # a question with parts is about them: this page names none
        about = content_terms(_title_core(title))
        best = max(
            [self._question.coverage(terms, about), *(q.coverage(terms, None) for q in self._own)]
        )
        for text_of_query in candidate.queries:
            query = self._query(text_of_query)
            if query is not None:
                best = max(best, query.coverage(terms, about))
        return best, terms

    def likely(self, candidate: Candidate) -> bool:
        """Whether a page not read yet may become a source: its search result (title and
        snippet) is over the floor, or says too little to judge (no snippet)."""
        if not candidate.snippet.strip():
            return True
        return self.score(candidate, candidate.title, candidate.snippet)[0] >= FLOOR

    def check(self, candidate: Candidate, page: Page) -> str | None:
        """The floor, as the page arrives: None to read it on, else why it is set aside."""
        score, terms = self.score(candidate, page.title or candidate.title, page.text)
        self.read[candidate.canonical_url] = _Read(candidate, page, score, terms)
        if score >= FLOOR:
            return None
        self.aside.append(candidate.canonical_url)
        return f"{OFF_TOPIC} (it covers {score:.0%} of the question's key terms)"

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
        best = max((r.score for r in passed), default=0.0)
        on = [r for r in passed if r.score >= RELATIVE * best]
        weak = [r for r in passed if r.score < RELATIVE * best]
        aside = [self.read[url] for url in self.aside if url in self.read]
        hops = [r for r in [*weak, *aside] if self._named_by(r, on)]
        order = {c.canonical_url: n for n, (c, _) in enumerate(pages)}
        rank = [r for r in [*on, *hops]]
        rank.sort(key=lambda r: order.get(r.candidate.canonical_url, len(order)))
        kept = self._parts_first(rank, want)
        kept_urls = {r.candidate.canonical_url for r in kept}
        out = [
            r
            for r in [*weak, *aside]
            if r.candidate.canonical_url not in kept_urls and r not in hops
        ]
        failures = [
            Failure(
                url=r.candidate.url,
                stage="read",
                reason=(
                    f"{OFF_TOPIC} (it covers {r.score:.0%} of the question's key terms, "
                    f"the best page {best:.0%})"
                    if r in weak
                    else f"{OFF_TOPIC} (it covers {r.score:.0%} of the question's key terms)"
                ),
            )
            for r in out
        ]
        return [(r.candidate, r.page) for r in kept], failures

    def _entry(self, candidate: Candidate, page: Page) -> _Read:
        entry = self.read.get(candidate.canonical_url)
        if entry is None or entry.page is not page:
            score, terms = self.score(candidate, page.title or candidate.title, page.text)
            entry = self.read[candidate.canonical_url] = _Read(candidate, page, score, terms)
        return entry

    @staticmethod
    def _named_by(entry: _Read, on: list[_Read]) -> bool:
        """Whether an on-topic page names this page's title (one hop; see the docstring)."""
        core = _title_core(entry.page.title or entry.candidate.title)
        if len(core) < 4 or core.lower() in STOP:
            return False
        pattern = re.compile(rf"(?<!\w){re.escape(core)}(?!\w)", re.IGNORECASE)
        return any(other is not entry and pattern.search(other.page.text) for other in on)

    def _parts_first(self, ranked: list[_Read], want: int) -> list[_Read]:
        """``want`` of ``ranked``: one for each part first (best-ranked), then by rank."""
        if not self.parts:
            return ranked[:want]
        covered: set[int] = set()
        first: list[_Read] = []
        for entry in ranked:
            new = {
                n
                for n, part in enumerate(self.parts)
                if n not in covered and len(part & entry.terms) >= math.ceil(len(part) / 2)
            }
            if new and len(first) < want:
                first.append(entry)
                covered |= new
        rest = [r for r in ranked if r not in first]
        chosen = {id(r) for r in [*first, *rest][:want]}
        return [r for r in ranked if id(r) in chosen]
