"""The report of a deep research, written from its tree (:mod:`sleuth.pipeline.deep.tree`).

The sources of every branch get one numbering, in the tree's order (level by level, each
branch's pages in its rank order). With a model, the sectioned writer of
:mod:`sleuth.stages.sections` plans an outline from the branches' learnings, writes
every section and the introduction and conclusion at once, each checked against its
own sources, and removes what one section repeats of another. Without one, the report
quotes each source's passages under the sub-question that read it, its follow-ups
beneath. Either way sleuth writes the title, the table of contents, the confidence, the
sources and the gaps itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from sleuth.errors import LLMAuthError, LLMError
from sleuth.lang import labels_for
from sleuth.models import (
    Answer,
    AnswerSentence,
    Candidate,
    CitationCheck,
    Claim,
    Failure,
    Page,
    Report,
    Section,
    Source,
)
from sleuth.pipeline.cached_gaps import cached_gaps
from sleuth.pipeline.steps import run_stats, sized
from sleuth.progress import Event
from sleuth.stages.answer import answer_tree
from sleuth.stages.check import evidence_of, footer, removed_section, strip_urls
from sleuth.stages.numbering import Renumbering, reading_order
from sleuth.stages.plan import dedupe
from sleuth.stages.sections import (
    Planned,
    Written,
    drop_repeats,
    fallback_outline,
    give_every_source,
    llm_outline,
    merge_checks,
    render_deep,
    render_tree_template,
    section_count,
    section_title,
    write_frame,
    write_section,
)
from sleuth.stages.write import Confidence, confidence
from sleuth.urls import canonicalize

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM
    from sleuth.pipeline.context import RunContext
    from sleuth.pipeline.deep.tree import Branch, Tree

__all__ = ["number_sources", "write_report"]


def number_sources(
    branches: Sequence[Branch],
) -> tuple[list[Source], list[tuple[Candidate, Page]], dict[str, list[int]]]:
    """The tree's sources numbered 1… in tree order, their pages, and each branch's ids."""
    sources: list[Source] = []
    pages: list[tuple[Candidate, Page]] = []
    ids: dict[str, list[int]] = {}
    seen: dict[str, int] = {}
    for branch in branches:
        mine = ids.setdefault(branch.id, [])
        by_url = {
            page.final_url or candidate.url: (candidate, page) for candidate, page in branch.pages
        }
        for source in branch.sources:
            key = canonicalize(source.url)
            if key not in seen:
                seen[key] = len(sources) + 1
                sources.append(source.model_copy(update={"id": seen[key]}))
                if source.url in by_url:
                    pages.append(by_url[source.url])
            mine.append(seen[key])
    return sources, pages, ids


def _intro(tree: Tree, sources: list[Source]) -> str:
    subs = sum(1 for b in tree.branches if b.level == 1 and b.status != "skipped")
    follow = sum(1 for b in tree.branches if b.level > 1 and b.status != "skipped")
    levels = max((b.level for b in tree.branches if b.status != "skipped"), default=1)
    return (
        f"sleuth explored this question as {subs} sub-question{'s' if subs != 1 else ''}"
        f" and {follow} follow-up question{'s' if follow != 1 else ''} over {levels} "
        f"level{'s' if levels != 1 else ''}, and read {len(sources)} sources. Without a "
        "model, each section quotes what its sources say about its question; the "
        "follow-ups are the names and titles those pages gave, searched in turn."
    )


def _unique(failures: list[Failure]) -> list[Failure]:
    """The failures, each once (branches meet the same budget and the same sites)."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for failure in failures:
        key = (failure.url, failure.reason, failure.stage)
        if key not in seen:
            seen.add(key)
            out.append(failure)
    return out


