"""The work each source needs is done as its page arrives, while other pages download,
not once the sources are read (the read stage sat between the last page and the report)."""

from __future__ import annotations

import threading

import pytest

import sleuth
import sleuth.pipeline.passages as passages_module
from sleuth.testing import OfflineWeb


def test_each_sources_passages_are_picked_as_its_page_arrives(
    web: OfflineWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a model the queries are known before any page is fetched: every source's
    passages are picked in the background as its page arrives, and the read stage picks
    none itself."""
    picked: list[str] = []
    real = passages_module.best_passages

    def spy(text: str, queries: list[str], k: int) -> list[str]:
        picked.append(threading.current_thread().name)
        return real(text, queries, k)

    monkeypatch.setattr(passages_module, "best_passages", spy)
    topic = web.topics[0]
    options = {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "no_llm": True,
        "max_sources": 3,
        "no_store": True,
    }
    report = sleuth.research_sync(topic.question, **options)
    assert len(report.sources) == 3
    assert picked and set(picked) == {"sleuth-passages_0"}, picked
    assert all(source.passages for source in report.sources)
