"""Stage 6, write: the Markdown report.

Citations are numbered by sleuth from the sources it actually read; page text is
quoted as data (block quotes, footnote markers and Markdown control characters
neutralised), never interpreted.

Without a model the report is a template (:func:`render_markdown`). With one, the
report model writes the body (:func:`llm_body`) in the run's language from the
sources' summaries, with inline ``[n]`` citations; sleuth then adds the title,
the confidence, the sources list and the gaps itself (:func:`render_llm_markdown`),
so a model can neither invent a source nor drop a gap. Both writers share the
confidence rule, the sources list and the gaps. The model's body is citation-checked
(:mod:`sleuth.stages.check`) before it is rendered; the driver calls the check.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from sleuth.errors import LLMAuthError, LLMError, ParseError
from sleuth.lang import Labels
from sleuth.llm.tokens import chunk_text
from sleuth.models import AnswerSentence, Failure, Source
from sleuth.stages.read import NOT_RELEVANT
from sleuth.stages.relevance import OFF_TOPIC

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM

Confidence = Literal["HIGH", "MEDIUM", "LOW"]

_FOOTNOTE = re.compile(r"\[\s*(?:\d+|citation needed|note \d+|[a-z])\s*\]", re.IGNORECASE)
# What Markdown would read as markup inside a line. "|" only matters in a table and "#"
# only where a line starts, so neither is escaped inline: a title keeps its "|".
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>])")
# What Markdown would read as markup where a line starts: a heading, a list, a rule.
_LINE_START = re.compile(r"^(?:(#{1,6}|[-+=])(?=\s|$)|(\d{1,9})([.)])(?=\s|$))")


def confidence(sources: list[Source]) -> tuple[Confidence, str]:
    """grip's rule, counting only sources that were read.

    HIGH: at least 3 sources and mean quality ≥ 3.5; MEDIUM: at least 2 sources, or
    one source of mean quality ≥ 3.0; LOW otherwise (always LOW with no source).
    """
    n = len(sources)
    if n == 0:
        return "LOW", "no source could be read"
    mean = sum(s.quality_score for s in sources) / n
    primary = sum(1 for s in sources if s.quality.value == "PRIMARY")
    detail = f"{n} source{'s' if n != 1 else ''} read, mean quality {mean:.1f}, {primary} primary"
    if n >= 3 and mean >= 3.5:
        return "HIGH", f"{detail}; several authoritative sources"
    if n >= 2 or mean >= 3.0:
        return "MEDIUM", f"{detail}; limited sources or mixed authority"
    return "LOW", f"{detail}; few sources, only unofficial references"


def escape_inline(text: str) -> str:
    """Text safe to put inside Markdown emphasis or a list line."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def escape_line(text: str) -> str:
    """Text safe to start a Markdown line with (a quote, a list item's text)."""
    return _LINE_START.sub(
        lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", escape_inline(text)
    )


def quote(passage: str) -> str:
    """A passage as a Markdown block quote, with footnote markers like [3] removed."""
    return "> " + escape_line(_FOOTNOTE.sub("", passage))


def _findings(sources: list[Source]) -> list[str]:
    if not sources:
        return ["_No source could be read; see Gaps._", ""]
    lines: list[str] = []
    for source in sources:
        lines.append(f"**[{source.id}] {escape_inline(source.title)} ({source.quality.value})**")
        lines.append("")
        body = [source.summary] if source.summary else source.passages
        for passage in body:
            lines.extend([quote(passage), ""])
    return lines


def _gaps(failures: list[Failure], labels: Labels | None = None) -> list[str]:
    if not failures:
        return [(labels or Labels()).no_gaps]
    lines = []
    # The relevance gate's pages are one line: how many were read and left out, and which.
    off = [f for f in failures if f.reason.startswith(OFF_TOPIC) or f.reason == NOT_RELEVANT]
    if off:
        pages = "page was" if len(off) == 1 else "pages were"
        lines.append(
            f"- {len(off)} candidate {pages} read and left out as off-topic: "
            + ", ".join(f"<{f.url}>" for f in off)
        )
    for failure in (f for f in failures if f not in off):
        where = (
            f"<{failure.url}>"
            if failure.url.startswith(("http://", "https://", "file://"))
            else "search"
        )
        lines.append(f"- {where} — {escape_inline(failure.reason)}")
    return lines


