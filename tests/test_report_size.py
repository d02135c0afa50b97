"""The HTML report stays small: its pictures (timeline, quotes) cost at most half again
what a report cost before them."""

from __future__ import annotations

import sleuth
from sleuth.report.html import render_html
from sleuth.testing import OfflineWeb

#: Bytes of the HTML report of this run (the trade-war topic, 5 sources, no model) made by
#: sleuth at commit db0aefc, before the timeline and the quotes were added.
BEFORE_PICTURES = 13_924


def test_a_five_source_report_is_at_most_half_again_its_size_before_the_pictures(
    web: OfflineWeb,
) -> None:
    topic = next(t for t in web.topics if t.id == "trade-war")
    report = sleuth.research_sync(
        topic.question,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=2,
        top_wait=0,
        no_llm=True,
        no_store=True,
        max_sources=5,
    )
    assert len(report.sources) == 5 and report.timeline is not None and report.answer
    html = render_html(report)
    assert 'class="timeline"' in html and 'class="cite v"' in html  # the pictures are there
    assert len(html.encode()) <= 1.5 * BEFORE_PICTURES, len(html.encode())
