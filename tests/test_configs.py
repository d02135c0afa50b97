"""Each service reads a small config record of its own, made from the settings at the edge
(``FetchConfig``, ``SearchConfig``, as ``LLMConfig``): what it holds is what the settings say,
and a service given the record behaves as given the settings."""

from __future__ import annotations

import pytest

import sleuth
from sleuth.errors import BlockedURLError
from sleuth.fetch import FetchConfig, Fetcher
from sleuth.models import Page
from sleuth.search import SearchConfig, build_providers, make_search_client
from sleuth.settings import Settings
from sleuth.testing import OfflineWeb


def test_a_config_holds_what_the_settings_say() -> None:
    settings = Settings(
        timeout=3.0,
        deny_domains=["b.example"],
        max_pages_per_host=2,
        searxng_url="http://s.example",
    )
    fetch = FetchConfig.of(settings)
    assert (fetch.timeout, fetch.deny_domains, fetch.max_pages_per_host) == (
        3.0,
        ("b.example",),
        2,
    )
    assert FetchConfig.of(fetch) is fetch
    search = SearchConfig.of(settings)
    assert search.searxng_url == "http://s.example" and search.search == tuple(settings.search)
    # A mapping of the settings' fields does as well as the table.
    assert FetchConfig.of(settings.model_dump()) == fetch
    with pytest.raises(KeyError):  # never a config made from half the settings
        FetchConfig.of({"timeout": 3.0})


async def test_the_fetcher_given_its_config_keeps_the_settings_rules(web: OfflineWeb) -> None:
    config = FetchConfig.of(Settings(allow_private_urls=True, timeout=5.0))
    async with Fetcher(config) as fetcher:
        assert isinstance(await fetcher.fetch(web.docs[0].url), Page)
    denied = FetchConfig.of(Settings(allow_private_urls=True, deny_domains=["127.0.1.1"]))
    async with Fetcher(denied) as fetcher:
        result = await fetcher.fetch(web.docs[0].url)
    assert not isinstance(result, Page) and result.reason.startswith("blocked: ")


async def test_the_providers_given_their_config_search_as_set(web: OfflineWeb) -> None:
    config = SearchConfig.of(Settings(search=["searxng"], searxng_url=web.searxng_url))
    async with make_search_client(config) as client:
        [provider] = build_providers(config, client, env={})
        hits = await provider.search(web.topics[0].question, limit=3)
    assert hits and all(isinstance(h.url, str) for h in hits)
    assert isinstance(provider.settings, SearchConfig)


async def test_fetch_page_without_settings_reads_them_from_the_environment(
    web: OfflineWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = web.docs[0].url
    with pytest.raises(BlockedURLError):  # the offline web is on loopback: refused by default
        await sleuth.fetch_page(url)
    monkeypatch.setenv("SLEUTH_ALLOW_PRIVATE_URLS", "1")
    page = await sleuth.fetch_page(url)
    assert page.final_url == url
