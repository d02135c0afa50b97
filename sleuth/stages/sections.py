"""Deep research's writer: an outline, sections written in parallel, each checked.

The outline (:func:`llm_outline`, :func:`fallback_outline`) is
:mod:`sleuth.stages.outline`'s, re-exported here. With a model (:func:`llm_outline`,
:func:`write_section`, :func:`write_frame`):

1. the outline: sections that answer the question in a reader's order, each with a scope
   and the sources it needs (not one section per branch by rote; every source is given
   to some section);
2. every section is written at once, from its own sources only, told the other sections'
   scopes so as not to make their points; its citations are checked
   (:func:`~sleuth.stages.check.check_citations`) against those sources as it comes in:
   a number that is not one of them is removed, an invented URL is removed, an
   unsupported sentence is removed or marked as in a quick report;
3. the introduction and the conclusion are written (and checked) alongside the
   sections, from the same learnings;
4. :func:`drop_repeats` removes from a later section any sentence that makes a point an
   earlier one made (the same content words, give or take a quarter);
5. :func:`render_deep` puts the title, a table of contents, the sections, and sleuth's
   own confidence, sources and gaps together, with one numbering of sources.

Without a model, :func:`render_tree_template` groups the quoted passages by sub-question
(follow-ups under the question that led to them), with the same table of contents.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sleuth._slug import Slugger, heading_text
from sleuth.errors import ParseError
from sleuth.lang import Labels
from sleuth.llm.parse import strip_think
from sleuth.models import AnswerSentence, CitationCheck, Claim, Failure, Source
from sleuth.stages.check import Evidence, check_citations, key_terms, split_sentences
from sleuth.stages.outline import (
    Planned,
    fallback_outline,
    give_every_source,
    learnings_block,
    llm_outline,
    section_count,
)
from sleuth.stages.write import (
    Confidence,
    answer_lines,
    escape_inline,
    quote,
    render_markdown,
    report_tail,
    sources_block,
    tidy_body,
)

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM

__all__ = [
    "Planned",
    "Written",
    "drop_repeats",
    "fallback_outline",
    "give_every_source",
    "llm_outline",
    "merge_checks",
    "render_deep",
    "render_tree_template",
    "section_count",
    "section_title",
    "write_frame",
    "write_section",
]

#: A later sentence sharing this share of its content words with an earlier one repeats it.
REPEAT_SHARE = 0.75
#: Sentences shorter than this (content words) are never taken for repeats.
REPEAT_MIN_TERMS = 5
_INTRO = re.compile(r"^\s*\[?\s*INTRODUCTION\s*\]?\s*:?\s*$", re.IGNORECASE | re.MULTILINE)
_CONCLUSION = re.compile(r"^\s*\[?\s*CONCLUSION\s*\]?\s*:?\s*$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class Written:
    """A section as it goes into the report: checked body, and what the check did."""

    planned: Planned
    body: str
    check: CitationCheck | None = None
    #: Its cited sentences with their verdicts and source spans.
    claims: tuple[Claim, ...] = ()


# -- writing -----------------------------------------------------------------------------
def _others(planned: Planned, outline: Sequence[Planned]) -> str:
    rest = [p for p in outline if p is not planned]
    return (
        "\n".join(f"- {p.title}" + (f": {p.covers}" if p.covers else "") for p in rest) or "(none)"
    )


async def write_section(
    llm: RunLLM,
    question: str,
    planned: Planned,
    outline: Sequence[Planned],
    sources: Sequence[Source],
    words: int,
    evidence: tuple[dict[str, int], dict[int, Evidence]],
    method: str = "lexical",
) -> Written:
    """One section from its own ``sources``, its citations checked against them.

    ``evidence`` is the run's (URL → id, id → text) for the check; only this section's
    source ids count as citations. Raises the model's errors (the driver falls back).
    """
    from sleuth.llm.run import reply_tokens

    reply_size = reply_tokens(max(words, 150), llm.window("section"), share=2)
    values: dict[str, object] = {
        "today": llm.today,
        "question": question,
        "title": planned.title,
        "covers": planned.covers or "-",
        "others": _others(planned, outline),
        "words": words,
        "language": llm.language,
    }
    budget = llm.text_budget(
        "section", llm.overhead("section", "section", sources="", **values), reply_size
    )
    answer = await llm.ask(
        "section",
        stage="section",
        max_tokens=reply_size,
        sources=sources_block(list(sources), llm, budget, stage="section"),
        **values,
    )
    body = _without_heading(tidy_body(answer.answer), planned.title)
    if not body:
        raise ParseError("the model's section was empty")
    return await _checked(planned, body, {s.id for s in sources}, evidence, method, llm)


async def _checked(
    planned: Planned,
    body: str,
    ids: set[int],
    evidence: tuple[dict[str, int], dict[int, Evidence]],
    method: str,
    llm: RunLLM,
) -> Written:
    urls, texts = evidence
    claims: list[Claim] = []
    checked, check = await check_citations(
        body,
        ids=ids,
        urls=urls,
        evidence={n: texts[n] for n in ids if n in texts},
        method=method,
        llm=llm,
        language=llm.language,
        claims=claims,
    )
    return Written(planned, checked, check, tuple(claims))


def _without_heading(body: str, title: str) -> str:
    """The body without a first line repeating the section's title as a heading."""
    lines = body.split("\n")
    if (
        lines
        and re.match(r"^\s{0,3}#{1,6}\s", lines[0])
        and lines[0].lstrip("# ").strip().lower() == title.strip().lower()
    ):
        lines = lines[1:]
    # A section's own "##" headings would sit beside the report's: make them "###".
    return "\n".join(re.sub(r"^(\s{0,3})#{1,2}(\s)", r"\1###\2", line) for line in lines).strip()