def cites(ids: Sequence[int]) -> str:
    """``[1][3]``: the citations of a sentence."""
    return "".join(f"[{n}]" for n in ids)


def answer_lines(answer: Sequence[AnswerSentence]) -> list[str]:
    """An answer as Markdown list items, each sentence quoted and cited; a sentence
    whose opening pronoun the answer does not explain is led by whom it means, in bold
    ("**Ed Roland:** He formed …")."""
    if not answer:
        return ["_No sentence of the sources answers the question directly; see the evidence._"]
    return [
        f"- {f'**{escape_inline(s.subject)}:** ' if s.subject else ''}"
        f"{escape_line(s.text)} {cites(s.sources)}"
        for s in answer
    ]


def render_markdown(
    question: str,
    sources: list[Source],
    failures: list[Failure],
    level: Confidence,
    reason: str,
    answer: Sequence[AnswerSentence] | None = None,
) -> str:
    """The full report: the answer (when there are sources and one was made), the
    findings by source, confidence, sources and gaps."""
    lines = [f"# Research: {escape_inline(question)}", ""]
    if sources and answer is not None:
        lines += ["## Answer", "", *answer_lines(answer), ""]
    lines += ["## Key Findings", ""]
    lines += _findings(sources)
    lines += report_tail(sources, failures, level, reason, Labels())
    return "\n".join(lines)


def _sources(sources: list[Source], labels: Labels) -> list[str]:
    if not sources:
        return [labels.no_sources]
    return [
        f"[{source.id}] [{source.quality.value}] {escape_inline(source.title)} — <{source.url}>"
        f"{_found_by(source, labels)}  "
        for source in sources
    ]


def _found_by(source: Source, labels: Labels) -> str:
    """`` (via arxiv)``: the search providers that found a source ("" when none did)."""
    names = ", ".join(escape_inline(name) for name in source.providers)
    return f" ({labels.via} {names})" if names else ""


def report_tail(
    sources: list[Source], failures: list[Failure], level: Confidence, reason: str, labels: Labels
) -> list[str]:
    """Confidence, Sources and Gaps: the part of every report that sleuth writes itself."""
    return [
        f"## {labels.confidence}: {level} — {reason}",
        "",
        f"## {labels.sources}",
        "",
        *_sources(sources, labels),
        "",
        f"## {labels.gaps}",
        "",
        *_gaps(failures, labels),
        "",
    ]


# -- the LLM writer -------------------------------------------------------------------------
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_REFERENCES = re.compile(
    r"^(?:\*\*)?(?:sources|references|bibliography|works cited|citations|参考来源|参考文献|"
    r"参考资料|來源|参考|來源列表|资料来源|出典|参考文献一覧)(?:\*\*)?\s*:?\s*$",
    re.IGNORECASE,
)
_HTML_TAG = re.compile(r"<(?=[A-Za-z/!?])")
#: Words of the report asked for by --words count for this many tokens of reply.
REPORT_WORDS_FLOOR = 300


def _source_notes(source: Source, first: Sequence[str] = ()) -> str:
    """A source's summary, else its passages, those holding one of ``first`` first."""
    if source.summary:
        return source.summary
    ranked = sorted(source.passages, key=lambda p: not any(f in p for f in first))
    return "\n".join(ranked)


