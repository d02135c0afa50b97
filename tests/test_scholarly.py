"""The specialised providers (arXiv, PubMed, Semantic Scholar, Wikipedia, GitHub) against
loopback stand-ins serving recorded answers (tests/data/services, see its LICENSES.md).

Each provider is asked as a run asks it (``run_searches``), so what a user sees is what
is checked: the hits, or the failure line the report's Gaps will show. Pacing runs on a
fake clock: the waits a service's limits impose are read, not waited.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from conftest import Canned, Services

from sleuth.errors import ProviderError
from sleuth.models import SearchFailure, SearchHit
from sleuth.search import get_provider, make_search_client, run_searches
from sleuth.search.paced import PacedProvider
from sleuth.search.pacing import Limit, Pacer, retry_after
from sleuth.settings import Settings

ML_QUESTION = "What is dense passage retrieval for open-domain question answering?"
BIO_QUESTION = "How does CRISPR gene editing treat sickle cell disease?"


class FakeClock:
    """A monotonic clock that moves only when slept on; it records every sleep."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds


@asynccontextmanager
async def paced(
    name: str,
    services: Services,
    clock: FakeClock | None = None,
    env: dict[str, str] | None = None,
    **options: Any,
) -> AsyncIterator[PacedProvider]:
    """Provider ``name`` pointed at the stand-ins, on ``clock``'s pacer."""
    settings = Settings(search=[name], **{**services.options, **options})
    clock = clock or FakeClock()
    async with make_search_client(settings) as client:
        provider = get_provider(name)(settings, client, env or {})
        assert isinstance(provider, PacedProvider)
        provider.pacer = Pacer(clock=clock, sleep=clock.sleep)
        yield provider


async def ask(
    provider: PacedProvider, *queries: str, limit: int = 5
) -> tuple[list[SearchHit], list[SearchFailure]]:
    return await run_searches(list(queries), [provider], limit=limit, timeout=15)


def summary(hits: list[SearchHit]) -> list[tuple[int, str, str]]:
    return [(h.rank, h.title, h.url) for h in hits]


#: (provider, where its stand-in answers, the recorded refusal, the API key the provider
#: is given, the failure line the report's Gaps show): each service's own words.
REFUSALS = [
    pytest.param(
        "arxiv",
        "arxiv",
        Canned("arxiv_error.xml"),  # HTTP 200 and one entry titled Error
        {},
        "the query was refused: arXiv says “max_results must be >= 0”",
        id="arxiv-error-entry",
    ),
    pytest.param(
        "pubmed",
        "esearch",
        Canned("pubmed_esearch_error.json"),
        {},
        "the query was refused: NCBI says “Invalid query: unmatched parenthesis”",
        id="pubmed-query-error",
    ),
    pytest.param(
        "semanticscholar",
        "s2",
        Canned("s2_forbidden.json", status=403),
        {"SEMANTIC_SCHOLAR_API_KEY": "s2-secret"},
        "HTTP 403 Forbidden (is SEMANTIC_SCHOLAR_API_KEY valid?): Semantic Scholar says "
        "“Forbidden”",
        id="s2-forbidden-key",
    ),
    pytest.param(
        "semanticscholar",
        "s2",
        Canned("s2_error.json", status=400),
        {},
        "HTTP 400 Bad Request: Semantic Scholar says “Unrecognized or unsupported fields: [tldrs]”",
        id="s2-bad-request",
    ),
    pytest.param(
        "wikipedia",
        "/en/w/api.php",
        Canned("wikipedia_error.json"),
        {},
        'API error badvalue: Wikipedia says “Unrecognized value for parameter "prop": extract.”',
        id="wikipedia-api-error",
    ),
]


@pytest.mark.parametrize(("name", "where", "refusal", "env", "reason"), REFUSALS)
async def test_a_refused_query_is_one_failure_in_the_services_own_words(
    services: Services, name: str, where: str, refusal: Canned, env: dict[str, str], reason: str
) -> None:
    """A service that refuses a query says why; the failure says what it said, and the
    refusal is never read as a search that found something."""
    services.answer(where, refusal)
    async with paced(name, services, env=env) as provider:
        hits, failures = await ask(provider, ML_QUESTION)
    assert hits == []
    assert [f.reason for f in failures] == [reason]