async def write_frame(
    llm: RunLLM,
    question: str,
    outline: Sequence[Planned],
    learnings: Sequence[tuple[str, Sequence[int]]],
    words: int,
    evidence: tuple[dict[str, int], dict[int, Evidence]],
    method: str = "lexical",
) -> tuple[Written, Written]:
    """The introduction and the conclusion, checked against the sources they cite."""
    from sleuth.llm.run import reply_tokens

    reply_size = reply_tokens(2 * words, llm.window("frame"), share=2)
    values: dict[str, object] = {
        "question": question,
        "words": words,
        "language": llm.language,
        "outline": "\n".join(
            f"- {p.title}" + (f": {p.covers}" if p.covers else "") for p in outline
        ),
    }
    budget = llm.text_budget(
        "frame", llm.overhead("frame", "frame", learnings="", **values), reply_size
    )
    answer = await llm.ask(
        "frame",
        stage="frame",
        max_tokens=reply_size,
        learnings=learnings_block(learnings, llm, budget, "frame"),
        **values,
    )
    intro, conclusion = _split_frame(answer.answer)
    ids = set(evidence[1])
    labels = Labels()
    return (
        await _checked(Planned(labels.introduction, "", ()), intro, ids, evidence, method, llm),
        await _checked(Planned(labels.conclusion, "", ()), conclusion, ids, evidence, method, llm),
    )


def _split_frame(text: str) -> tuple[str, str]:
    """(introduction, conclusion) of a frame reply; ParseError when there is no text."""
    text = strip_think(text).strip()
    intro_at, end_at = _INTRO.search(text), _CONCLUSION.search(text)
    if end_at is None:
        paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
        if len(paragraphs) < 2:
            raise ParseError(
                "the model's introduction and conclusion were not marked", excerpt=text[:80]
            )
        intro, conclusion = paragraphs[0], "\n\n".join(paragraphs[1:])
    else:
        start = intro_at.end() if intro_at is not None and intro_at.start() < end_at.start() else 0
        intro, conclusion = text[start : end_at.start()], text[end_at.end() :]
    intro, conclusion = tidy_body(intro), tidy_body(conclusion)
    if not intro or not conclusion:
        raise ParseError("the model's introduction or conclusion was empty", excerpt=text[:80])
    return intro, conclusion


# -- no repeats --------------------------------------------------------------------------
def _repeats(terms: set[str], seen: list[set[str]]) -> bool:
    return len(terms) >= REPEAT_MIN_TERMS and any(
        len(terms & other) >= REPEAT_SHARE * len(terms | other) for other in seen
    )


def drop_repeats(bodies: Sequence[str]) -> tuple[list[str], int]:
    """The bodies with every sentence that repeats an earlier one removed, and how many.

    Sentences are compared by content words (:func:`~sleuth.stages.check.key_terms`);
    headings and code are kept as they are.
    """
    seen: list[set[str]] = []
    out, dropped = [], 0
    for body in bodies:
        lines, fenced = [], False
        for line in body.split("\n"):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            if fenced or not line.strip() or line.lstrip().startswith(("#", "|", "```")):
                lines.append(line)
                continue
            kept = []
            for sentence in split_sentences(line):
                terms, figures = key_terms(re.sub(r"\[\d+\]", " ", sentence))
                words = terms | figures
                if _repeats(words, seen):
                    dropped += 1
                    continue
                if len(words) >= REPEAT_MIN_TERMS:
                    seen.append(words)
                kept.append(sentence)
            text = "".join(kept).rstrip()
            if text.strip() and not re.fullmatch(r"\s*(?:[-*+•]|\d{1,3}[.)])\s*", text):
                lines.append(text)
        out.append(re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip())
    return out, dropped