async def write_report(ctx: RunContext, tree: Tree) -> Report:
    """The deep report of ``tree`` (explored in the run ``ctx``), with its tree and sections.

    The answers (the whole question's, and each sub-question's) are chosen first, so that
    the model's writer sees the passages they quote; then every number is given in the
    order a reader meets it (:mod:`sleuth.stages.numbering`).
    """
    sources, pages, ids = number_sources(tree.branches)
    groups_ids = [(b.question, _group_ids(b, rest, ids)) for b, rest in tree.groups()]
    sources, answer, section_answers = await asyncio.to_thread(
        answer_tree, ctx.topic, sources, pages, groups_ids
    )
    level, reason = confidence(sources)
    check: CitationCheck | None = None
    claims: list[Claim] | None = None
    written = None
    if ctx.llm is not None and sources:
        written = await _written(ctx, tree, ctx.llm, sources, pages, ids)
    if written is not None:
        parts, sections, check, claims = written
        # Numbered as the reader meets them (the tree's order was the writer's).
        order = Renumbering(reading_order([body for _, body in parts], [s.id for s in sources]))
        parts = [(title, order.text(body)) for title, body in parts]
        sections, claims = order.sections(sections), order.claims(claims)
    else:
        order = Renumbering(
            reading_order(_met(tree, ids, answer, section_answers), [s.id for s in sources])
        )
    sources = order.sources(sources)
    ids = {node: order.ids(mine) for node, mine in ids.items()}
    answer = answer.model_copy(update={"sentences": order.answer(answer.sentences)})
    section_answers = [order.answer(said) for said in section_answers]
    ctx.record_stage("sources", sources)
    ctx.tally.failures += await cached_gaps(ctx, [s.url for s in sources])
    failures = _unique(ctx.tally.failures)
    if written is not None:
        assert ctx.llm is not None and check is not None and claims is not None
        language = ctx.llm.language
        markdown = render_deep(
            ctx.topic,
            parts,
            sources,
            failures,
            level,
            reason,
            labels_for(language),
            footer(check, language),
        )
        markdown = "\n".join([markdown, *removed_section(claims, language)])
    else:
        markdown, sections = _template(
            ctx, tree, sources, ids, failures, (level, reason), answer, section_answers
        )
    report = _report(
        ctx,
        tree,
        sources=sources,
        ids=ids,
        failures=failures,
        level=level,
        reason=reason,
        markdown=markdown,
        sections=sections,
        check=check,
    )
    report = report.model_copy(update={"answer": sized(answer, markdown), "claims": claims})
    ctx.emit(
        Event(
            "report",
            f"report with {len(sources)} sources in {len(sections or [])} sections",
            {"confidence": level},
        )
    )
    return report


def _group_ids(branch: Branch, rest: Sequence[Branch], ids: dict[str, list[int]]) -> list[int]:
    return [n for b in (branch, *rest) for n in ids.get(b.id, [])]


def _met(
    tree: Tree,
    ids: dict[str, list[int]],
    answer: Answer,
    section_answers: Sequence[Sequence[AnswerSentence]],
) -> list[str]:
    """The citations of the report without a model's sections, as a reader meets them:
    the answer, then each sub-question's answer, its sources and its follow-ups' sources."""
    met = [f"[{n}]" for a in answer.sentences for n in a.sources]
    for (b, rest), said in zip(tree.groups(), section_answers, strict=True):
        met += [f"[{n}]" for a in said for n in a.sources]
        met += [f"[{n}]" for x in (b, *rest) for n in ids[x.id]]
    return met


def _template(
    ctx: RunContext,
    tree: Tree,
    sources: list[Source],
    ids: dict[str, list[int]],
    failures: list[Failure],
    confident: tuple[Confidence, str],
    answer: Answer,
    section_answers: Sequence[Sequence[AnswerSentence]],
) -> tuple[str, list[Section]]:
    """The report without a model's sections: the answer, then each sub-question's own
    answer and its sources quoted, its follow-ups beneath; and its sections."""
    # Headings from the tree's questions (a model's, or names found on pages): no URL.
    groups = [
        (
            strip_urls(b.question)[0],
            [sources[n - 1] for n in ids[b.id]],
            [(strip_urls(d.question)[0], [sources[n - 1] for n in ids[d.id]]) for d in rest],
        )
        for b, rest in tree.groups()
    ]
    sections = [
        Section(
            title=section_title(title, ctx.topic),
            sources=[s.id for s in own] + [s.id for _, found in follow for s in found],
            answer=list(said),
        )
        for (title, own, follow), said in zip(groups, section_answers, strict=True)
    ]
    markdown = render_tree_template(
        ctx.topic,
        groups,
        _intro(tree, sources),
        sources,
        failures,
        *confident,
        answer.sentences,
        section_answers,
    )
    return markdown, sections