# --- arXiv -----------------------------------------------------------------------------


async def test_arxiv_searches_the_key_words_and_cites_the_abstract_pages(
    services: Services,
) -> None:
    async with paced("arxiv", services) as arxiv:
        hits, failures = await ask(arxiv, ML_QUESTION)
    assert failures == []
    [request] = services.requests("arxiv")
    assert request.params["search_query"] == (
        'all:dense AND all:passage AND all:retrieval AND all:"open-domain" '
        "AND all:question AND all:answering"
    )
    assert request.params["sortBy"] == "relevance"
    assert summary(hits) == [
        (
            1,
            "Dense Passage Retrieval for Open-Domain Question Answering",
            "https://arxiv.org/abs/2004.04906",
        ),
        (
            2,
            "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks",
            "https://arxiv.org/abs/2005.11401",
        ),
        (3, "Attention Is All You Need", "https://arxiv.org/abs/1706.03762"),
    ]
    assert hits[0].snippet.startswith("Open-domain question answering relies on efficient")
    assert "the Transformer, based solely on attention" in hits[2].snippet  # <i> is words
    assert {h.provider for h in hits} == {"arxiv"} and hits[0].query == ML_QUESTION


async def test_arxiv_429_with_retry_after_is_waited_for_and_asked_again(
    services: Services,
) -> None:
    services.answer(
        "arxiv",
        Canned("arxiv_rate.txt", status=429, headers={"Retry-After": "5"}),
        Canned("arxiv_feed.xml"),
    )
    clock = FakeClock()
    async with paced("arxiv", services, clock) as arxiv:
        hits, failures = await ask(arxiv, ML_QUESTION)
    assert failures == [] and len(hits) == 3
    assert len(services.requests("arxiv")) == 2
    assert clock.slept == [5.0]  # the Retry-After, not arXiv's usual 3 s


async def test_a_long_retry_after_fails_at_once_and_holds_off_later_searches(
    services: Services,
) -> None:
    """A wait longer than the search may take is not waited: the Gaps line says what
    arXiv asked, and no later search of the process asks arXiv before that time."""
    services.answer("arxiv", Canned("arxiv_rate.txt", status=429, headers={"Retry-After": "600"}))
    clock = FakeClock()
    async with paced("arxiv", services, clock) as arxiv:
        _, failures = await ask(arxiv, ML_QUESTION)
        assert [f.reason for f in failures] == ["rate limited (HTTP 429): arXiv asks to wait 600s"]
        pacer = arxiv.pacer
    async with paced("arxiv", services, clock) as again:
        again.pacer = pacer
        _, failures = await ask(again, "transformer attention")
    assert [f.reason for f in failures] == ["rate limited: asked to wait 600s"]
    assert len(services.requests("arxiv")) == 1
    assert clock.slept == []


async def test_arxiv_requests_are_three_seconds_apart(services: Services) -> None:
    """arXiv asks for one request every three seconds: two different searches of a run
    are paced; the question and its keyword query (the same words) are asked once."""
    clock = FakeClock()
    async with paced("arxiv", services, clock) as arxiv:
        _, failures = await ask(
            arxiv, ML_QUESTION, "dense passage retrieval open-domain question answering"
        )
        assert failures == []
        assert len(services.requests("arxiv")) == 1
        await ask(arxiv, "transformer attention")
    assert len(services.requests("arxiv")) == 2
    assert clock.slept == [3.0]


async def test_entity_declarations_in_xml_are_refused(services: Services) -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY a "aaaaaaaaaa">'
        b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        b'<feed xmlns="http://www.w3.org/2005/Atom"><title>&b;</title></feed>'
    )
    services.answer("arxiv", Canned(body=bomb, content_type="application/atom+xml"))
    async with paced("arxiv", services) as arxiv:
        _, failures = await ask(arxiv, ML_QUESTION)
    assert [f.reason for f in failures] == ["invalid response (XML with entity declarations)"]


# --- PubMed ----------------------------------------------------------------------------


