"""``sleuth deep``: a deep research from the question to the report.

The tree is explored (:class:`~sleuth.pipeline.deep.explore.Explorer`), its sources
judged together (:mod:`~sleuth.pipeline.deep.sift`: off-topic ones left out, second hops
another branch set aside read after all), and the long report written from it
(:mod:`~sleuth.pipeline.deep.report`).
"""

from __future__ import annotations

from sleuth.models import Report
from sleuth.pipeline.context import Services, clean_question, open_run
from sleuth.pipeline.deep.explore import Explorer
from sleuth.pipeline.deep.sift import sift
from sleuth.progress import ProgressCallback, no_progress
from sleuth.settings import Settings, mode_defaults

__all__ = ["deep_research"]


async def deep_research(
    question: str,
    *,
    settings: Settings,
    on_event: ProgressCallback | None = None,
    resume_id: str | None = None,
    services: Services | None = None,
) -> Report:
    """Research ``question`` as a tree of questions and return the long, cited report.

    ``settings`` are the run's (``mode="deep"``; deep mode's defaults of
    :func:`~sleuth.settings.mode_defaults` apply where the user set nothing). Called by
    :func:`sleuth.research` when the mode is deep; ``services`` as there (a batch shares
    one fetcher, store and model client between its questions).
    """
    from sleuth.pipeline.deep.report import write_report

    topic = clean_question(question)
    settings = mode_defaults(settings)
    async with open_run(
        topic, settings, on_event or no_progress, resume_id=resume_id, services=services
    ) as ctx:
        explorer = Explorer(ctx)
        await explorer.explore()
        told = {b.id: (b.status, b.read) for b in explorer.tree.branches}
        ctx.tally.failures += sift(ctx.topic, explorer.tree)
        await explorer.read_hops()
        for branch in explorer.tree.branches:  # the live tree ends as the report's does
            if told.get(branch.id) != (branch.status, branch.read):
                explorer.tell(branch)
        ctx.session.check_store()  # found damaged while fetching: no report on top
        return ctx.done(await write_report(ctx, explorer.tree))
