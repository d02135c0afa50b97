"""Stage 5, read: find the passages of a page that answer the question.

The page is cut into passages (paragraphs, with long ones split at sentence
boundaries and short ones joined), scored with BM25 (``bm25s``) against the
question and the plan's queries, and the best few are kept in page order so the
report quotes what matters rather than a page's first lines.

With a model, :class:`PageReader` also summarises each page against the question
(MetaGPT's WebBrowseAndSummarize, done right): the page is split into chunks that
fit the summary model's context (:func:`~sleuth.llm.tokens.chunk_budget`, never
zero or less), each chunk is summarised, "Not relevant." replies are dropped, and
several chunk notes are merged into one summary. A page with nothing relevant is
not used as a source. When the server says a prompt is too long, that chunk is
split with half the budget and read again (and later pages use the smaller
budget). Pages are summarised as they arrive: :meth:`PageReader.judge` is the
fetch stage's ``accept`` hook, so summaries run while other pages still download.
The passages are kept next to the summary: the citation check reads them.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import re
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from sleuth import timeline
from sleuth.errors import ContextOverflowError, LLMAuthError, LLMError, ParseError
from sleuth.llm.parse import is_not_relevant
from sleuth.llm.tokens import chunk_text
from sleuth.models import Candidate, Page, Source
from sleuth.progress import Event
from sleuth.stages.sentences import Passage, addresses_a_reader, passages

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM

T = TypeVar("T")

MIN_PASSAGE = 80
MAX_PASSAGE = 600
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")

__all__ = [
    "PageReader",
    "addresses_a_reader",
    "best_passages",
    "bm25_scores",
    "passages_within",
    "ranked_passages",
    "split_passages",
]


def _sentences_to_windows(paragraph: str) -> list[str]:
    out: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(paragraph):
        if current and len(current) + len(sentence) + 1 > MAX_PASSAGE:
            out.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        out.append(current)
    # A "sentence" longer than the cap (no punctuation) is cut hard.
    return [piece[i : i + MAX_PASSAGE] for piece in out for i in range(0, len(piece), MAX_PASSAGE)]


def split_passages(text: str, joiner: str = " ") -> list[str]:
    """Paragraph-sized passages of ``text``, each at most MAX_PASSAGE characters.

    Short lines are joined to the next with ``joiner`` (a space: one passage to quote;
    a newline: lines kept, for a model to read a list or a table as such).
    """
    passages: list[str] = []
    pending = ""
    for raw in text.split("\n"):
        paragraph = " ".join(raw.split())
        if not paragraph:
            continue
        if len(paragraph) > MAX_PASSAGE:
            if pending:
                passages.append(pending)
                pending = ""
            passages.extend(_sentences_to_windows(paragraph))
            continue
        if pending and len(pending) + len(joiner) + len(paragraph) > MAX_PASSAGE:
            passages.append(pending)  # short, but joining would cut the paragraph's end
            pending = ""
        pending = f"{pending}{joiner}{paragraph}" if pending else paragraph
        if len(pending) >= MIN_PASSAGE:
            passages.append(pending)
            pending = ""
    if pending:
        passages.append(pending)
    return passages


_BM25S_LOCK = threading.Lock()
_bm25s_module: Any = None


def _bm25s() -> Any:
    """bm25s, imported only when a page is read, and without scipy.

    bm25s imports ``scipy.sparse`` as it loads whenever scipy is installed, only to
    offer an optional backend; sleuth uses its numpy backend, the one the tests run
    on. Where scipy happens to be installed (most data-science environments) but is
    not loaded yet, hiding it for this one import saves about 10 MB per process
    (the LLM run's peak went from 152 to 142 MB) and 0.1 s of start-up.
    """
    global _bm25s_module
    if _bm25s_module is not None:
        return _bm25s_module
    # Under a lock: pages are read in threads, and a second thread must wait for the
    # first one's import, not take the half-initialised module from sys.modules.
    with _BM25S_LOCK:
        if _bm25s_module is None:
            hide = "scipy" not in sys.modules
            if hide:
                sys.modules["scipy"] = None  # type: ignore[assignment]  # `import scipy` fails
            try:
                _bm25s_module = importlib.import_module("bm25s")
                # bm25s sets its own logger to DEBUG as it loads, so an application
                # logging warnings (basicConfig, FastMCP, pytest's capture) got a line
                # per page read: its records follow the application's level instead.
                logger = logging.getLogger("bm25s")
                if logger.level == logging.DEBUG:
                    logger.setLevel(logging.NOTSET)
            finally:
                if hide and sys.modules.get("scipy", 0) is None:
                    del sys.modules["scipy"]
        return _bm25s_module


def _tokens(texts: list[str]) -> list[list[str]]:
    bm25s = _bm25s()
    tokenized = bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)
    return [list(t) for t in tokenized]


def bm25_scores(texts: list[str], queries: list[str]) -> list[float]:
    """The BM25 score of each of ``texts`` against the terms of ``queries`` (0 when none)."""
    query = sorted({tok for toks in _tokens(queries) for tok in toks})
    if not query or not texts:
        return [0.0] * len(texts)
    retriever = _bm25s().BM25()
    retriever.index(_tokens(texts), show_progress=False)
    scores = retriever.get_scores(query)
    return [float(scores[i]) for i in range(len(texts))]


def _by_relevance(passages: list[str], queries: list[str]) -> list[tuple[float, int]]:
    """(BM25 score against ``queries``, index) of every passage, most relevant first."""
    scores = bm25_scores(passages, queries)
    return sorted(((score, i) for i, score in enumerate(scores)), key=lambda p: (-p[0], p[1]))


def ranked_passages(text: str, queries: list[str], k: int) -> list[Passage]:
    """The ``k`` passages of ``text`` most relevant to ``queries``, in page order.

    Passages are whole sentences of one paragraph (:func:`sleuth.stages.sentences.passages`:
    no reference, template, heading, navigation or cookie lines, nothing that addresses
    the reader or an AI). When no passage shares a term with the queries, the page's
    opening passages are returned instead, since the page was chosen by a search engine
    for this question.
    """
    found = passages(text, MAX_PASSAGE)
    if len(found) <= k:
        return found
    chosen = [i for score, i in _by_relevance([p.text for p in found], queries)[:k] if score > 0]
    if not chosen:
        return found[:k]
    return [found[i] for i in sorted(chosen)]


def best_passages(text: str, queries: list[str], k: int) -> list[str]:
    """The text of :func:`ranked_passages`: what a source quotes."""
    return [p.text for p in ranked_passages(text, queries, k)]


def passages_within(text: str, queries: list[str], budget: int, count: Callable[[str], int]) -> str:
    """``text`` itself if it fits ``budget`` tokens, else its most relevant passages that do.

    The passages are kept in page order, their lines as they were, with "[…]" where
    text was left out, so a model reads them as excerpts. Passages that share no term
    with ``queries`` fill what is left of the budget in page order.
    """
    if count(text) <= budget:
        return text
    passages = split_passages(text, "\n")
    chosen: list[int] = []
    used = 0
    for _score, i in _by_relevance(passages, queries):
        cost = count(passages[i]) + 2
        if used + cost <= budget:
            chosen.append(i)
            used += cost
    parts: list[str] = []
    previous = -1
    for i in sorted(chosen):
        if i != previous + 1:
            parts.append("[…]")
        parts.append(passages[i])
        previous = i
    if previous < len(passages) - 1:
        parts.append("[…]")
    return "\n".join(parts)


#: Words asked of the model per page summary (and per chunk note).
SUMMARY_WORDS = 250
#: Rounds of merging notes in groups before the rest is cut to fit.
MERGE_ROUNDS = 3
#: Halving the chunk budget stops here: a prompt this small that still overflows
#: means the context is too small for the prompt itself.
MIN_CHUNK_BUDGET = 128
NOT_RELEVANT = "not relevant to the question (summary model)"


async def gather_or_cancel(aws: Iterable[Awaitable[T]]) -> list[T]:
    """Run awaitables concurrently; on the first error cancel the rest, then raise it."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class PageReader:
    """Summaries of the pages of one run, made with the summary model as pages arrive."""

    def __init__(self, llm: RunLLM, question: str, read_tokens: int = 0) -> None:
        self.llm = llm
        self.question = question
        #: A page longer than this is read as its most relevant passages (0: whole).
        self.read_tokens = read_tokens
        self.summaries: dict[str, str] = {}
        self.judged: set[str] = set()
        self.cap: int | None = None  # chunk budget learned from a context overflow

    async def judge(self, candidate: Candidate, page: Page) -> str | None:
        """The fetch stage's ``accept`` hook: None to use the page, else why it is dropped.

        Model failures never drop a page: it is then quoted by its passages.
        """
        self.judged.add(candidate.canonical_url)
        if not self.llm.usable:
            return None
        try:
            with timeline.about(candidate.url):  # the timeline ties the calls to the page
                summary = await self.summarise(page)
        except LLMAuthError:
            raise
        except LLMError as exc:
            self.llm.fell_back("summarize", exc, "the page's passages are quoted instead")
            return None
        if summary is None:
            self.llm.emit(
                Event(
                    "read",
                    f"not relevant: {page.title or page.url}",
                    {"url": candidate.url, "relevant": False},
                )
            )
            return NOT_RELEVANT
        self.summaries[candidate.canonical_url] = summary
        self.llm.emit(
            Event(
                "read",
                f"summarised {page.title or page.url}",
                {"url": candidate.url, "words": len(summary.split())},
            )
        )
        return None

    async def read_all(
        self, pages: list[tuple[Candidate, Page]]
    ) -> tuple[list[tuple[Candidate, Page]], list[tuple[Candidate, str]]]:
        """Judge the pages not judged yet (concurrently); the kept pages and the dropped."""
        todo = [(c, p) for c, p in pages if c.canonical_url not in self.judged]
        verdicts = dict(
            zip(
                [c.canonical_url for c, _ in todo],
                await gather_or_cancel(self.judge(c, p) for c, p in todo),
                strict=True,
            )
        )
        kept = [(c, p) for c, p in pages if verdicts.get(c.canonical_url) is None]
        dropped = [(c, why) for c, _ in pages if (why := verdicts.get(c.canonical_url))]
        return kept, dropped

    def apply(self, sources: list[Source], pages: list[tuple[Candidate, Page]]) -> list[Source]:
        """``sources`` (numbered from ``pages``, in order) with their summaries filled in."""
        return [
            source.model_copy(update={"summary": self.summaries.get(c.canonical_url)})
            for source, (c, _page) in zip(sources, pages, strict=True)
        ]

    # -- summarising ---------------------------------------------------------------------
    def _values(self, page: Page) -> dict[str, object]:
        return {
            "question": self.question,
            "title": page.title or "(untitled)",
            "url": page.final_url or page.url,
            "words": SUMMARY_WORDS,
            "language": self.llm.language,
        }

    async def summarise(self, page: Page) -> str | None:
        """The page's summary against the question; None when nothing in it is relevant."""
        from sleuth.llm.run import reply_tokens

        llm = self.llm
        reply = reply_tokens(SUMMARY_WORDS, llm.window("summarize"))
        values = self._values(page)
        budget = llm.text_budget(
            "summarize", llm.overhead("summarize", "summarize", page="", **values), reply
        )
        if self.cap is not None:
            budget = min(budget, self.cap)
        text = page.text
        if self.read_tokens:
            # Tokens buy evidence: a long page's passages about the question, not all of it.
            # In a thread: counting a page's tokens, and the first long page's bm25s
            # import (~0.2 s), would otherwise hold up the pages still downloading.
            text = await asyncio.to_thread(
                passages_within,
                text,
                [self.question],
                self.read_tokens,
                lambda t: llm.tokens(t, "summarize"),
            )
        chunks = chunk_text(text, budget, model=llm.model_for("summarize"))
        notes = [
            note
            for found in await gather_or_cancel(
                self._chunk(c, budget, reply, values) for c in chunks
            )
            for note in found
        ]
        if not notes:
            return None
        return await self._merge(page, notes)

    async def _chunk(
        self, text: str, budget: int, reply: int, values: dict[str, object]
    ) -> list[str]:
        """Notes on one chunk ([] if not relevant); halves the chunk on a context overflow."""
        try:
            answer = (
                await self.llm.ask(
                    "summarize", stage="summarize", max_tokens=reply, page=text, **values
                )
            ).answer
        except ContextOverflowError:
            half = budget // 2
            pieces = (
                chunk_text(text, half, model=self.llm.model_for("summarize"))
                if half >= MIN_CHUNK_BUDGET
                else []
            )
            if len(pieces) < 2:
                raise
            self.cap = min(self.cap or half, half)
            self.llm.info(
                f"the summary model's context is smaller than sleuth assumed; "
                f"reading in chunks of {half} tokens",
                chunk_tokens=half,
            )
            found = await gather_or_cancel(self._chunk(p, half, reply, values) for p in pieces)
            return [note for notes in found for note in notes]
        if not answer.strip():
            raise ParseError("the summary model's reply was empty")
        return [] if is_not_relevant(answer) else [answer.strip()]

    async def _merge(self, page: Page, notes: list[str]) -> str | None:
        """One summary from several notes, merging in groups while they do not fit."""
        from sleuth.llm.run import reply_tokens

        llm = self.llm
        values = self._values(page)
        reply = reply_tokens(SUMMARY_WORDS, llm.window("merge"))
        budget = llm.text_budget("merge", llm.overhead("merge", "merge", notes="", **values), reply)
        model = llm.model_for("merge")
        for _round in range(MERGE_ROUNDS + 1):
            if len(notes) == 1:
                return notes[0]
            joined = "\n\n".join(notes)
            if llm.tokens(joined, "merge") <= budget or _round == MERGE_ROUNDS:
                text = chunk_text(joined, budget, model=model)[0]
                answer = (
                    await llm.ask("merge", stage="merge", max_tokens=reply, notes=text, **values)
                ).answer.strip()
                if not answer:
                    raise ParseError("the summary model's merge reply was empty")
                return None if is_not_relevant(answer) else answer
            groups = chunk_text(joined, budget, model=model)
            merged = await gather_or_cancel(
                llm.ask("merge", stage="merge", max_tokens=reply, notes=g, **values) for g in groups
            )
            notes = [
                m.answer.strip()
                for m in merged
                if m.answer.strip() and not is_not_relevant(m.answer)
            ]
            if not notes:
                return None
        return notes[0]
