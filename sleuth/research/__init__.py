"""The research drivers, where the code decides: they call the stages in order.

:mod:`~sleuth.research.quick` is the quick research (``sleuth "question"``,
:func:`sleuth.research`). Beside it, what every driver shares:
:mod:`~sleuth.research.context` (the run's context and the services runs can share),
:mod:`~sleuth.research.gather` (the fetch scheduler), :mod:`~sleuth.research.recorder`
(the run's record in the store) and :mod:`~sleuth.research.cached` (the store as the
stages' cache). Agent mode, where the model decides, is :mod:`sleuth.agent`.

Import its modules by name (``from sleuth.research import quick``): ``sleuth.research``
as an attribute of the ``sleuth`` package is the public function, not this package.
"""
