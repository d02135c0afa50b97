"""``--search auto``: the specialised providers a question's field calls for, searched
alongside the web; the report says which provider found each source.

The research tests run on the offline web (the general web: its SearXNG) with the
specialised services' loopback stand-ins (``services``), which answer every query with
their recorded answers, their page links pointed at the stand-ins themselves.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Canned, Services

import sleuth
from sleuth.models import Report, SearchHit
from sleuth.search import build_providers, make_search_client, run_searches
from sleuth.search.local import provider_groups
from sleuth.search.routing import expand, route
from sleuth.settings import Settings
from sleuth.testing import OfflineWeb

PAGE_TIMEOUT = 2.0
ML_QUESTION = "What is dense passage retrieval for open-domain question answering?"
BIO_QUESTION = "How does CRISPR gene editing treat sickle cell disease?"
CODE_QUESTION = "How do I parse PDF files in Python with a library?"


def providers_for(question: str, env: dict[str, str] | None = None) -> list[str]:
    return [n for r in route(question) for n in r.providers if n != "github-code" or env]


# --- routing: which providers a question calls for --------------------------------------


@pytest.mark.parametrize(
    ("question", "providers"),
    [
        (BIO_QUESTION, ["pubmed"]),
        ("What are the side effects of metformin in type 2 diabetes patients?", ["pubmed"]),
        ("Is the mRNA vaccine effective against new variants?", ["pubmed"]),
        (ML_QUESTION, ["arxiv", "semanticscholar"]),
        (
            "How do transformers use self-attention in language models?",
            ["arxiv", "semanticscholar"],
        ),
        ("Which reinforcement learning methods train robots?", ["arxiv", "semanticscholar"]),
        (CODE_QUESTION, ["github"]),
        ("Is there an open-source alternative to Jira?", ["github"]),
        ("Who was Ada Lovelace?", ["wikipedia"]),
        ("What is the history of the Byzantine Empire?", ["wikipedia"]),
        ("When was the Eiffel Tower built?", ["wikipedia"]),
        ("What is the latest news about Ada Lovelace's notes?", []),
        ("Is the new iPhone worth buying?", []),
        ("How do cloud gaming services stream games?", []),
    ],
)
def test_a_question_is_routed_by_its_field(question: str, providers: list[str]) -> None:
    assert providers_for(question) == providers


def test_the_offline_web_s_news_questions_call_for_no_specialised_provider(
    web: OfflineWeb,
) -> None:
    """Markets, protests, a product launch, a police campaign: the general web only."""
    assert {t.id: route(t.question) for t in web.topics} == {t.id: [] for t in web.topics}


def test_auto_expands_to_the_web_engines_and_the_routed_providers() -> None:
    env: dict[str, str] = {}
    assert expand(["auto"], ML_QUESTION, env) == ["duckduckgo", "arxiv", "semanticscholar"]
    assert expand(["searxng", "auto"], BIO_QUESTION, env) == ["searxng", "pubmed"]
    assert expand(["auto", "brave", "arxiv"], ML_QUESTION, env) == [
        "brave",
        "arxiv",
        "semanticscholar",
    ]
    assert expand(["auto"], "How did markets react to the tariffs?", env) == ["duckduckgo"]
    assert expand(["auto"], None, env) == ["duckduckgo"]
    assert expand(["duckduckgo"], ML_QUESTION, env) == ["duckduckgo"]  # no auto: as given
    # GitHub's code search only with the token it needs
    assert expand(["auto"], CODE_QUESTION, env) == ["duckduckgo", "github"]
    token = {"GITHUB_TOKEN": "ghp-x"}
    assert expand(["auto"], CODE_QUESTION, token) == ["duckduckgo", "github", "github-code"]


async def test_specialised_providers_are_searched_alongside_the_web_not_as_its_fallback(
    web: OfflineWeb, services: Services
) -> None:
    """``--search searxng,arxiv``: every query goes to SearXNG and to arXiv (arXiv is no
    fallback that a web answer would skip), and each hit says which one found it."""
    settings = Settings(
        search=["searxng", "arxiv"], searxng_url=web.searxng_url, **services.options
    )
    async with make_search_client(settings) as client:
        providers = build_providers(settings, client, env={})
        groups = provider_groups(providers)
        assert [[p.name for p in g] for g in groups] == [["searxng"], ["arxiv"]]
        answers = [await run_searches([ML_QUESTION], g, limit=5, timeout=10) for g in groups]
    hits: list[SearchHit] = [h for found, _ in answers for h in found]
    assert {h.provider for h in hits} == {"searxng", "arxiv"}
    assert len(services.requests("arxiv")) == 1


# --- research: the routed providers at work, and the Sources that name them ---------------


def research(web: OfflineWeb, services: Services, question: str, **extra: Any) -> Report:
    options: dict[str, Any] = {
        "search": "searxng,auto",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": PAGE_TIMEOUT,
        "depth": 1,
        "max_sources": 5,
        "fetch_order": "rank",
        **services.options,
        **extra,
    }
    return sleuth.research_sync(question, **options)


def point_links_at(services: Services) -> None:
    """The recorded answers' page links, pointed at the stand-ins (a missing page: 404)."""
    for host in ("http://arxiv.org", "https://arxiv.org", "https://www.semanticscholar.org"):
        services.rewrite[host] = services.base_url
    for host in ("https://en.wikipedia.org", "https://github.com"):
        services.rewrite[host] = services.base_url