async def test_pubmed_finds_ids_then_reads_titles_and_abstracts(services: Services) -> None:
    async with paced("pubmed", services) as pubmed:
        hits, failures = await ask(pubmed, BIO_QUESTION)
    assert failures == []
    [search] = services.requests("esearch")
    assert search.params["term"] == "CRISPR gene editing treat sickle cell disease"
    assert search.params["db"] == "pubmed" and search.params["tool"] == "sleuth"
    assert "api_key" not in search.params
    [fetch] = services.requests("efetch")
    assert fetch.params["id"] == "33283989,31597037"
    assert summary(hits) == [  # in esearch's relevance order, not efetch's
        (
            1,
            "CRISPR-Cas9 Gene Editing for Sickle Cell Disease and beta-Thalassemia.",
            "https://pubmed.ncbi.nlm.nih.gov/33283989/",
        ),
        (
            2,
            "Gene editing of BCL11A enhancer in sickle cell disease.",
            "https://pubmed.ncbi.nlm.nih.gov/31597037/",
        ),
    ]
    assert hits[0].snippet == (
        "Background: Transfusion-dependent beta-thalassemia and sickle cell disease are "
        "monogenic diseases. Methods: Two patients received autologous CD34+ cells edited "
        "with CRISPR-Cas9. Results: Both patients had high levels of fetal hemoglobin "
        "after the infusion."
    )


async def test_pubmed_with_a_key_sends_it_and_may_go_faster(services: Services) -> None:
    """NCBI allows 3 requests a second, 10 with a key: esearch and efetch are 1/3 s apart
    without one, 0.11 s with one, and the key never appears in a failure."""
    clock = FakeClock()
    async with paced("pubmed", services, clock) as pubmed:
        await ask(pubmed, BIO_QUESTION)
    assert clock.slept == [0.34]
    clock = FakeClock()
    async with paced("pubmed", services, clock, env={"NCBI_API_KEY": "ncbi-secret"}) as pubmed:
        await ask(pubmed, BIO_QUESTION)
        assert clock.slept == [0.11]
        assert services.requests("efetch")[-1].params["api_key"] == "ncbi-secret"
        services.answer("esearch", Canned("pubmed_rate.json", status=403))
        _, failures = await ask(pubmed, "sickle cell gene therapy cost")
    [failure] = failures
    assert "ncbi-secret" not in failure.reason
    assert (
        failure.reason
        == "HTTP 403 Forbidden (is NCBI_API_KEY valid?): NCBI says “API rate limit exceeded”"
    )


async def test_pubmed_rate_limit_answer_is_honoured(services: Services) -> None:
    services.answer(
        "esearch",
        Canned("pubmed_rate.json", status=429, headers={"Retry-After": "1"}),
        Canned("pubmed_esearch.json"),
    )
    clock = FakeClock()
    async with paced("pubmed", services, clock) as pubmed:
        hits, failures = await ask(pubmed, BIO_QUESTION)
    assert failures == [] and len(hits) == 2
    assert len(services.requests("esearch")) == 2
    assert clock.slept[0] == 1.0


async def test_pubmed_finding_nothing_is_no_failure(services: Services) -> None:
    services.answer("esearch", Canned(body=b'{"esearchresult": {"count": "0", "idlist": []}}'))
    async with paced("pubmed", services) as pubmed:
        hits, failures = await ask(pubmed, "zzxq flurbish")
    assert hits == [] and failures == []
    assert services.requests("efetch") == []


# --- Semantic Scholar --------------------------------------------------------------------


async def test_semantic_scholar_gives_the_open_pdf_or_the_paper_page(services: Services) -> None:
    async with paced("semanticscholar", services) as s2:
        hits, failures = await ask(s2, ML_QUESTION)
    assert failures == []
    [request] = services.requests("s2")
    assert request.params["query"] == "dense passage retrieval open domain question answering"
    assert "x-api-key" not in {k.lower() for k in request.headers}
    assert summary(hits) == [
        (
            1,
            "Dense Passage Retrieval for Open-Domain Question Answering",
            "https://arxiv.org/pdf/2004.04906",
        ),
        (
            2,
            "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks",
            "https://www.semanticscholar.org/paper/58ed1fbaabe027345f7bb3a6312d41c5aac63e22",
        ),
    ]
    assert hits[1].snippet == "A general fine-tuning recipe for retrieval-augmented generation."


