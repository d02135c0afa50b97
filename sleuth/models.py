"""Typed records that flow one way through the pipeline.

plan -> ``Plan``; search -> ``SearchHit`` (and ``SearchFailure``); rank -> ``Candidate``;
fetch -> ``Page`` or ``FetchFailure``; read -> ``Source`` (with passages); write -> ``Report``.
Every stage takes the records of the stage before it and returns new ones; none reaches back.
Their text is always valid: a lone surrogate (from a hostile page, search result or model
reply) becomes U+FFFD when a record is made (:class:`ValidText`).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sleuth._valid import valid_data


class ValidText(BaseModel):
    """A pydantic model whose string fields never hold a lone surrogate.

    Every field is made valid after validation (lists and dicts of strings too), and
    ``model_copy(update=...)``, which pydantic does not validate, makes its updates
    valid, so a record cannot carry text that fails to encode when it is printed,
    stored or sent (see :mod:`sleuth._valid`).
    """

    @field_validator("*", mode="after")
    @classmethod
    def _valid_strings(cls, value: Any) -> Any:
        return valid_data(value)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, with ``update`` made valid text first."""
        if update:
            update = {key: valid_data(item) for key, item in update.items()}
        return super().model_copy(update=update, deep=deep)


class Quality(StrEnum):
    """How much a source's domain can be trusted, from the rank stage's rule table."""

    PRIMARY = "PRIMARY"
    SECONDARY = "SECONDARY"
    UNVERIFIED = "UNVERIFIED"


class _Record(ValidText):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Plan(_Record):
    """The search queries for one question, original question first."""

    question: str
    queries: list[str]
    planner: str = "rules"
    note: str | None = None


class SearchHit(_Record):
    """One result from one provider for one query."""

    title: str
    url: str
    snippet: str = ""
    rank: int = Field(ge=1, description="1-based position in the provider's answer")
    provider: str
    query: str = ""


class SearchFailure(_Record):
    """A query that one provider could not answer; the run goes on without it."""

    provider: str
    query: str
    reason: str
    #: The provider's host could not be reached (no DNS answer, no connection).
    unreachable: bool = False


class Candidate(_Record):
    """A ranked, de-duplicated URL waiting to be fetched."""

    url: str
    canonical_url: str
    domain: str
    title: str
    snippet: str = ""
    quality: Quality
    quality_score: int
    frequency: int
    score: float
    queries: list[str] = Field(default_factory=list)
    #: The search providers whose hits named it, first finder first.
    providers: list[str] = Field(default_factory=list)


class Page(_Record):
    """A fetched and extracted document."""

    url: str
    final_url: str
    canonical_url: str
    title: str
    text: str
    content_type: str
    status: int
    date: str | None = None
    truncated: bool = False
    engine: str = "httpx"
    elapsed_s: float = 0.0


class FetchFailure(_Record):
    """A URL that could not be turned into text, and why."""

    url: str
    reason: str
    status: int | None = None


class Source(_Record):
    """A page that was fetched and read, numbered as it is cited."""

    id: int
    url: str
    title: str
    quality: Quality
    quality_score: int
    score: float
    passages: list[str]
    summary: str | None = None
    #: The search providers that found it, first finder first (empty: not from a search).
    providers: list[str] = Field(default_factory=list)


class Failure(_Record):
    """Anything the report could not use, shown in its Gaps section."""

    url: str
    reason: str
    stage: Literal["search", "fetch", "read", "llm", "budget"] = "fetch"
    #: The errors behind a reason that sums several up (JSON only; Gaps shows ``reason``).
    detail: str = ""


class Stats(_Record):
    """What a run cost: searches, page fetches, model calls and tokens, time."""

    searches: int = 0
    fetches: int = 0
    elapsed_s: float = 0.0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    cached_searches: int = 0
    cached_fetches: int = 0
    cached_llm_calls: int = 0
    #: Model calls by purpose (``plan``, ``select``, ``summarize``, ``merge``, ``report``,
    #: ``verify``): which calls a run made, the ones that held up its report included.
    model_calls: dict[str, int] = Field(default_factory=dict)


class CitationCheck(_Record):
    """The outcome of checking an LLM-written report's citations against its sources."""

    method: Literal["lexical", "llm"]
    checked: int
    kept: int
    removed: int
    flagged: int = 0
    unknown_citations_removed: int = 0
    invented_urls_removed: int = 0
    #: Sentences removed because every source they cited does not exist.
    invented_claims_removed: int = 0


SpanKind = Literal["search", "download", "extract", "llm"]
SpanOutcome = Literal["ok", "cached", "failed", "cut"]


class Span(_Record):
    """One request of a run as its timeline shows it: a search, a page's download, its
    extraction, or a model call, timed in seconds from the run's start.

    ``queued`` is when it was asked for, ``start`` when it really began (a free
    connection slot, a model slot), ``end`` None while it is still going. ``outcome``:
    ``ok``, ``cached`` (answered by the store, no request), ``failed`` (``detail`` says
    why) or ``cut`` (cancelled: the run did not wait for it). ``name`` is the query, the
    URL asked for, or the model; ``subject`` what a model call was about (the page it
    summarised, the queries whose results it ranked); ``branch`` the deep research's
    node it served.
    """

    id: int
    kind: SpanKind
    stage: str
    name: str
    queued: float
    start: float
    end: float | None = None
    outcome: SpanOutcome = "ok"
    status: int | None = None
    #: Bytes downloaded, characters extracted, hits found, or tokens used.
    size: int | None = None
    detail: str = ""
    final_url: str | None = None
    subject: str | None = None
    branch: str | None = None


