"""Test support for sleuth: an offline web of real pages on loopback.

``OfflineWeb`` serves a copied corpus of real saved pages, a set of hostile
pages (slow, endless, broken, lying) and a SearXNG-compatible ``/search`` over
them, all on 127.x addresses, so the whole pipeline can be tested end to end
without the internet.
"""

from sleuth.testing.web import Doc, OfflineWeb, RequestRecord, Topic

__all__ = ["Doc", "OfflineWeb", "RequestRecord", "Topic"]