async def test_semantic_scholar_sends_its_key_in_a_header(services: Services) -> None:
    key = {"SEMANTIC_SCHOLAR_API_KEY": "s2-secret"}
    async with paced("semanticscholar", services, env=key) as s2:
        _, failures = await ask(s2, ML_QUESTION)
    assert failures == []
    assert services.requests("s2")[0].headers.get("x-api-key") == "s2-secret"


async def test_semantic_scholar_429_without_retry_after_backs_off_then_names_it(
    services: Services,
) -> None:
    services.answer("s2", Canned("s2_rate.json", status=429))
    clock = FakeClock()
    async with paced("semanticscholar", services, clock) as s2:
        _, failures = await ask(s2, ML_QUESTION)
    assert len(services.requests("s2")) == 2  # asked again once, after a back-off
    assert clock.slept == [5.0]
    assert [f.reason for f in failures] == [
        "rate limited (HTTP 429): Semantic Scholar asks to wait 5s"
    ]


# --- Wikipedia ---------------------------------------------------------------------------


async def test_wikipedia_gives_articles_in_search_order_with_their_introduction(
    services: Services,
) -> None:
    async with paced("wikipedia", services) as wiki:
        hits, failures = await ask(wiki, "What is a Hermitian matrix?")
    assert failures == []
    [request] = services.requests("/en/w/api.php")
    assert request.params["gsrsearch"] == "Hermitian matrix"
    assert request.params["generator"] == "search" and request.params["maxlag"] == "5"
    assert summary(hits) == [
        (1, "Hermitian matrix", "https://en.wikipedia.org/wiki/Hermitian_matrix"),
        (2, "Self-adjoint operator", "https://en.wikipedia.org/wiki/Self-adjoint_operator"),
    ]
    assert hits[0].snippet.startswith("In mathematics, a Hermitian matrix")


@pytest.mark.parametrize(
    ("lang", "question", "wiki"),
    [
        ("de", "Was ist eine hermitesche Matrix?", "de"),
        ("zh-TW", "Hermitian matrix", "zh"),
        ("French", "matrice hermitienne", "fr"),
        (None, "什么是埃尔米特矩阵？", "zh"),
        (None, "エルミート行列とは", "ja"),
    ],
)
async def test_wikipedia_searches_the_language_asked_for(
    services: Services, lang: str | None, question: str, wiki: str
) -> None:
    services.answer(f"/{wiki}/w/api.php", Canned("wikipedia_search.json"))
    async with paced("wikipedia", services, lang=lang) as provider:
        hits, failures = await ask(provider, question)
    assert failures == [] and hits
    assert len(services.requests(f"/{wiki}/w/api.php")) == 1
    if lang:  # the wiki is in the endpoint that keys the search cache: no answer in
        # another language is taken from the cache
        assert provider.base_url.endswith(f"/{wiki}/w/api.php")


async def test_wikipedia_maxlag_is_waited_for_and_asked_again(services: Services) -> None:
    services.answer(
        "/en/w/api.php",
        Canned("wikipedia_maxlag.json", headers={"Retry-After": "5"}),
        Canned("wikipedia_search.json"),
    )
    clock = FakeClock()
    async with paced("wikipedia", services, clock) as wiki:
        hits, failures = await ask(wiki, "Hermitian matrix")
    assert failures == [] and len(hits) == 2 and clock.slept == [5.0]


# --- GitHub ------------------------------------------------------------------------------


async def test_github_repositories_with_their_description(services: Services) -> None:
    async with paced("github", services) as github:
        hits, failures = await ask(github, "How do I parse PDF files in Python with a library?")
    assert failures == []
    [request] = services.requests("github")
    assert request.params["q"] == "parse PDF files Python library"
    assert request.headers.get("X-GitHub-Api-Version") == "2022-11-28"
    assert "Authorization" not in request.headers
    assert [(h.title, h.url, h.snippet) for h in hits] == [
        (
            "py-pdf/pypdf",
            "https://github.com/py-pdf/pypdf",
            "A pure-python PDF library capable of splitting, merging, cropping, and "
            "transforming the pages of PDF files (Python, 8,912 stars)",
        ),
        ("pdfminer/pdfminer.six", "https://github.com/pdfminer/pdfminer.six", "6,201 stars"),
    ]


