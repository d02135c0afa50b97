"""Test support for sleuth: an offline web of real pages on loopback.

``OfflineWeb`` serves a copied corpus of real saved pages, a set of hostile
pages (slow, endless, broken, lying) and a SearXNG-compatible ``/search`` over
them, all on 127.x addresses, so the whole pipeline can be tested end to end
without the internet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sleuth.testing.web import Doc, OfflineWeb, RequestRecord, Topic

__all__ = ["Doc", "OfflineWeb", "RequestRecord", "Topic"]


def __getattr__(name: str) -> Any:
    # Loaded on first use, so that ``python -m sleuth.testing`` can say in one line that
    # the web extra (starlette, uvicorn) is missing, rather than fail importing this.
    if name in __all__:
        from sleuth.testing import web

        return getattr(web, name)
    raise AttributeError(f"module 'sleuth.testing' has no attribute {name!r}")
