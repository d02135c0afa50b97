"""The work each source needs is done as its page arrives, while other pages download,
not once the sources are read (the read stage sat between the last page and the report)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import sleuth
import sleuth.pipeline.passages as passages_module
from sleuth.pipeline.steps import answer_ahead, read_sources
from sleuth.testing import OfflineWeb


def _research(web: OfflineWeb, question: str) -> sleuth.Report:
    """A no-model quick research of three sources over the offline web, nothing stored."""
    return sleuth.research_sync(
        question, **web.search_options, no_llm=True, max_sources=3, no_store=True
    )


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
    report = _research(web, topic.question)
    assert len(report.sources) == 3
    assert picked and set(picked) == {"sleuth-passages_0"}, picked
    assert all(source.passages for source in report.sources)


def test_each_sources_sentences_are_scored_for_the_answer_as_its_page_arrives(
    web: OfflineWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer is chosen once the sources are read, over all of them; each page's
    sentences were scored alone in the background as it arrived, so their terms, names
    and vectors are at hand then."""
    import sleuth.stages.answer as answer

    scored: list[tuple[str, int]] = []
    real = answer.best_answer

    def spy(question: str, sources: Any, texts: Any, **kw: Any) -> Any:
        scored.append((threading.current_thread().name, len(sources)))
        return real(question, sources, texts, **kw)

    monkeypatch.setattr(answer, "best_answer", spy)
    topic = web.topics[1]
    report = _research(web, topic.question)
    assert report.answer is not None and report.answer.sentences
    ahead = [n for thread, n in scored if thread == "sleuth-passages_0"]
    assert len(ahead) >= len(report.sources) and set(ahead) == {1}
    assert len(scored) - len(ahead) == 1  # the answer stage's, over every source


def test_the_answer_is_the_one_chosen_without_the_work_ahead(web: OfflineWeb) -> None:
    """Scoring each page alone ahead only fills caches: over the same sources, the answer
    is the one chosen from cold caches."""
    from records import candidate, page

    from sleuth.settings import Settings
    from sleuth.stages.answer import best_answer
    from sleuth.stages.sentences import sentences
    from sleuth.terms import _short_terms

    topic = web.topics[1]
    docs = [web.doc(doc_id) for doc_id in topic.expected[:3]]
    pages = [(candidate(d.url, d.title), page(d.url, d.title, d.text)) for d in docs]
    settings = Settings()
    sources = read_sources(pages, [topic.question], settings)
    texts = {s.id: p.text for s, (_, p) in zip(sources, pages, strict=True)}

    sentences.cache_clear()
    _short_terms.cache_clear()
    cold = best_answer(topic.question, sources, texts)
    for c, p in pages:
        answer_ahead(topic.question, c, p, settings)
    assert best_answer(topic.question, sources, texts) == cold
    assert cold


def test_a_remembered_vector_is_the_vector_and_cannot_be_changed() -> None:
    from sleuth.embedding import static_model

    model = static_model()
    text = "The service costs $9.99 a month."
    first, second = model.embed(text), model.embed(text)
    assert first is second  # remembered
    assert (first == model.embed_rows(model.ids(text))).all()
    with pytest.raises(ValueError):
        first[0] = 1.0
