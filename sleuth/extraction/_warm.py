"""Imported by the extraction workers' forkserver (through ``_forkserver``): loads and
warms up extraction once.

Every worker forks from that server, so each starts with trafilatura, lxml, numpy and
the block model loaded and run once (copy-on-write, shared), instead of spending half
a second warming up on its own. Importing this module is its whole purpose; nothing
else imports it. Never raises: a failure here only means colder workers.
"""

from __future__ import annotations

import logging

#: Whether the warm-up ran (a worker started without the forkserver warms up itself).
warm = False

_PAGE = (
    "<html><head><title>sleuth</title></head><body><article><p>"
    + "sleuth warms up its text extraction before the first page arrives. " * 3
    + "</p></article></body></html>"
)


def warm_up() -> None:
    """Extract one small page, loading everything extraction needs."""
    global warm
    try:
        from sleuth.extraction import content  # noqa: F401  (what the workers unpickle calls into)
        from sleuth.extraction.html import extract

        extract(_PAGE, "http://127.0.0.1/")
    except Exception:  # colder workers, nothing worse
        logging.getLogger(__name__).debug("extraction warm-up failed", exc_info=True)
    warm = True


warm_up()