def sources_block(
    sources: list[Source],
    llm: RunLLM,
    budget: int,
    stage: str = "report",
    answer: Sequence[AnswerSentence] = (),
) -> str:
    """The sources as the report prompt shows them, each cut to its share of ``budget``
    (tokens counted for ``stage``'s model: deep mode's prompts show sources too).

    A source's passages that hold a sentence of ``answer`` (the ranked evidence) come
    first, so that what is cut to fit the share is the rest.
    """
    model = llm.model_for(stage)
    heads = [f"[{s.id}] {' '.join(s.title.split())}\nURL: {s.url}" for s in sources]
    share = max(32, (budget - sum(llm.tokens(h, stage) + 4 for h in heads)) // max(1, len(sources)))
    blocks = []
    for head, source in zip(heads, sources, strict=True):
        first = [a.text for a in answer if a.sources and a.sources[0] == source.id]
        notes = _source_notes(source, first).strip()
        if notes and llm.tokens(notes, stage) > share:
            # Only the first chunk is kept: chunk no more than could fill it (8 characters
            # a token at most), or a huge unbroken summary costs minutes to cut.
            notes = chunk_text(notes[: share * 8], share, model=model)[0] + " …"
        blocks.append(f"{head}\n{notes}")
    return "\n\n".join(blocks)


def tidy_body(text: str) -> str:
    """The model's report body without a title line, a sources list or raw HTML.

    sleuth writes the title and the sources list itself; HTML tags are shown as
    text rather than rendered; images become links (which the citation check then
    turns into citations or removes).
    """
    lines = text.strip().split("\n")
    while lines and (not lines[0].strip() or re.match(r"^\s{0,3}#\s", lines[0])):
        lines.pop(0)
    for i, line in enumerate(lines):
        heading = _HEADING.match(line)
        title = heading.group(1) if heading else line.strip()
        if (heading or line.strip().startswith("**")) and _REFERENCES.match(title.strip()):
            lines = lines[:i]
            break
    body = "\n".join(lines).strip()
    body = re.sub(r"!\[([^\]\n]*)\]\(", r"[\1](", body)
    return _HTML_TAG.sub("&lt;", body)


def _report_budget(llm: RunLLM, question: str, words: int) -> tuple[int, int, dict[str, object]]:
    """The report call's room for sources (tokens), its reply's size, its prompt's values."""
    from sleuth.llm.run import reply_tokens

    window = llm.window("report")
    reply_size = reply_tokens(max(words, REPORT_WORDS_FLOOR), window, share=2)
    values: dict[str, object] = {
        "today": llm.today,
        "question": question,
        "words": words,
        "language": llm.language,
    }
    budget = llm.text_budget(
        "report", llm.overhead("report", "report", sources="", **values), reply_size
    )
    return budget, reply_size, values


def evidence_fits(llm: RunLLM, question: str, sources: list[Source], words: int) -> bool:
    """Whether every source's passages fit the report call whole: the writer then reads
    them directly, and no page needs a model summary first."""
    try:
        budget = _report_budget(llm, question, words)[0]
    except LLMError:  # not even the prompt fits: summaries, then the fallback, decide
        return False
    need = sum(
        llm.tokens(f"[{s.id}] {s.title}\nURL: {s.url}\n{_source_notes(s)}", "report") + 4
        for s in sources
    )
    return need <= budget


async def llm_body(
    llm: RunLLM,
    question: str,
    sources: list[Source],
    words: int,
    answer: Sequence[AnswerSentence] = (),
) -> str:
    """The report body written by the report model; ParseError when it wrote nothing."""
    budget, reply_size, values = _report_budget(llm, question, words)
    from sleuth.llm.prompts import render_messages

    sources_text = sources_block(sources, llm, budget, answer=answer)
    # Streamed: the user waits to read this reply, and the page shows it as it is written.
    reply = await llm.chat(
        render_messages("report", sources=sources_text, **values),
        stage="report",
        max_tokens=reply_size,
        stream=True,
    )
    body = tidy_body(reply.answer)
    if not body:
        raise ParseError("the report model's reply was empty")
    if reply.truncated:
        llm.failures.append(
            Failure(
                url="",
                stage="llm",
                reason=f"the report reached the model's output limit "
                f"({reply_size} tokens) and may end abruptly; ask for fewer --words",
            )
        )
    return body


def render_llm_markdown(
    question: str,
    body: str,
    sources: list[Source],
    failures: list[Failure],
    level: Confidence,
    reason: str,
    labels: Labels,
    footer: str,
) -> str:
    """An LLM-written report: sleuth's title, the checked body, sleuth's tail and footer."""
    lines = [f"# {labels.research}: {escape_inline(question)}", "", body.strip(), ""]
    lines += report_tail(sources, failures, level, reason, labels)
    lines += ["---", "", footer, ""]
    return "\n".join(lines)


async def write_body(
    llm: RunLLM,
    question: str,
    sources: list[Source],
    words: int,
    answer: Sequence[AnswerSentence] = (),
) -> str | None:
    """The report body by the report model; None (reason recorded) to use the template.

    The body still holds the model's citations as it wrote them: the check stage
    (:mod:`sleuth.stages.check`) keeps only those that hold, before
    :func:`render_llm_markdown` puts sleuth's title, tail and footer around it.
    """
    try:
        return await llm_body(llm, question, sources, words, answer)
    except LLMAuthError:
        raise
    except LLMError as exc:
        llm.fell_back("report", exc, "the report quotes the sources' passages instead")
        return None