def _report(
    ctx: RunContext,
    tree: Tree,
    *,
    sources: list[Source],
    ids: dict[str, list[int]],
    failures: list[Failure],
    level: Confidence,
    reason: str,
    markdown: str,
    sections: list[Section] | None,
    check: CitationCheck | None,
) -> Report:
    """The report record around ``markdown``: queries, stats, the tree and its sections."""
    llm = ctx.llm
    return Report(
        topic=ctx.topic,
        depth=ctx.settings.depth,
        queries=dedupe([q for b in tree.branches if b.status != "skipped" for q in b.queries]),
        sources=sources,
        failures=failures,
        confidence=level,
        confidence_reason=reason,
        markdown=markdown,
        stats=run_stats(ctx, tree.fetches, llm),
        run_id=ctx.run_id,
        planner=tree.planner,
        stopped_by=tree.stopped_by or (llm.cut_by if llm is not None else None),
        writer="llm" if check is not None else "template",
        citations=check,
        mode="deep",
        tree=[b.node(ids.get(b.id, [])) for b in tree.branches],
        sections=sections,
    )


Parts = list[tuple[str, str]]


async def _written(
    ctx: RunContext,
    tree: Tree,
    llm: RunLLM,
    sources: list[Source],
    pages: list[tuple[Candidate, Page]],
    ids: dict[str, list[int]],
) -> tuple[Parts, list[Section], CitationCheck, list[Claim]] | None:
    """The model's sections, introduction and conclusion, checked, with their claims; None
    if none was written.

    Written all at once (:func:`_write`), sorted into what was written and what fell back
    (:func:`_triage`), put together (:func:`_assemble`).
    """
    by_url = {canonicalize(s.url): s.id for s in sources}
    learnings = [
        (item.text, [by_url[u] for u in item.urls if u in by_url])
        for b in tree.branches
        for item in b.learnings
    ]
    learnings = [(text, cited) for text, cited in learnings if cited]
    related = {n: set(mine) for mine in ids.values() for n in mine}
    all_ids = [s.id for s in sources]
    outline, removed = _plain_titles(
        await _outline(ctx, tree, llm, learnings, all_ids, ids, related)
    )
    results = await _write(ctx, llm, outline, learnings, sources, pages)
    bodies, frame = _triage(llm, outline, results, sources)
    assembled = _assemble(llm, bodies, frame)
    if assembled is None:
        return None
    parts, sections, check, claims = assembled
    urls = check.invented_urls_removed + removed
    return parts, sections, check.model_copy(update={"invented_urls_removed": urls}), claims


