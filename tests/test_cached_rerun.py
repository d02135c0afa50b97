"""A rerun answered from the cache reports what the run it repeats could not read."""

from __future__ import annotations

from pathlib import Path

import pytest

import sleuth
from sleuth.testing import OfflineWeb


def options(web: OfflineWeb, home: Path, mode: str) -> dict[str, object]:
    return {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 2,
        "no_llm": True,
        "home": str(home),
        "mode": mode,
    }


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["quick", "deep"])
async def test_a_cached_rerun_reports_the_same_gaps_marked_as_from_the_cache(
    web: OfflineWeb, tmp_path: Path, mode: str
) -> None:
    question = web.topics[0].question
    first = await sleuth.research(question, **options(web, tmp_path, mode))
    pages = {f.url: f.reason for f in first.failures if f.url}
    assert pages, "the question's pages include some that cannot be read"
    again = await sleuth.research(question, **options(web, tmp_path, mode))
    assert again.stats.cached_fetches > 0
    cited = {s.url for s in again.sources}
    said = {f.url: f.reason for f in again.failures if f.url}
    for url, reason in pages.items():
        if url in cited:  # read this time (from the cache): not a gap any more
            continue
        assert url in said, (url, reason)
        if said[url] != reason:  # not met again by this run: carried, and marked
            assert said[url] == f"{reason} (from the cache: run {first.run_id})"
        assert f"<{url}>" in again.markdown.split("## Gaps", 1)[1]
