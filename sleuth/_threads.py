"""A process-wide worker thread, started on first use.

Work that must not run on the event loop but must not run in parallel with itself either
(trafilatura and lxml have crashed natively when called from several threads at once;
CPU-bound work that the GIL would serialise anyway) goes to one thread of its own.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["OneThread"]


class OneThread:
    """An executor of one thread named ``prefix``, made on the first call, then shared."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def __call__(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._prefix)
            return self._pool
