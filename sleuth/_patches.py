"""Where sleuth reaches inside other libraries, in one place.

Each function here depends on a library's private shape (a module attribute it
replaces, a module it keeps from loading). ``tests/test_patches.py`` checks that
shape against the installed versions, so an upgrade that changes it fails a test
instead of quietly losing the saving. Every patch is an optimisation only: when the
shape is not what it expects, it leaves the library as it is.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from typing import Any

__all__ = ["bm25s_module", "share_justext_stoplist"]

log = logging.getLogger(__name__)

_justext_shared = False


def share_justext_stoplist() -> None:
    """Hold trafilatura's justext stoplist once, as the set justext wants.

    On a page whose language it is not told, trafilatura runs justext with the union
    of justext's ~100 stoplists (154k words), built on first use as a tuple; justext
    then makes (and caches) its own lowercased frozenset of it, keyed by the tuple,
    hashing all 154k words again on every call. So the union would be held twice
    (31 MB, the largest part of a run's peak memory). Here it is built, still on first
    use, as the frozenset justext would make, and justext uses that very set as it is;
    other stoplists go through justext's own conversion. Same words, same
    classification, half the memory. Called under the trafilatura lock.

    Relies on ``trafilatura.external.JT_STOPLIST`` / ``jt_stoplist_init`` and
    ``justext.core.define_stoplist``.
    """
    global _justext_shared
    if _justext_shared:
        return
    _justext_shared = True
    try:
        import justext.core
        import trafilatura.external
        from justext.utils import get_stoplist, get_stoplists

        convert = justext.core.define_stoplist
        if not callable(getattr(trafilatura.external, "jt_stoplist_init", None)):
            return
    except Exception:  # an optimisation only: trafilatura works without it
        log.debug("justext's stoplist left as trafilatura builds it", exc_info=True)
        return
    union: frozenset[str] = frozenset()

    def jt_stoplist_init() -> frozenset[str]:
        nonlocal union
        union = frozenset(
            word.lower() for language in get_stoplists() for word in get_stoplist(language)
        )
        # trafilatura types it as a tuple; justext only iterates it or tests membership.
        trafilatura.external.JT_STOPLIST = union  # type: ignore[assignment]
        return union

    def define_stoplist(stoplist: Any) -> Any:
        return stoplist if stoplist is union and union else convert(stoplist)

    if trafilatura.external.JT_STOPLIST:  # trafilatura built its tuple before us:
        union = convert(trafilatura.external.JT_STOPLIST)  # justext's copy (maybe cached)
        trafilatura.external.JT_STOPLIST = union
        getattr(convert, "cache_clear", lambda: None)()  # the tuple's copy goes with it
    trafilatura.external.jt_stoplist_init = jt_stoplist_init  # type: ignore[assignment]
    justext.core.define_stoplist = define_stoplist


_BM25S_LOCK = threading.Lock()
_bm25s: Any = None


def bm25s_module() -> Any:
    """bm25s, imported on first use, and without scipy.

    bm25s imports ``scipy.sparse`` as it loads whenever scipy is installed, only to
    offer an optional backend; sleuth uses its numpy backend. Where scipy happens to
    be installed (most data-science environments) but is not loaded yet, hiding it
    for this one import saves about 10 MB per process and 0.1 s of start-up. bm25s
    also sets its own logger to DEBUG as it loads; its records follow the
    application's level instead.
    """
    global _bm25s
    if _bm25s is not None:
        return _bm25s
    # Under a lock: pages are read in threads, and a second thread must wait for the
    # first one's import, not take the half-initialised module from sys.modules.
    with _BM25S_LOCK:
        if _bm25s is None:
            hide = "scipy" not in sys.modules
            if hide:
                sys.modules["scipy"] = None  # type: ignore[assignment]  # `import scipy` fails
            try:
                _bm25s = importlib.import_module("bm25s")
                logger = logging.getLogger("bm25s")
                if logger.level == logging.DEBUG:
                    logger.setLevel(logging.NOTSET)
            finally:
                if hide and sys.modules.get("scipy", 0) is None:
                    del sys.modules["scipy"]
        return _bm25s
