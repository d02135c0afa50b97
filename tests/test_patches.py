"""The shapes of other libraries that sleuth._patches relies on, checked against the
installed versions: an upgrade that moves them fails here, not silently in a run."""

from __future__ import annotations

import inspect
import subprocess
import sys

from sleuth._patches import bm25s_module, share_justext_stoplist


def test_justexts_stoplist_is_held_once() -> None:
    """A page trafilatura hands to justext would leave its 154k-word stoplist in memory
    twice (trafilatura's tuple and justext's lowercased copy); with the patch, one set
    that justext uses as it is, and any other stoplist is still lowercased by justext."""
    import justext.core
    import trafilatura.external

    share_justext_stoplist()  # as sleuth's extraction does before trafilatura runs
    trafilatura.external.jt_stoplist_init()  # as trafilatura's justext fallback does
    held = trafilatura.external.JT_STOPLIST
    assert isinstance(held, frozenset) and len(held) > 100_000
    assert "the" in held and "und" in held and all(w == w.lower() for w in held)
    assert justext.core.define_stoplist(held) is held
    assert justext.core.define_stoplist(("The", "OF")) == frozenset({"the", "of"})


def test_trafilatura_still_builds_its_stoplist_through_the_patched_names() -> None:
    """The patch replaces module attributes; it only works while trafilatura's justext
    fallback looks them up by those names at call time."""
    import justext
    import trafilatura.external

    fallback = inspect.getsource(trafilatura.external.try_justext)
    assert "jt_stoplist_init" in fallback and "JT_STOPLIST" in fallback
    assert "define_stoplist(" in inspect.getsource(justext.core.classify_paragraphs)


def test_bm25s_is_imported_without_scipy_and_quietly() -> None:
    """bm25s would load scipy.sparse (about 10 MB) for a backend sleuth never uses, and
    set its logger to DEBUG (a log line per page read in an application's log)."""
    code = (
        "import logging, sys\n"
        "from sleuth._patches import bm25s_module\n"
        "m = bm25s_module()\n"
        "print(callable(m.tokenize), callable(m.BM25), 'scipy' in sys.modules,"
        " logging.getLogger('bm25s').level)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["True", "True", "False", "0"]
    assert bm25s_module() is bm25s_module()