def test_a_machine_learning_question_goes_to_arxiv_and_its_source_says_so(
    web: OfflineWeb, services: Services
) -> None:
    point_links_at(services)
    services.answer("s2", Canned(body=b'{"total": 0, "offset": 0, "data": []}'))
    report = research(web, services, ML_QUESTION)
    [asked] = services.requests("arxiv")
    assert "all:dense AND all:passage" in asked.params["search_query"]
    assert len(services.requests("s2")) == 1
    assert services.requests("esearch") == []  # not a biomedical question
    abstract = f"{services.base_url}/abs/2004.04906v3"
    [source] = [s for s in report.sources if s.url == abstract]
    assert source.providers == ["arxiv"]
    assert f"<{abstract}> (via arxiv)" in report.markdown.split("## Sources", 1)[1]
    assert all(s.providers for s in report.sources)  # every source names its finder
    assert '"providers":["arxiv"]' in report.model_dump_json()


def test_a_biomedical_question_goes_to_pubmed(web: OfflineWeb, services: Services) -> None:
    # PubMed's records link to pubmed.ncbi.nlm.nih.gov: denied here, never fetched.
    report = research(web, services, BIO_QUESTION, deny_domains="nih.gov")
    [search] = services.requests("esearch")
    assert search.params["term"] == "CRISPR gene editing treat sickle cell disease"
    [fetch] = services.requests("efetch")
    assert fetch.params["id"] == "33283989,31597037"
    assert services.requests("arxiv") == [] and services.requests("s2") == []
    assert not [f for f in report.failures if f.stage == "search"]


def test_a_failing_specialised_service_is_named_in_gaps_and_the_web_still_answers(
    web: OfflineWeb, services: Services
) -> None:
    services.answer("arxiv", Canned("arxiv_rate.txt", status=503))
    services.answer("s2", Canned("s2_rate.json", status=429, headers={"Retry-After": "600"}))
    report = research(web, services, ML_QUESTION)
    gaps = report.markdown.split("## Gaps", 1)[1]
    assert (
        f"arxiv search for “{ML_QUESTION}” failed: HTTP 503 Service Unavailable: arXiv says "
        "“Rate exceeded.”" in gaps
    )
    assert (
        f"semanticscholar search for “{ML_QUESTION}” failed: rate limited (HTTP 429): "
        "Semantic Scholar asks to wait 600s" in gaps
    )
    assert report.sources and {p for s in report.sources for p in s.providers} == {"searxng"}


def off_topic(web: OfflineWeb, topic_id: str, report: Report) -> list[str]:
    """Cited sources that are not one of the topic's own pages."""
    [topic] = [t for t in web.topics if t.id == topic_id]
    own = {web.doc(doc_id).url for doc_id in topic.expected}
    return [s.url for s in report.sources if s.url not in own]


@pytest.mark.slow
def test_auto_cites_no_more_off_topic_sources_than_the_web_alone(
    web: OfflineWeb, services: Services
) -> None:
    """Over the offline web's questions, ``searxng,auto`` against ``searxng`` alone. The
    stand-ins answer any query with their recorded papers, repositories and articles
    (about other subjects), their pages served: were routing to misfire, those would
    be candidates, and off-topic ones if cited."""
    point_links_at(services)
    for page in ("/abs/2005.11401v4", "/abs/1706.03762v7", "/wiki/Hermitian_matrix"):
        services.answer(page, Canned("arxiv_abs.html"))
    # One store for the test: the second run of a question reads the pages the first read
    # from its cache (the same text, not waited for again); what differs is what each
    # run's search brings in.
    for topic in web.topics:
        alone = research(web, services, topic.question, search="searxng")
        auto = research(web, services, topic.question)
        assert len(off_topic(web, topic.id, auto)) <= len(off_topic(web, topic.id, alone)), topic.id
    assert services.asked == []  # no news question was sent to a specialised service


def test_a_batch_s_ray_workers_get_the_keys_of_the_providers_auto_may_add(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("ray")
    from sleuth.pipeline.batch.ray import _environment

    monkeypatch.setenv("NCBI_API_KEY", "ncbi-k")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-k")
    monkeypatch.setenv("UNRELATED_SECRET", "no")
    env = _environment(Settings(search=["auto"]))
    assert env["NCBI_API_KEY"] == "ncbi-k" and env["GITHUB_TOKEN"] == "ghp-k"
    assert "UNRELATED_SECRET" not in env
