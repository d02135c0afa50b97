"""The research drivers, where the code decides: they call the stages in order.

:mod:`~sleuth.pipeline.quick` is the quick research (``sleuth "question"``,
:func:`sleuth.research`). Beside it, what every driver shares:
:mod:`~sleuth.pipeline.context` (the run's context and the services runs can share),
:mod:`~sleuth.pipeline.gather` (the fetch scheduler), :mod:`~sleuth.pipeline.recorder`
(the run's record in the store) and :mod:`~sleuth.pipeline.cached` (the store as the
stages' cache). Agent mode, where the model decides, is :mod:`sleuth.agent`.

Import its modules by name (``from sleuth.pipeline import quick``): ``sleuth.research``
as an attribute of the ``sleuth`` package is the public function, not this package.
"""
