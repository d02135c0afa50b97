"""The Answer of quick no-model reports on the offline web, read as a user reads it: the
questions people ask sleuth ("How is …?", "Why is …?") over real saved pages."""

from __future__ import annotations

import sleuth
from sleuth.models import AnswerSentence
from sleuth.testing import OfflineWeb


def _quick_answer(web: OfflineWeb, topic_id: str) -> list[AnswerSentence]:
    topic = next(t for t in web.topics if t.id == topic_id)
    report = sleuth.research_sync(
        topic.question, **web.search_options, no_store=True, no_llm=True, max_sources=5
    )
    assert report.answer is not None
    return report.answer.sentences


def test_the_firefox_answer_explains_and_quotes_no_pronoun_out_of_place(
    web: OfflineWeb,
) -> None:
    """ "How is Mozilla's Firefox web browser developed and released?" was answered by the
    Developer Edition page's "Develop, deploy and debug Firefox OS apps …" (worth 13 for
    naming "Firefox OS", which the Mozilla page's product list named), then "It is
    developed entirely in Java." (Rhino's, quoted as Mozilla's)."""
    said = [s.text for s in _quick_answer(web, "firefox")]
    assert said, said
    assert not said[0].startswith("Develop, deploy and debug"), said
    assert "It is developed entirely in Java." not in said, said
    # Something of how it is released is said, from a page about its releases.
    assert any("release" in s.lower() and "Firefox" in s for s in said), said


def test_no_answer_sentence_is_joined_to_a_sentence_left_out(web: OfflineWeb) -> None:
    """The Hong Kong Answer quoted "And Beijing's current strategy … is an obvious and
    manifest failure." and "Nor has Beijing's backtracking …" without what they go on
    from; the trade-war one "That's much higher than the revenue level …". Such a
    sentence comes right after the one of its page that it goes on from, or not at all."""
    for topic_id in ("hong-kong", "trade-war"):
        said = _quick_answer(web, topic_id)
        assert said, topic_id
        for at, sentence in enumerate(said):
            if sentence.text.startswith(("And ", "Nor ", "That's ", "That’s ", "Meanwhile, they")):
                assert at > 0, (topic_id, sentence.text)
                before = said[at - 1]
                assert before.sources[0] == sentence.sources[0], (topic_id, sentence.text)
                assert before.spans[0].end <= sentence.spans[0].start, (topic_id, sentence.text)
