"""``--report``: a cited report from the pages the agent read, by the research pipeline.

The agent's pages become the pipeline's gathered pages (in the order the agent read
them, with their source tiers), the goal its question and the agent's searches its
queries; the pipeline's own read and write stages then produce the report, so its
citations point only at pages that were really read. Pages read by an earlier
process (before a resume) are fetched again through the same guarded fetcher.
"""

from __future__ import annotations

from sleuth.agent.tools import Toolbox
from sleuth.models import Candidate, Failure, Page, Plan
from sleuth.progress import ProgressCallback
from sleuth.settings import Settings
from sleuth.stages.rank import QualityRule

__all__ = ["write_report"]

_MAX_PAGES = 50
_MAX_QUERIES = 10


async def _pages(urls: list[str], toolbox: Toolbox) -> tuple[list[Page], list[Failure]]:
    pages: list[Page] = []
    failures: list[Failure] = []
    for url in urls[:_MAX_PAGES]:
        page = toolbox.pages.get(url)
        if page is None:
            result = await toolbox.fetcher.fetch(url)
            if not isinstance(result, Page):
                failures.append(Failure(url=url, reason=result.reason))
                continue
            page = result
        pages.append(page)
    return pages, failures


def _candidate(page: Page, goal: str, rules: tuple[QualityRule, ...]) -> Candidate:
    from sleuth.stages.rank import classify
    from sleuth.urls import canonicalize, registered_domain

    url = page.final_url or page.url
    tier, score = classify(url, rules)
    return Candidate(
        url=url,
        canonical_url=canonicalize(url),
        domain=registered_domain(url),
        title=page.title or url,
        quality=tier,
        quality_score=score,
        frequency=1,
        score=float(score),
        queries=[goal],
    )


async def write_report(
    goal: str,
    settings: Settings,
    urls: list[str],
    queries: list[str],
    toolbox: Toolbox,
    emit: ProgressCallback,
) -> tuple[str, str]:
    """The report's Markdown and a one-line note on how it was written."""
    from sleuth.pipeline.context import open_run
    from sleuth.pipeline.gather import Gathered
    from sleuth.pipeline.steps import check_stage, read_stage, report_stage, write_stage

    if not urls:
        return "", "no report: the agent read no page"
    pages, failures = await _pages(urls, toolbox)
    plan = Plan(
        question=goal, queries=[goal, *dict.fromkeys(queries)][: _MAX_QUERIES + 1], planner="agent"
    )
    async with open_run(goal, settings, emit) as ctx:
        ctx.tally.failures += failures
        gathered = Gathered(
            pages=[(_candidate(p, goal, ctx.rules), p) for p in pages],
            attempted=len(urls[:_MAX_PAGES]),
        )
        read = await read_stage(ctx, plan, gathered)
        ctx.tally.fold(read)
        sources = read.sources
        draft = await check_stage(ctx, await write_stage(ctx, sources), sources, gathered)
        report = report_stage(ctx, plan, sources, gathered, draft)
        done = getattr(ctx, "done", None)
        if callable(done):
            report = done(report)
    how = (
        "written by the model"
        if report.writer == "llm"
        else "written without a model: quoted passages (BM25) from each page"
    )
    return (
        report.markdown,
        f"The report below cites the {len(sources)} pages the agent read; {how}.",
    )
