"""Imported by the extraction workers' forkserver, and by nothing else (``_PRELOAD``).

It loads and warms up extraction (:mod:`sleuth.extraction._warm`) and points the server's
standard error, which every worker inherits, at ``/dev/null``: a worker reports what
went wrong through pebble (its exception, or how it ended), and what it might print
besides (a worker half-started when sleuth exits cannot find its parent's semaphore
and says so in a traceback) is not the user's business. ``SLEUTH_DEBUG=1`` keeps it.
"""

from __future__ import annotations

import contextlib
import os

if not os.environ.get("SLEUTH_DEBUG"):
    with contextlib.suppress(OSError):
        _null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(_null, 2)
        os.close(_null)

from sleuth.extraction import _warm  # noqa: F401  (imported for its warm-up)