async def test_github_spent_quota_names_its_reset_and_is_not_asked_again(
    services: Services,
) -> None:
    """GitHub says the quota is spent with a 403 and x-ratelimit-remaining: 0; the reset
    is far off, so the search fails at once, saying so, with the token masked."""
    services.answer(
        "github",
        Canned(
            "github_rate.json",
            status=403,
            headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "9999999999"},
        ),
    )
    token = {"GITHUB_TOKEN": "ghp-secret"}
    clock = FakeClock()
    async with paced("github", services, clock, env=token) as github:
        _, failures = await ask(github, "pdf parser python")
        assert services.requests("github")[0].headers["Authorization"] == "Bearer ghp-secret"
        _, again = await ask(github, "python pdf library")
    [failure] = failures
    assert failure.reason.startswith("rate limited (HTTP 403): GitHub asks to wait ")
    assert again[0].reason.startswith("rate limited: asked to wait ")
    assert len(services.requests("github")) == 1
    assert clock.slept == []


async def test_github_code_search_needs_a_token_and_shows_the_matching_lines(
    services: Services,
) -> None:
    with pytest.raises(ProviderError, match="needs GITHUB_TOKEN"):
        async with paced("github-code", services):
            pass
    async with paced("github-code", services, env={"GITHUB_TOKEN": "ghp-secret"}) as code:
        hits, failures = await ask(code, "PdfReader pypdf")
        services.answer("github-code", Canned("github_invalid.json", status=422))
        _, invalid = await ask(code, "pypdf merge")
    assert failures == []
    [request] = services.requests("github-code")[:1]
    assert request.headers["Accept"] == "application/vnd.github.text-match+json"
    assert [(h.title, h.snippet) for h in hits] == [
        (
            "py-pdf/pypdf: pypdf/_reader.py",
            'class PdfReader: """Initialize a PdfReader object.',
        )
    ]
    assert [f.reason for f in invalid] == [
        "HTTP 422 Unprocessable Entity: GitHub says “Validation Failed”"
    ]


# --- pacing ------------------------------------------------------------------------------


def test_retry_after_reads_seconds_and_dates() -> None:
    assert retry_after("120") == 120.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after("soon") is None and retry_after(None) is None


async def test_a_turn_past_the_search_deadline_is_refused_in_words() -> None:
    clock = FakeClock()
    pacer = Pacer(clock=clock, sleep=clock.sleep)
    rule = Limit(6.0, "10 searches a minute")
    for _ in range(3):
        async with pacer.turn("k", rule, deadline=clock.now + 12):
            pass
    with pytest.raises(Exception, match=r"rate limit \(10 searches a minute\): the next turn"):
        async with pacer.turn("k", rule, deadline=clock.now + 5):
            pass
    assert clock.slept == [6.0, 6.0]


async def test_a_key_never_follows_a_redirect_and_no_key_does(services: Services) -> None:
    """A redirect could take a key to another host: with a key it is a failure, without
    one it is followed (arXiv's http:// address redirects to https://)."""
    moved = {"Location": f"{services.base_url}/elsewhere/esearch.fcgi"}
    services.answer("esearch", Canned(status=302, headers=moved))
    services.answer("/elsewhere/esearch.fcgi", Canned("pubmed_esearch.json"))
    async with paced("pubmed", services, env={"NCBI_API_KEY": "ncbi-secret"}) as pubmed:
        _, failures = await ask(pubmed, BIO_QUESTION)
    assert [f.reason for f in failures] == ["HTTP 302 Found"]
    assert services.requests("/elsewhere/esearch.fcgi") == []
    async with paced("pubmed", services) as pubmed:
        hits, failures = await ask(pubmed, BIO_QUESTION)
    assert failures == [] and len(hits) == 2
    assert len(services.requests("/elsewhere/esearch.fcgi")) == 1
