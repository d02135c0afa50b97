"""The store as the pipeline's cache: pages (with conditional revalidation), failures,
local documents, searches, LLM replies, and how local documents rank.

Servers are ``httpx.MockTransport`` handlers or the scripted LLM; time is a fake
clock handed to the store, so nothing here sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sleuth.extraction.documents import DocumentExtractor
from sleuth.fetch import Fetcher
from sleuth.llm.client import LLMClient
from sleuth.llm.config import LLMConfig
from sleuth.models import FetchFailure, Page, Quality, SearchHit
from sleuth.pipeline.cached import (
    TRANSIENT_FAILURE_TTL_S,
    CachedProvider,
    DocumentReader,
    StorePageCache,
    StoreReplyCache,
    failure_ttl,
)
from sleuth.search.base import ProviderFailure, SearchProvider
from sleuth.settings import Settings
from sleuth.stages.rank import rank
from sleuth.store import Store, file_url, index_folder
from sleuth.testing.llm import ScriptedLLM

DAY = 86_400.0
URL = "https://docs.example.org/guide"
BODY = (
    "<html><head><title>The guide</title></head><body><article><p>"
    + "Write-ahead logging keeps readers and the writer apart. " * 20
    + "</p></article></body></html>"
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class Site:
    """A page whose server speaks ETag / Last-Modified and logs what it was asked."""

    def __init__(self) -> None:
        self.body = BODY
        self.etag: str | None = '"v1"'
        self.last_modified: str | None = None
        self.status = 200
        self.asked: list[dict[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        conditional = {
            k: v for k, v in request.headers.items() if k in ("if-none-match", "if-modified-since")
        }
        self.asked.append(conditional)
        headers = {"content-type": "text/html; charset=utf-8"}
        if self.etag:
            headers["etag"] = self.etag
        if self.last_modified:
            headers["last-modified"] = self.last_modified
        unchanged = (self.etag and conditional.get("if-none-match") == self.etag) or (
            self.last_modified and conditional.get("if-modified-since") == self.last_modified
        )
        if unchanged:
            return httpx.Response(304, headers=headers)
        return httpx.Response(self.status, headers=headers, text=self.body)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[Store]:
    with Store(tmp_path / "home", clock=clock) as opened:
        yield opened


async def fetch(
    site: Site, cache: StorePageCache, url: str = URL
) -> tuple[Page | FetchFailure, int]:
    settings = Settings(max_chars=cache.max_chars)
    async with Fetcher(settings, transport=httpx.MockTransport(site), cache=cache) as fetcher:
        result = await fetcher.fetch(url)
    return result, fetcher.cache_hits


# ---------------------------------------------------------------- pages


async def test_fresh_page_comes_from_the_cache_without_a_request(store: Store) -> None:
    site = Site()
    cache = StorePageCache(store, max_age_s=DAY, max_chars=30_000)
    first, hits = await fetch(site, cache)
    assert isinstance(first, Page) and hits == 0 and len(site.asked) == 1
    again, hits = await fetch(site, cache, URL + "?utm_source=feed")  # same canonical URL
    assert len(site.asked) == 1 and hits == 1
    assert isinstance(again, Page) and again.text == first.text and again.engine == "cache"
    assert again.url == URL + "?utm_source=feed"


async def test_stale_page_is_revalidated_and_a_304_reuses_it(store: Store, clock: Clock) -> None:
    site = Site()
    cache = StorePageCache(store, max_age_s=DAY, max_chars=30_000)
    first, _ = await fetch(site, cache)
    clock.now += 2 * DAY
    again, hits = await fetch(site, cache)
    assert site.asked[-1] == {"if-none-match": '"v1"'}
    assert hits == 1 and isinstance(again, Page) and again.text == first.text
    entry = store.get_page(URL)
    assert entry is not None and entry.fetched_at == clock.now  # fresh again
    # Fresh after the 304: no request at all the next time.
    await fetch(site, cache)
    assert len(site.asked) == 2


async def test_stale_page_that_changed_is_downloaded_again(store: Store, clock: Clock) -> None:
    site = Site()
    cache = StorePageCache(store, max_age_s=DAY, max_chars=30_000)
    await fetch(site, cache)
    site.etag, site.body = '"v2"', BODY.replace("Write-ahead logging", "Rollback journals")
    clock.now += 2 * DAY
    again, hits = await fetch(site, cache)
    assert hits == 0 and isinstance(again, Page) and "Rollback journals" in again.text
    entry = store.get_page(URL)
    assert entry is not None and entry.etag == '"v2"' and "Rollback" in (entry.text or "")


async def test_last_modified_is_used_when_there_is_no_etag(store: Store, clock: Clock) -> None:
    site = Site()
    site.etag, site.last_modified = None, "Wed, 21 Oct 2015 07:28:00 GMT"
    cache = StorePageCache(store, max_age_s=DAY, max_chars=30_000)
    await fetch(site, cache)
    clock.now += 2 * DAY
    _, hits = await fetch(site, cache)
    assert site.asked[-1] == {"if-modified-since": "Wed, 21 Oct 2015 07:28:00 GMT"}
    assert hits == 1


async def test_refresh_skips_reads_but_still_stores(store: Store) -> None:
    site = Site()
    await fetch(site, StorePageCache(store, max_age_s=DAY, max_chars=30_000))
    site.body = BODY.replace("Write-ahead logging", "Refreshed text")
    result, hits = await fetch(
        site, StorePageCache(store, max_age_s=DAY, max_chars=30_000, read=False)
    )
    assert hits == 0 and len(site.asked) == 2 and site.asked[-1] == {}
    assert isinstance(result, Page) and "Refreshed text" in result.text
    entry = store.get_page(URL)
    assert entry is not None and "Refreshed text" in (entry.text or "")


async def test_a_page_cut_shorter_than_wanted_is_fetched_whole(store: Store) -> None:
    site = Site()
    await fetch(site, StorePageCache(store, max_age_s=DAY, max_chars=1000))
    entry = store.get_page(URL)
    assert entry is not None and "truncated at 1000" in (entry.text or "")
    result, hits = await fetch(site, StorePageCache(store, max_age_s=DAY, max_chars=30_000))
    assert hits == 0 and len(site.asked) == 2
    assert isinstance(result, Page) and not result.truncated


async def test_failures_stand_for_a_time_that_depends_on_the_failure(
    store: Store, clock: Clock
) -> None:
    site = Site()
    site.status, site.etag = 404, None
    cache = StorePageCache(store, max_age_s=DAY, max_chars=30_000)
    failure, _ = await fetch(site, cache)
    assert isinstance(failure, FetchFailure) and failure.reason == "HTTP 404"
    clock.now += DAY / 2
    again, hits = await fetch(site, cache)
    assert hits == 1 and isinstance(again, FetchFailure) and len(site.asked) == 1

    site.status = 503
    other = "https://docs.example.org/busy"
    await fetch(site, cache, other)
    clock.now += TRANSIENT_FAILURE_TTL_S - 1
    _, hits = await fetch(site, cache, other)
    assert hits == 1 and len(site.asked) == 2  # still standing
    clock.now += 2
    site.status = 200
    recovered, hits = await fetch(site, cache, other)
    assert hits == 0 and isinstance(recovered, Page) and len(site.asked) == 3


def test_failure_ttl_rules() -> None:
    def ttl(reason: str, status: int | None = None) -> float:
        return failure_ttl(FetchFailure(url=URL, reason=reason, status=status), DAY)

    assert ttl("HTTP 404", 404) == ttl("binary content", 200) == ttl("no main text") == DAY
    assert ttl("HTTP 429", 429) == ttl("HTTP 503", 503) == TRANSIENT_FAILURE_TTL_S
    assert (
        ttl("timed out after 15s")
        == ttl("could not connect (refused)")
        == ttl("too large (over 5,000,000 bytes)", 200)
        == TRANSIENT_FAILURE_TTL_S
    )
    assert failure_ttl(FetchFailure(url=URL, reason="HTTP 404"), 60) == 60


async def test_blocked_urls_are_never_cached(store: Store) -> None:
    cache = StorePageCache(store, max_age_s=DAY, max_chars=30_000)
    async with Fetcher(Settings(), cache=cache) as fetcher:
        result = await fetcher.fetch("http://127.0.0.1:9/private")
    assert isinstance(result, FetchFailure) and result.reason.startswith("blocked: ")
    assert store.get_page("http://127.0.0.1:9/private") is None


async def test_a_broken_cache_costs_a_download_not_the_page(store: Store) -> None:
    site = Site()
    cache = StorePageCache(store, max_age_s=DAY, max_chars=30_000)
    store.close()  # every cache call now raises
    result, hits = await fetch(site, cache)
    assert isinstance(result, Page) and hits == 0 and len(site.asked) == 1


# ---------------------------------------------------------------- local documents


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "wal.md").write_text(
        "# WAL notes\n\nWrite-ahead logging lets readers run while "
        "one writer appends to the log.\n",
        encoding="utf-8",
    )
    (tmp_path / "outside.md").write_text("# Outside\n\nNot to be read.\n", encoding="utf-8")
    return root


async def test_file_urls_are_read_from_the_index_only_inside_the_folder(
    store: Store, folder: Path
) -> None:
    report = index_folder(store, folder, DocumentExtractor())
    reader = DocumentReader(store, report.folder, max_chars=30_000)
    transport = httpx.MockTransport(lambda request: pytest.fail(f"network: {request.url}"))
    inside = file_url(report.folder / "wal.md")
    async with Fetcher(Settings(), transport=transport, documents=reader) as fetcher:
        page = await fetcher.fetch(inside)
        outside = await fetcher.fetch(file_url(folder.parent / "outside.md"))
        sneaky = await fetcher.fetch(inside.replace("/wal.md", "/../outside.md"))
        missing = await fetcher.fetch(file_url(report.folder / "gone.md"))
    assert isinstance(page, Page) and page.title == "WAL notes" and page.engine == "local"
    assert "one writer" in page.text and page.url == inside
    assert isinstance(outside, FetchFailure) and "outside the documents folder" in outside.reason
    assert isinstance(sneaky, FetchFailure) and "outside the documents folder" in sneaky.reason
    assert isinstance(missing, FetchFailure) and missing.reason == "not in the documents index"


async def test_file_urls_are_refused_without_a_documents_folder(folder: Path) -> None:
    async with Fetcher(Settings()) as fetcher:
        result = await fetcher.fetch(file_url(folder / "wal.md"))
    assert isinstance(result, FetchFailure) and result.reason.startswith("blocked: file URLs")


def test_local_documents_each_count_as_their_own_site_and_rank_primary(folder: Path) -> None:
    hits = [
        SearchHit(
            title=f"doc {n}",
            url=file_url(folder / f"doc{n}.md"),
            rank=n,
            provider="local",
            query="q",
        )
        for n in range(1, 5)
    ]
    hits.append(
        SearchHit(
            title="blog", url="https://someblog.example/post", rank=1, provider="searxng", query="q"
        )
    )
    candidates = rank(hits)
    local = [c for c in candidates if c.url.startswith("file://")]
    assert len(local) == 4, "every local document is kept, not one per 'domain'"
    assert {(c.quality, c.quality_score) for c in local} == {(Quality.PRIMARY, 4)}
    assert candidates[0].url.startswith("file://")


# ---------------------------------------------------------------- searches


class Counting(SearchProvider):
    name = "counting"

    def __init__(self, fail: bool = False) -> None:
        super().__init__(Settings(), httpx.AsyncClient(), env={})
        self.calls = 0
        self.fail = fail

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        self.calls += 1
        if self.fail:
            raise ProviderFailure("down")
        return [
            SearchHit(
                title="t",
                url=f"https://example.org/{query}",
                rank=1,
                provider=self.name,
                query=query,
            )
        ]


async def test_searches_are_cached_for_the_ttl(store: Store, clock: Clock) -> None:
    inner = Counting()
    answers: list[tuple[str, str, bool]] = []
    cached = CachedProvider(
        inner, store, max_age_s=DAY, on_answer=lambda p, q, h, c: answers.append((p, q, c))
    )
    assert cached.name == "counting"
    first = await cached.search("wal", limit=5)
    second = await cached.search("wal", limit=5)
    assert first == second and inner.calls == 1 and cached.hits_served == 1
    await cached.search("wal", limit=8)  # other parameters, other answer
    assert inner.calls == 2
    clock.now += DAY + 1
    await cached.search("wal", limit=5)
    assert inner.calls == 3
    assert answers == [
        ("counting", "wal", False),
        ("counting", "wal", True),
        ("counting", "wal", False),
        ("counting", "wal", False),
    ]
    refreshing = CachedProvider(inner, store, max_age_s=DAY, read=False)
    await refreshing.search("wal", limit=5)
    assert inner.calls == 4 and refreshing.hits_served == 0
    resumed = CachedProvider(inner, store, max_age_s=None)
    clock.now += 30 * DAY
    await resumed.search("wal", limit=5)
    assert inner.calls == 4, "a resumed run reuses answers of any age"


async def test_failed_searches_are_not_cached(store: Store) -> None:
    inner = Counting(fail=True)
    cached = CachedProvider(inner, store, max_age_s=DAY)
    for _ in range(2):
        with pytest.raises(ProviderFailure):
            await cached.search("wal", limit=5)
    assert inner.calls == 2


# ---------------------------------------------------------------- LLM replies


async def test_llm_client_with_the_store_cache_asks_the_model_once(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "Plan searches about WAL mode"}]
    with ScriptedLLM.serve() as llm:
        llm.add('["wal mode", "sqlite wal"]')
        config = LLMConfig(base_url=llm.base_url, model="scripted-model")
        with Store(tmp_path / "home") as store:
            async with LLMClient(config, cache=StoreReplyCache(store)) as client:
                first = await client.chat(messages, stage="plan")
        # A new process: a new store object and a new client, same home.
        with Store(tmp_path / "home") as store:
            async with LLMClient(config, cache=StoreReplyCache(store)) as client:
                second = await client.chat(messages, stage="plan")
                assert client.usage.calls == 0 and client.usage.cached_calls == 1
                assert client.usage.prompt_tokens == 0
        assert len(llm.requests) == 1
    assert not first.cached and second.cached
    assert (second.text, second.model, second.prompt_tokens, second.completion_tokens) == (
        first.text,
        first.model,
        first.prompt_tokens,
        first.completion_tokens,
    )