async def _write(
    ctx: RunContext,
    llm: RunLLM,
    outline: list[Planned],
    learnings: list[tuple[str, list[int]]],
    sources: list[Source],
    pages: list[tuple[Candidate, Page]],
) -> list[object]:
    """Every section of ``outline``, then the frame (introduction and conclusion), written
    at once; each a result or the exception that ended it."""
    settings = ctx.settings
    frame_words = max(80, settings.words // 10)
    words = max(150, (settings.words - 2 * frame_words) // max(1, len(outline)))
    evidence = evidence_of(sources, pages)
    method = settings.verify
    return await asyncio.gather(
        *(
            write_section(
                llm,
                ctx.topic,
                p,
                outline,
                [sources[n - 1] for n in p.sources],
                words,
                evidence,
                method,
            )
            for p in outline
        ),
        write_frame(llm, ctx.topic, outline, learnings, frame_words, evidence, method),
        return_exceptions=True,
    )


def _triage(
    llm: RunLLM, outline: list[Planned], results: list[object], sources: list[Source]
) -> tuple[list[Written], object]:
    """Each section as written, or its sources quoted where the model failed it (said in
    the Gaps); the frame's result. A refused key or a bug (not a model failure) raises."""
    for result in results:
        if isinstance(result, LLMAuthError) or (
            isinstance(result, BaseException) and not isinstance(result, LLMError)
        ):
            raise result
    bodies: list[Written] = []
    for planned, result in zip(outline, results[:-1], strict=True):
        if isinstance(result, Written):
            bodies.append(result)
        elif isinstance(result, BaseException):
            llm.fell_back("section", result, "that section quotes its sources instead")
            bodies.append(Written(planned, _quotes([sources[n - 1] for n in planned.sources])))
    return bodies, results[-1]


def _assemble(
    llm: RunLLM, bodies: list[Written], frame: object
) -> tuple[Parts, list[Section], CitationCheck, list[Claim]] | None:
    """The sections without what one repeats of another, inside the frame; their checks
    merged, their claims in reading order. None when nothing the model wrote was checked."""
    kept, _dropped = drop_repeats([w.body for w in bodies])
    parts = [(w.planned.title, body) for w, body in zip(bodies, kept, strict=True) if body]
    checks = [w.check for w in bodies if w.check is not None]
    claims = [c for w in bodies for c in w.claims]
    if isinstance(frame, tuple):
        intro, conclusion = frame
        parts = [
            (intro.planned.title, intro.body),
            *parts,
            (conclusion.planned.title, conclusion.body),
        ]
        checks += [c for c in (intro.check, conclusion.check) if c is not None]
        claims = [*intro.claims, *claims, *conclusion.claims]
    elif isinstance(frame, BaseException):
        llm.fell_back("frame", frame, "the report has no introduction or conclusion")
    if not checks:
        return None
    sections = [
        Section(title=w.planned.title, sources=list(w.planned.sources))
        for w, body in zip(bodies, kept, strict=True)
        if body
    ]
    return parts, sections, merge_checks(checks), claims


def _plain_titles(outline: list[Planned]) -> tuple[list[Planned], int]:
    """The outline with no URL in a title (the headings and the table of contents are
    rendered from them), and how many were removed; a title left empty is numbered."""
    plain, removed = [], 0
    for n, planned in enumerate(outline, start=1):
        title, count = strip_urls(planned.title)
        plain.append(replace(planned, title=title or f"Part {n}"))
        removed += count
    return plain, removed


async def _outline(
    ctx: RunContext,
    tree: Tree,
    llm: RunLLM,
    learnings: list[tuple[str, list[int]]],
    all_ids: list[int],
    ids: dict[str, list[int]],
    related: dict[int, set[int]],
) -> list[Planned]:
    """The model's outline, every source given to a section; one per sub-question if it
    fails."""
    try:
        planned = await llm_outline(
            llm, ctx.topic, learnings, all_ids, section_count(ctx.settings.words)
        )
        return give_every_source(planned, all_ids, related)
    except LLMAuthError:
        raise
    except LLMError as exc:
        llm.fell_back("outline", exc, "the report has one section per sub-question")
    groups = [
        (b.question, [n for x in (b, *rest) for n in ids.get(x.id, [])])
        for b, rest in tree.groups()
    ]
    return fallback_outline(groups)


def _quotes(sources: list[Source]) -> str:
    """A section the model could not write: its sources' summaries or passages, quoted."""
    from sleuth.stages.write import escape_inline, quote

    lines: list[str] = []
    for source in sources:
        lines += [f"**[{source.id}] {escape_inline(source.title)}**", ""]
        for passage in [source.summary] if source.summary else source.passages[:1]:
            lines += [quote(passage), ""]
    return "\n".join(lines).strip()