def merge_checks(checks: Sequence[CitationCheck]) -> CitationCheck:
    """One :class:`CitationCheck` for the whole report: the sections' counts added up."""
    return CitationCheck(
        method="llm" if any(c.method == "llm" for c in checks) else "lexical",
        checked=sum(c.checked for c in checks),
        kept=sum(c.kept for c in checks),
        removed=sum(c.removed for c in checks),
        flagged=sum(c.flagged for c in checks),
        unknown_citations_removed=sum(c.unknown_citations_removed for c in checks),
        invented_urls_removed=sum(c.invented_urls_removed for c in checks),
    )


# -- the Markdown ------------------------------------------------------------------------
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def _headings(body: str) -> list[tuple[int, str]]:
    """The (level, Markdown text) of each heading of ``body``, outside code blocks."""
    found, fenced = [], False
    for line in body.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match:
            found.append((len(match.group(1)), match.group(2)))
    return found


def _with_contents(
    heading: str,
    parts: Sequence[tuple[str, str]],
    labels: Labels,
    lead: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """The title, the ``lead`` parts (an answer), a table of contents, then each (title,
    body) part as a "##" section.

    The contents link each part, and each "###" subsection within it, by the id GitHub
    gives its heading (:mod:`sleuth._slug`; sleuth's HTML gives the same), counting every
    heading before it, so the links work wherever the Markdown is shown.
    """
    slugs = Slugger()
    slugs.slug(heading_text(heading.lstrip("# ")))
    lines = [heading, ""]
    for title, body in lead:
        slugs.slug(heading_text(escape_inline(title)))
        lines += [f"## {escape_inline(title)}", "", body.strip(), ""]
    slugs.slug(labels.contents)
    titles = [escape_inline(title) for title, _ in parts]
    entries: list[str] = []
    for n, (title, (_, body)) in enumerate(zip(titles, parts, strict=True), start=1):
        entries.append(f"{n}. [{title}](#{slugs.slug(heading_text(title))})")
        for level, text in _headings(body):
            anchor = slugs.slug(heading_text(text))
            if level == 3:
                entries.append(f"   - [{text}](#{anchor})")
    lines += [f"## {labels.contents}", "", *entries, ""]
    for title, (_, body) in zip(titles, parts, strict=True):
        lines += [f"## {title}", "", body.strip(), ""]
    return lines


def render_deep(
    question: str,
    parts: Sequence[tuple[str, str]],
    sources: list[Source],
    failures: list[Failure],
    level: Confidence,
    reason: str,
    labels: Labels,
    footer: str,
) -> str:
    """A model-written deep report: title, contents, the parts, sleuth's tail and footer."""
    lines = _with_contents(f"# {labels.research}: {escape_inline(question)}", parts, labels)
    lines += report_tail(sources, failures, level, reason, labels)
    lines += ["---", "", footer, ""]
    return "\n".join(lines)


def _quoted(sources: Sequence[Source]) -> list[str]:
    lines: list[str] = []
    for source in sources:
        lines += [f"**[{source.id}] {escape_inline(source.title)} ({source.quality.value})**", ""]
        for passage in [source.summary] if source.summary else source.passages:
            lines += [quote(passage), ""]
    return lines


def section_title(question: str, topic: str) -> str:
    """A section's title from the question it researched: the question as asked is
    "The question as asked"; a lower-case start (a search string) gets its capital."""
    text = " ".join(question.split())
    if text.rstrip("?").casefold() == " ".join(topic.split()).rstrip("?").casefold():
        return "The question as asked"
    return text[:1].upper() + text[1:]


def render_tree_template(
    question: str,
    groups: Sequence[tuple[str, list[Source], list[tuple[str, list[Source]]]]],
    intro: str,
    sources: list[Source],
    failures: list[Failure],
    level: Confidence,
    reason: str,
    answer: Sequence[AnswerSentence] | None = None,
    section_answers: Sequence[Sequence[AnswerSentence]] = (),
) -> str:
    """The deep report without a model: the ``answer`` first, then per sub-question its
    own answer (``section_answers``, in the order of ``groups``), its sources' quoted
    passages, then each follow-up it led to (``groups``: title, sources, [(follow-up,
    sources)])."""
    if not sources:
        return render_markdown(question, sources, failures, level, reason)
    labels = Labels()
    parts = [(labels.introduction, intro)]
    for n, (title, own, follow_ups) in enumerate(groups):
        body: list[str] = []
        if n < len(section_answers) and section_answers[n]:
            body += ["**Answer:**", "", *answer_lines(section_answers[n]), ""]
        body += _quoted(own)
        for follow, found in follow_ups:
            if found:
                body += [
                    f"### {escape_inline(section_title(follow, question))}",
                    "",
                    *_quoted(found),
                ]
        if any(line.strip() for line in body):
            parts.append((section_title(title, question), "\n".join(body)))
    lead = [("Answer", "\n".join(answer_lines(answer)))] if answer is not None else []
    lines = _with_contents(f"# Research: {escape_inline(question)}", parts, labels, lead)
    return "\n".join(lines + report_tail(sources, failures, level, reason, labels))
