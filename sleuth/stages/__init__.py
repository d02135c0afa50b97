"""The research stages, in the order a run calls them: typed records in, typed records out.

:mod:`~sleuth.stages.plan` (question → queries), :mod:`~sleuth.stages.rank` (search hits →
candidates by source quality), :mod:`~sleuth.stages.select` (a model picks among them),
:mod:`~sleuth.stages.read` (pages → passages and summaries), :mod:`~sleuth.stages.write`
(sources → the report's Markdown) and :mod:`~sleuth.stages.check` (a written report →
the citations that hold). Fetching and searching are services (:mod:`sleuth.fetch`,
:mod:`sleuth.search`); the drivers in :mod:`sleuth.pipeline` and :mod:`sleuth.agent`
call the stages in order. A stage never imports a later one, nor a driver.
"""
