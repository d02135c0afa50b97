"""A news page's dateline ("Hong Kong (CNN Business)", "WASHINGTON (Reuters) -") is where
the story was filed, not what it says: it never opens a sentence, a quote or the Answer.
The pages are the offline web's (``sleuth.testing``), read as sleuth reads them."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from sleuth.report.quote_check import answer_section, quote_faults, quotes_of
from sleuth.settings import load_settings
from sleuth.stages.sentences import passages, sentences
from sleuth.testing import OfflineWeb

#: The offline web's news pages that open with a dateline, and their first sentence's start.
DATELINED = {
    "cnn-asian-markets-trade-war": "A muddled view of US-China trade talks",
    "hawaiinewsnow-europa-telescope": "NASA scientists using a telescope atop Mauna Kea",
    "reuters-fed-lifts-rates": "The U.S. Federal Reserve raised interest rates",
    "sciencealert-titan-geological-map": "Scientists on Monday unveiled",
    "venturebeat-wework-attorney-general": "The New York State Attorney General",
}
DATELINES = ("(CNN Business)", "(Reuters)", "WASHINGTON")


def _options(web: OfflineWeb) -> dict[str, Any]:
    return {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "no_store": True,
        "no_llm": True,
    }


@pytest.mark.parametrize("page", sorted(DATELINED))
def test_a_news_pages_first_sentence_opens_after_its_dateline(web: OfflineWeb, page: str) -> None:
    import sleuth

    settings = load_settings(_options(web))
    text = anyio.run(sleuth.fetch_page, web.doc(page).url, settings).text
    first = sentences(text)[0]
    assert first.text.startswith(DATELINED[page]), first.text
    # The sentence's place is the prose's, so a quote of it is checked against the page.
    assert text[first.start :].startswith(DATELINED[page])
    assert quote_faults(first.text, text) == []
    assert passages(text, 600)[0].text.startswith(DATELINED[page])


def test_the_trade_war_answer_and_quotes_open_with_no_dateline(web: OfflineWeb) -> None:
    import sleuth

    topic = next(t for t in web.topics if t.id == "trade-war")
    report = sleuth.research_sync(topic.question, **_options(web))
    urls = [s.url for s in report.sources]
    assert any(u.endswith("/cnn-asian-markets-trade-war") for u in urls), urls
    assert report.answer is not None and report.answer.sentences
    said = [s.text for s in report.answer.sentences]
    said += quotes_of(report.markdown) + answer_section(report.markdown).splitlines()
    said += [p for s in report.sources for p in s.passages]
    for line in said:
        assert not any(d in line for d in DATELINES), line


@pytest.mark.parametrize(
    ("quote", "source", "faults"),
    [
        ("The Fed raised rates.", "WASHINGTON (Reuters) - The Fed raised rates.", []),
        ("A muddled view.", "Hong Kong (CNN Business)A muddled view.", []),
        ("The AG is investigating.", "(Reuters) — The AG is investigating.", []),
        ("rates rose.", "The Fed said - rates rose.", ["starts inside a sentence without …"]),
    ],
)
def test_a_sentence_starts_after_a_dateline_and_nowhere_else_inside_a_line(
    quote: str, source: str, faults: list[str]
) -> None:
    assert quote_faults(quote, source) == faults