class Timeline(_Record):
    """Every span of a run, and its critical path: the chain of spans the slowest cited
    source needed (``critical``: their ids), ``critical_s`` long, of ``wall_s``."""

    spans: list[Span]
    wall_s: float
    critical: list[int] = Field(default_factory=list)
    critical_s: float = 0.0


class Support(_Record):
    """The words of one source that back a sentence: the best-matching span of its text,
    verbatim, and the share of the sentence's key terms it holds (0 to 1)."""

    source: int
    quote: str
    score: float


class Claim(_Record):
    """One cited sentence of a report and what the citation check found.

    ``verdict``: ``kept`` (a cited source supports it), ``unverified`` (it could not be
    judged, and is marked so), ``removed`` (no cited source supports it) or ``invented``
    (it cited only sources that do not exist). ``support`` holds the best span of each
    cited source, best first.
    """

    text: str
    sources: list[int]
    verdict: Literal["kept", "unverified", "removed", "invented"]
    support: list[Support] = Field(default_factory=list)


class TreeNode(_Record):
    """One question of a deep research's tree: a sub-question (level 1) or a follow-up.

    ``id`` is its place in the tree ("2" the second sub-question, "2.1" its first
    follow-up); ``sources`` the ids of the report's sources it read. ``status``: ``done``
    (it read pages), ``empty`` (its searches found nothing new to read), ``failed`` (it
    could not be researched; ``note`` says why) or ``skipped`` (a budget was spent
    before its turn).
    """

    id: str
    parent: str | None = None
    level: int = Field(ge=1)
    question: str
    queries: list[str] = Field(default_factory=list)
    sources: list[int] = Field(default_factory=list)
    status: Literal["done", "empty", "failed", "skipped"] = "done"
    note: str | None = None


class TextSpan(_Record):
    """Where a quoted sentence is in a source's stored text: ``text[start:end]``."""

    source: int
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class AnswerSentence(_Record):
    """One sentence of an answer: as quoted, the sources that say it (the first is the
    one quoted), where it is in each, the score that chose it, and whom an opening
    pronoun means when the answer does not say."""

    text: str
    sources: list[int]
    spans: list[TextSpan] = Field(default_factory=list)
    score: float = 0.0
    #: Whom the sentence's opening "He", "She", "It", "They" (or part of a name: "Bach
    #: is …") means: its page's subject, as the page's first sentence names it in full
    #: ("Richard David Bach") or as its title does; given when the answer holds no
    #: earlier sentence of that page saying so.
    subject: str | None = None


class Answer(_Record):
    """The sentences across the sources that best answer the question, each cited.

    ``tokens`` is the size of the report's Answer section and ``report_tokens`` the
    whole report's (:func:`sleuth.llm.tokens.count_tokens`); ``scored_by`` names the
    scores the sentences were chosen by.
    """

    sentences: list[AnswerSentence] = Field(default_factory=list)
    tokens: int = 0
    report_tokens: int = 0
    scored_by: list[str] = Field(default_factory=list)

    @property
    def words(self) -> int:
        """Words in the answer's sentences."""
        return sum(len(s.text.split()) for s in self.sentences)


class Section(_Record):
    """One section of a deep report: its title, the sources it was written from, and
    (without a model) its own answer."""

    title: str
    sources: list[int] = Field(default_factory=list)
    answer: list[AnswerSentence] = Field(default_factory=list)


class Report(_Record):
    """A finished research: the Markdown plus everything it was built from.

    A deep research (``mode="deep"``) also carries its question ``tree`` and the
    report's ``sections``. ``answer`` holds the sentences that best answer the question
    (the report's ``## Answer`` section when no model wrote it).
    """

    topic: str
    depth: int
    queries: list[str]
    sources: list[Source]
    failures: list[Failure]
    confidence: Literal["HIGH", "MEDIUM", "LOW"]
    confidence_reason: str
    markdown: str
    stats: Stats
    run_id: str | None = None
    planner: str = "rules"
    writer: str = "template"
    stopped_by: str | None = None
    citations: CitationCheck | None = None
    mode: Literal["quick", "deep"] = "quick"
    tree: list[TreeNode] | None = None
    sections: list[Section] | None = None
    answer: Answer | None = None
    #: Every cited sentence with the source words that back it (model-written reports).
    claims: list[Claim] | None = None
    #: What each search, download, extraction and model call took (runs with a record).
    timeline: Timeline | None = None

    def to_json_dict(self) -> dict[str, object]:
        """The ``--format json`` object (the documented, stable shape; a deep research
        adds ``mode``, ``tree`` and ``sections``; ``answer`` is null when none was
        made)."""
        data = self.model_dump(mode="json")
        if self.mode == "quick":
            for key in ("mode", "tree", "sections"):
                data.pop(key, None)
        for key in ("claims", "timeline"):
            if data.get(key) is None:
                data.pop(key, None)
        for source in data["sources"]:
            source.pop("quality_score", None)
            if source.get("summary") is None:
                source.pop("summary", None)
        return data
