"""Stage 2: search providers, fallback between them, and the failures a user gets to see.

Nothing here leaves the machine: the keyed APIs answer through ``httpx.MockTransport``,
``ddgs`` is replaced by a fake class, and SearXNG is served on loopback by ``OfflineWeb``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import subprocess
import sys
import types
from collections.abc import Callable
from importlib.metadata import EntryPoint
from typing import Any, ClassVar

import httpx
import pytest

from sleuth.errors import ProviderError
from sleuth.models import SearchHit
from sleuth.progress import Event
from sleuth.search import (
    ProviderFailure,
    SearchProvider,
    build_providers,
    get_provider,
    make_search_client,
    provider_names,
    register,
    run_searches,
)
from sleuth.search import base as search_base
from sleuth.settings import Settings

Handler = Callable[[httpx.Request], httpx.Response]
BUILT_IN = ["brave", "duckduckgo", "google", "searxng", "serpapi", "serper", "tavily"]
BUILT_IN += ["arxiv", "auto", "github", "github-code", "pubmed", "semanticscholar", "wikipedia"]
KEYS = {
    "SERPER_API_KEY": "sk-serper-secret",
    "SERPAPI_API_KEY": "sk-serpapi-secret",
    "GOOGLE_API_KEY": "g-key-secret",
    "GOOGLE_CSE_ID": "cse-123",
    "BRAVE_API_KEY": "brave-secret",
    "TAVILY_API_KEY": "tvly-secret",
}


def client_for(handler: Handler) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def provider(
    name: str, handler: Handler, env: dict[str, str] | None = None, **options: Any
) -> SearchProvider:
    settings = Settings(search=[name], **options)
    return get_provider(name)(settings, client_for(handler), KEYS if env is None else env)


def answer(body: object, status: int = 200) -> Handler:
    return lambda request: httpx.Response(status, json=body)


def summary(hits: list[SearchHit]) -> list[tuple[int, str, str, str]]:
    return [(h.rank, h.title, h.url, h.snippet) for h in hits]


# --- the keyed JSON APIs: exact request, parsed answer ---------------------------------

EXPECTED_HITS = [
    (1, "First result", "https://one.example/a", "About one"),
    (2, "Second result", "https://two.example/b", "About two"),
]

# name -> (method, endpoint, query params, JSON body, headers that must be sent, answer)
API_CASES: dict[str, tuple[str, str, dict[str, str], Any, dict[str, str], object]] = {
    "serper": (
        "POST",
        "https://google.serper.dev/search",
        {},
        {"q": "rust async", "num": 3},
        {"X-API-KEY": "sk-serper-secret"},
        {
            "organic": [
                {"title": "First result", "link": "https://one.example/a", "snippet": "About one"},
                {"title": "No link here", "snippet": "skipped"},
                {"title": "Second result", "link": "https://two.example/b", "snippet": "About two"},
            ]
        },
    ),
    "serpapi": (
        "GET",
        "https://serpapi.com/search.json",
        {"engine": "google", "q": "rust async", "num": "3", "api_key": "sk-serpapi-secret"},
        None,
        {},
        {
            "organic_results": [
                {"title": "First result", "link": "https://one.example/a", "snippet": "About one"},
                {"title": "Not the web", "link": "ftp://files.example/x"},
                {"title": "Second result", "link": "https://two.example/b", "snippet": "About two"},
            ]
        },
    ),
    "google": (
        "GET",
        "https://www.googleapis.com/customsearch/v1",
        {"key": "g-key-secret", "cx": "cse-123", "q": "rust async", "num": "3"},
        None,
        {},
        {
            "items": [
                {"title": "First result", "link": "https://one.example/a", "snippet": "About one"},
                "not an object",
                {"title": "Second result", "link": "https://two.example/b", "snippet": "About two"},
            ]
        },
    ),
    "brave": (
        "GET",
        "https://api.search.brave.com/res/v1/web/search",
        {"q": "rust async", "count": "3"},
        None,
        {"X-Subscription-Token": "brave-secret", "Accept": "application/json"},
        {
            "web": {
                "results": [
                    {
                        "title": "First result",
                        "url": "https://one.example/a",
                        "description": "About <strong>one</strong>",
                    },
                    {"title": "Missing URL", "url": None},
                    {
                        "title": "Second result",
                        "url": "https://two.example/b",
                        "description": "About two",
                    },
                ]
            }
        },
    ),
    "tavily": (
        "POST",
        "https://api.tavily.com/search",
        {},
        {"query": "rust async", "max_results": 3, "search_depth": "basic"},
        {"Authorization": "Bearer tvly-secret"},
        {
            "results": [
                {"title": "First result", "url": "https://one.example/a", "content": "About one"},
                {"title": "Duplicate", "url": "https://one.example/a", "content": "again"},
                {"title": "Second result", "url": "https://two.example/b", "content": "About two"},
            ]
        },
    ),
}


@pytest.mark.parametrize("name", sorted(API_CASES))
async def test_keyed_api_sends_the_documented_request_and_parses_hits(name: str) -> None:
    method, endpoint, params, body, headers, reply = API_CASES[name]
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=reply)

    hits = await provider(name, handler).search("rust async", limit=3)

    (request,) = seen
    assert request.method == method
    assert str(request.url.copy_with(query=None)) == endpoint
    assert dict(request.url.params) == params
    if body is not None:
        assert json.loads(request.content) == body
    for header, value in headers.items():
        assert request.headers[header] == value
    assert summary(hits) == EXPECTED_HITS
    assert {(h.provider, h.query) for h in hits} == {(name, "rust async")}


@pytest.mark.parametrize(
    ("name", "limit", "field", "sent"),
    [
        ("google", 25, "num", "10"),
        ("brave", 30, "count", "20"),
        ("serpapi", 30, "num", "30"),
    ],
)
async def test_result_counts_are_capped_where_the_api_has_a_maximum(
    name: str, limit: int, field: str, sent: str
) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={})

    assert await provider(name, handler).search("q", limit=limit) == []
    assert seen[0].url.params[field] == sent


async def test_hits_never_exceed_the_limit() -> None:
    organic = [{"title": f"r{i}", "link": f"https://r{i}.example/"} for i in range(10)]
    hits = await provider("serper", answer({"organic": organic})).search("q", limit=4)
    assert [h.rank for h in hits] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("name", "env", "variable"),
    [
        ("serper", {}, "SERPER_API_KEY"),
        ("serpapi", {}, "SERPAPI_API_KEY"),
        ("google", {"GOOGLE_CSE_ID": "cse"}, "GOOGLE_API_KEY"),
        ("google", {"GOOGLE_API_KEY": "k"}, "GOOGLE_CSE_ID"),
        ("brave", {"BRAVE_API_KEY": ""}, "BRAVE_API_KEY"),
        ("tavily", {}, "TAVILY_API_KEY"),
    ],
)
def test_keyed_provider_without_its_key_names_the_variable(
    name: str, env: dict[str, str], variable: str
) -> None:
    with pytest.raises(ProviderError, match=variable) as info:
        provider(name, answer({}), env=env)
    assert f"'{name}'" in str(info.value)


async def test_serpapi_error_field_is_a_failure_but_no_results_is_not() -> None:
    bad = provider("serpapi", answer({"error": "Your account has run out of searches."}))
    with pytest.raises(ProviderFailure, match="serpapi error: Your account has run out"):
        await bad.search("q", limit=5)
    empty = provider(
        "serpapi",
        answer(
            {
                "error": "Google hasn't returned any results for this query.",
                "search_information": {"organic_results_state": "Fully empty"},
            }
        ),
    )
    assert await empty.search("q", limit=5) == []


# --- failures as the user sees them -----------------------------------------------------


def raise_timeout(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadTimeout("read timed out", request=request)


@pytest.mark.parametrize(
    ("name", "handler", "reason"),
    [
        ("serper", answer({"message": "slow down"}, 429), "rate limited (HTTP 429)"),
        ("brave", answer({}, 500), "HTTP 500"),
        ("tavily", answer({}, 503), "HTTP 503"),
        ("serper", answer({}, 401), "HTTP 401 (is SERPER_API_KEY valid?)"),
        ("google", raise_timeout, "timed out after 7s"),
        ("brave", lambda r: httpx.Response(200, text="<html>not json</html>"), "invalid response"),
        ("serper", answer({"organic": "not a list"}), "invalid response"),
        ("serper", answer(["not", "an", "object"]), "invalid response"),
    ],
)
async def test_http_problems_become_recorded_failures(
    name: str, handler: Handler, reason: str
) -> None:
    events: list[Event] = []
    hits, failures = await run_searches(
        ["rust async"],
        [provider(name, handler, search_timeout=7)],
        limit=5,
        timeout=5,
        on_event=events.append,
    )
    assert hits == []
    assert [(f.provider, f.query, f.reason) for f in failures] == [(name, "rust async", reason)]
    assert [(e.kind, e.data) for e in events] == [
        ("search_failed", {"query": "rust async", "provider": name, "reason": reason})
    ]


async def test_api_keys_never_appear_in_failure_reasons() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot reach {request.url}", request=request)

    providers = [
        provider("google", refuse),
        provider("serpapi", answer({"error": "Invalid API key sk-serpapi-secret"})),
    ]
    _, failures = await run_searches(["q"], providers, limit=5, timeout=5)
    assert len(failures) == 2
    assert failures[0].reason.startswith("request failed: cannot reach")
    text = " ".join(f.reason for f in failures)
    assert "g-key-secret" not in text and "sk-serpapi-secret" not in text


async def test_api_keys_in_urls_are_masked_in_the_httpx_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="httpx")
    await provider("google", answer({"items": []})).search("q", limit=3)
    assert "HTTP Request" in caplog.text
    assert "g-key-secret" not in caplog.text
    assert "key=***" in caplog.text


# --- SearXNG ----------------------------------------------------------------------------


async def test_searxng_queries_the_json_api_of_the_configured_instance() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json={
                "results": [
                    {
                        "url": "https://one.example/a",
                        "title": "First result",
                        "content": "About one",
                    },
                    {"title": "no url"},
                    {
                        "url": "https://two.example/b",
                        "title": "Second result",
                        "content": "About two",
                    },
                ]
            },
        )

    searx = provider("searxng", handler, env={}, searxng_url="http://searx.local:8888/")
    hits = await searx.search("rust async", limit=5)

    assert str(seen[0].url.copy_with(query=None)) == "http://searx.local:8888/search"
    assert dict(seen[0].url.params) == {"q": "rust async", "format": "json", "pageno": "1"}
    assert summary(hits) == EXPECTED_HITS
    assert hits[0].provider == "searxng"


def test_searxng_without_a_url_says_how_to_set_one() -> None:
    with pytest.raises(ProviderError) as info:
        provider("searxng", answer({}), env={})
    assert str(info.value) == "search provider 'searxng' needs --searxng-url or SLEUTH_SEARXNG_URL"


@pytest.mark.parametrize(
    ("reply", "status", "reason"),
    [
        (
            {"results": [], "unresponsive_engines": [["google", "CAPTCHA"], ["bing", "timeout"]]},
            200,
            "no engine answered (bing, google)",
        ),
        ({}, 403, "HTTP 403 (is the json format enabled in the instance's settings.yml?)"),
    ],
)
async def test_searxng_explains_an_unusable_answer(reply: object, status: int, reason: str) -> None:
    searx = provider("searxng", answer(reply, status), env={}, searxng_url="http://searx.local")
    _, failures = await run_searches(["q"], [searx], limit=5, timeout=5)
    assert [f.reason for f in failures] == [reason]


async def test_searxng_through_a_real_loopback_server(request: pytest.FixtureRequest) -> None:
    if importlib.util.find_spec("sleuth.testing.web") is None:
        pytest.skip("sleuth/testing/web.py (OfflineWeb and the `web` fixture) is not there yet")
    web = request.getfixturevalue("web")
    settings = Settings(search=["searxng"], searxng_url=web.searxng_url)
    async with make_search_client(settings) as client:
        providers = build_providers(settings, client, env={})
        hits, failures = await run_searches(["python asyncio"], providers, limit=5, timeout=10)
        assert failures == []
        assert hits and all(h.provider == "searxng" and h.query == "python asyncio" for h in hits)
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))

        web.search_failures = 1
        hits, failures = await run_searches(["python asyncio"], providers, limit=5, timeout=10)
        assert hits == []
        assert [f.reason for f in failures] == ["HTTP 500"]


# --- DuckDuckGo (ddgs replaced by a fake: no network) -----------------------------------


class FakeDDGS:
    """Stands in for ``ddgs.DDGS``: canned rows, or the exception set in ``error``."""

    rows: ClassVar[list[dict[str, str]]] = []
    error: ClassVar[Exception | None] = None
    calls: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, timeout: int | None = 5, **kwargs: Any) -> None:
        self.timeout = timeout

    def text(self, query: str, **kwargs: Any) -> list[dict[str, str]]:
        FakeDDGS.calls.append({"query": query, "timeout": self.timeout, **kwargs})
        if FakeDDGS.error is not None:
            raise FakeDDGS.error
        return FakeDDGS.rows


@pytest.fixture
def fake_ddgs(monkeypatch: pytest.MonkeyPatch) -> type[FakeDDGS]:
    import ddgs

    monkeypatch.setattr(ddgs, "DDGS", FakeDDGS)
    monkeypatch.setattr(FakeDDGS, "rows", [])
    monkeypatch.setattr(FakeDDGS, "error", None)
    monkeypatch.setattr(FakeDDGS, "calls", [])
    return FakeDDGS


async def test_duckduckgo_turns_ddgs_rows_into_hits(fake_ddgs: type[FakeDDGS]) -> None:
    fake_ddgs.rows = [
        {"title": "First result", "href": "https://one.example/a", "body": "About one"},
        {"title": "No href", "body": "skipped"},
        {"title": "Second result", "href": "https://two.example/b", "body": "About two"},
    ]
    ddg = provider("duckduckgo", answer({}), env={}, search_timeout=12.5)
    hits = await ddg.search("rust async", limit=4)
    assert summary(hits) == EXPECTED_HITS
    assert hits[0].provider == "duckduckgo"
    assert fake_ddgs.calls == [
        {"query": "rust async", "timeout": 13, "max_results": 4, "backend": "auto"}
    ]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ("RatelimitException", "rate limited"),
        ("TimeoutException", "timed out after 15s"),
        ("DDGSException", "search failed: https://html.duckduckgo.com 403 Forbidden"),
    ],
)
async def test_duckduckgo_errors_become_recorded_failures(
    fake_ddgs: type[FakeDDGS], error: str, reason: str
) -> None:
    from ddgs import exceptions

    fake_ddgs.error = getattr(exceptions, error)("https://html.duckduckgo.com 403 Forbidden")
    ddg = provider("duckduckgo", answer({}), env={})
    hits, failures = await run_searches(["q"], [ddg], limit=5, timeout=5)
    assert hits == []
    assert [(f.provider, f.reason) for f in failures] == [("duckduckgo", reason)]


async def test_duckduckgo_no_results_is_not_a_failure(fake_ddgs: type[FakeDDGS]) -> None:
    from ddgs.exceptions import DDGSException

    fake_ddgs.error = DDGSException("No results found.")
    events: list[Event] = []
    hits, failures = await run_searches(
        ["q"],
        [provider("duckduckgo", answer({}), env={})],
        limit=5,
        timeout=5,
        on_event=events.append,
    )
    assert (hits, failures) == ([], [])
    assert [(e.kind, e.data["hits"]) for e in events] == [("search", 0)]


def test_importing_the_search_stage_does_not_load_ddgs_engines() -> None:
    code = "import sys, sleuth.search; print('ddgs.ddgs' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- fallback, concurrency and ordering -------------------------------------------------


def keyed_env_and_routes(routes: dict[str, Handler]) -> Handler:
    """One transport for several APIs, routed by host."""
    return lambda request: routes[request.url.host](request)


async def test_fallback_uses_the_next_provider_and_records_the_failure() -> None:
    brave_reply = {"web": {"results": [{"title": "B", "url": "https://b.example/"}]}}
    handler = keyed_env_and_routes(
        {"google.serper.dev": answer({}, 503), "api.search.brave.com": answer(brave_reply)}
    )
    settings = Settings(search=["serper", "brave"])
    async with client_for(handler) as client:
        providers = build_providers(settings, client, KEYS)
        events: list[Event] = []
        hits, failures = await run_searches(
            ["rust async"], providers, limit=5, timeout=5, on_event=events.append
        )
    assert [(h.provider, h.url, h.query) for h in hits] == [
        ("brave", "https://b.example/", "rust async")
    ]
    assert [(f.provider, f.reason) for f in failures] == [("serper", "HTTP 503")]
    assert [(e.kind, e.data.get("provider")) for e in events] == [
        ("search_failed", "serper"),
        ("search", "brave"),
    ]
    assert events[1].data == {"query": "rust async", "provider": "brave", "hits": 1}


class Scripted(SearchProvider):
    """A test provider whose answer per query is scripted: hits, an exception, or a delay."""

    name = "scripted"

    def __init__(self, label: str, script: dict[str, Any], delay: float = 0.0) -> None:
        super().__init__(Settings(), httpx.AsyncClient(), {})
        self.label, self.script, self.delay = label, script, delay
        self.asked: list[str] = []
        self.in_flight = self.most_in_flight = 0

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        self.asked.append(query)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.script.get(("delay", query), self.delay))
            outcome = self.script.get(query, 2)
            if isinstance(outcome, BaseException):
                raise outcome
            return [
                SearchHit(
                    title=f"{query} {i}",
                    url=f"https://{self.label}.example/{i}",
                    rank=i,
                    provider=self.label,
                )
                for i in range(outcome, 0, -1)
            ]
        finally:
            self.in_flight -= 1


async def test_a_provider_with_no_hits_passes_the_query_on_without_a_failure() -> None:
    first, second = Scripted("first", {"q": 0}), Scripted("second", {})
    hits, failures = await run_searches(["q"], [first, second], limit=5, timeout=5)
    assert [h.provider for h in hits] == ["second", "second"]
    assert failures == []


async def test_one_failing_query_does_not_stop_the_others() -> None:
    scripted = Scripted("only", {"bad": RuntimeError("boom")})
    hits, failures = await run_searches(
        ["good one", "bad", "good two"], [scripted], limit=5, timeout=5
    )
    assert [(h.query, h.rank) for h in hits] == [
        ("good one", 1),
        ("good one", 2),
        ("good two", 1),
        ("good two", 2),
    ]
    assert [(f.query, f.reason) for f in failures] == [
        ("bad", "unexpected error: RuntimeError: boom")
    ]


async def test_a_slow_provider_times_out_and_the_next_one_answers() -> None:
    slow, fast = Scripted("slow", {}, delay=5), Scripted("fast", {})
    hits, failures = await run_searches(["q"], [slow, fast], limit=5, timeout=0.05)
    assert {h.provider for h in hits} == {"fast"}
    assert [(f.provider, f.reason) for f in failures] == [("scripted", "timed out after 0.05s")]


async def test_results_come_back_in_query_order_whatever_finishes_first() -> None:
    scripted = Scripted("p", {("delay", "a"): 0.05, ("delay", "b"): 0.0, "c": 1})
    hits, _ = await run_searches(["a", "b", "c"], [scripted], limit=5, timeout=5)
    assert [(h.query, h.rank) for h in hits] == [("a", 1), ("a", 2), ("b", 1), ("b", 2), ("c", 1)]
    assert all(h.query for h in hits)


async def test_queries_run_in_parallel_but_bounded_and_repeats_run_once() -> None:
    scripted = Scripted("p", {}, delay=0.02)
    queries = [f"q{i}" for i in range(8)] + ["q0", "  "]
    hits, _ = await run_searches(queries, [scripted], limit=1, timeout=5, concurrency=3)
    assert scripted.most_in_flight == 3
    assert sorted(scripted.asked) == [f"q{i}" for i in range(8)]
    assert [h.query for h in hits] == [f"q{i}" for i in range(8)]


async def test_programming_errors_still_propagate() -> None:
    with pytest.raises(ValueError, match="at least one provider"):
        await run_searches(["q"], [], limit=5, timeout=5)


# --- configuration: names, keys, plugins ------------------------------------------------


def refuse_all(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"no request may be sent while configuring: {request.url}")


def test_build_providers_keeps_the_configured_fallback_order() -> None:
    settings = Settings(search=["brave", "serper", "duckduckgo"])
    providers = build_providers(settings, client_for(refuse_all), KEYS)
    assert [p.name for p in providers] == ["brave", "serper", "duckduckgo"]


def test_unknown_provider_lists_the_known_names() -> None:
    with pytest.raises(ProviderError) as info:
        build_providers(Settings(search=["bingo"]), client_for(refuse_all), {})
    message = str(info.value)
    assert "unknown search provider 'bingo'" in message
    for name in BUILT_IN:
        assert name in message


def test_every_problem_is_reported_before_any_search_starts() -> None:
    settings = Settings(search=["duckduckgo", "serper", "bingo", "searxng"])
    with pytest.raises(ProviderError) as info:
        build_providers(settings, client_for(refuse_all), {})
    message = str(info.value)
    assert "SERPER_API_KEY" in message and "'bingo'" in message and "--searxng-url" in message


def test_all_built_in_providers_are_registered() -> None:
    assert set(BUILT_IN) <= set(provider_names())


class PluginProvider(SearchProvider):
    """A third-party provider, as a package would ship it."""

    name = "plugged"

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        return [
            SearchHit(
                title="From the plugin", url="https://plugin.example/", rank=1, provider=self.name
            )
        ]


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_base, "_REGISTRY", dict(search_base._REGISTRY))
    monkeypatch.setattr(search_base, "_ENTRY_POINTS", {})
    monkeypatch.setattr(search_base, "_entry_points_loaded", False)


def fake_entry_points(monkeypatch: pytest.MonkeyPatch, *points: EntryPoint) -> None:
    def entry_points(group: str) -> list[EntryPoint]:
        return [p for p in points if p.group == group]

    monkeypatch.setattr(search_base, "entry_points", entry_points)


@pytest.mark.usefixtures("clean_registry")
async def test_a_provider_plugged_in_through_an_entry_point_is_usable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = types.ModuleType("sleuth_test_plugin")
    module.PluginProvider = PluginProvider  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sleuth_test_plugin", module)
    fake_entry_points(
        monkeypatch,
        EntryPoint(
            name="plugged",
            value="sleuth_test_plugin:PluginProvider",
            group="sleuth.search_providers",
        ),
    )

    assert "plugged" in provider_names()
    providers = build_providers(Settings(search=["plugged"]), client_for(refuse_all), {})
    hits, failures = await run_searches(["q"], providers, limit=3, timeout=5)
    assert [(h.title, h.provider, h.query) for h in hits] == [("From the plugin", "plugged", "q")]
    assert failures == []


@pytest.mark.usefixtures("clean_registry")
def test_a_broken_plugin_is_a_config_error_only_when_chosen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_entry_points(
        monkeypatch,
        EntryPoint(
            name="broken", value="sleuth_no_such_module:Provider", group="sleuth.search_providers"
        ),
    )
    assert build_providers(Settings(search=["duckduckgo"]), client_for(refuse_all), {})
    with pytest.raises(ProviderError, match="'broken' could not be loaded"):
        build_providers(Settings(search=["broken"]), client_for(refuse_all), {})


@pytest.mark.usefixtures("clean_registry")
def test_register_makes_a_class_available_by_name() -> None:
    @register
    class Extra(PluginProvider):
        name = "extra"

    assert get_provider("extra") is Extra
    assert "extra" in provider_names()


async def test_search_client_identifies_sleuth_and_uses_the_search_timeout() -> None:
    from sleuth._version import __version__

    async with make_search_client(Settings(search_timeout=9)) as client:
        assert client.headers["User-Agent"] == f"sleuth/{__version__}"
        assert client.timeout.read == 9
    async with make_search_client(Settings(user_agent="my-agent/1.0")) as client:
        assert client.headers["User-Agent"] == "my-agent/1.0"
