"""The research drivers, where the code decides: they call the stages in order.

:mod:`~sleuth.pipeline.quick` is the quick research (``sleuth "question"``,
:func:`sleuth.research`); :mod:`~sleuth.pipeline.deep` the deep research and
:mod:`~sleuth.pipeline.batch` many questions at once. Beside them, what every driver
shares: :mod:`~sleuth.pipeline.context` (the run's context and the services runs can
share), :mod:`~sleuth.pipeline.tally` (what a run did, as its steps return it),
:mod:`~sleuth.pipeline.searching` and :mod:`~sleuth.pipeline.steps` (the stages as a
driver calls them), :mod:`~sleuth.pipeline.gather` (the fetch scheduler, one policy per
mode), :mod:`~sleuth.pipeline.recorder` (the run's record in the store) and
:mod:`~sleuth.pipeline.cached` (the store as the stages' cache). Agent mode, where the
model decides, is :mod:`sleuth.agent`.

Import its modules by name (``from sleuth.pipeline import quick``): ``sleuth.research``
as an attribute of the ``sleuth`` package is the public function, not this package.
"""
