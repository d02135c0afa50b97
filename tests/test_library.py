"""The library: pages past runs read join a later run's candidates, and can be forgotten."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

import sleuth
from sleuth.models import Page
from sleuth.store import MIGRATIONS, CachedPage, Store
from sleuth.store.db import Database
from sleuth.testing import OfflineWeb

WEWORK = "Why is the New York attorney general investigating WeWork and its founder Adam Neumann?"
#: A related question, asked when no web search answers.
WEWORK_AGAIN = "What did the New York attorney general find about WeWork and Adam Neumann?"


def options(web: OfflineWeb, home: Path, **more: object) -> dict[str, object]:
    return {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 2,
        "no_llm": True,
        "home": str(home),
        **more,
    }


def offline(web: OfflineWeb, home: Path, port: int, **more: object) -> dict[str, object]:
    """The same run with its search engine down (a port that refuses connections)."""
    return options(web, home, searxng_url=f"http://127.0.0.1:{port}", **more)


def page(url: str, text: str, title: str = "A page") -> CachedPage:
    return CachedPage.from_page(
        Page(
            url=url,
            final_url=url,
            canonical_url=url,
            title=title,
            text=text,
            content_type="text/html",
            status=200,
        )
    )


def file_bytes(home: Path) -> bytes:
    """Everything on disk for the store: the database, its WAL and shared memory."""
    return b"".join(p.read_bytes() for p in sorted(home.glob("sleuth.db*")))


# ---------------------------------------------------------------- research


async def test_a_second_run_cites_a_page_only_the_first_read_with_search_offline(
    web: OfflineWeb, tmp_path: Path, closed_port: int
) -> None:
    first = await sleuth.research(WEWORK, **options(web, tmp_path))
    read_first = {s.url for s in first.sources}
    assert read_first

    again = await sleuth.research(WEWORK_AGAIN, **offline(web, tmp_path, closed_port))

    cited = {s.url for s in again.sources}
    assert cited & read_first, again.markdown
    assert all(f.stage != "search" or "library" not in f.reason for f in again.failures)
    line = next(s for s in again.sources if s.url in read_first)
    assert any(re.fullmatch(r"library, read \d{4}-\d\d-\d\d", p) for p in line.providers)
    assert re.search(r"\(via library, read \d{4}-\d\d-\d\d\)", again.markdown)


@pytest.mark.parametrize(("ttl", "asked"), [(86400, False), (0, True)])
async def test_a_library_page_is_fetched_again_once_stale_like_any_cached_page(
    web: OfflineWeb, tmp_path: Path, closed_port: int, ttl: int, asked: bool
) -> None:
    first = await sleuth.research(WEWORK, **options(web, tmp_path))
    url = next(s.url for s in first.sources if "wework-investigation" in s.url)
    before = len(web.requests_for(url))
    again = await sleuth.research(
        WEWORK_AGAIN, **offline(web, tmp_path, closed_port, cache_ttl=ttl)
    )
    assert url in {s.url for s in again.sources}
    assert (len(web.requests_for(url)) > before) is asked
    assert (again.stats.cached_fetches > 0) is not asked


async def test_an_empty_library_is_not_searched_and_a_full_one_is(
    web: OfflineWeb, tmp_path: Path
) -> None:
    def asked(run_id: str | None) -> set[str]:
        assert run_id is not None
        with Store(tmp_path) as store:
            return {r.payload["provider"] for r in store.stages(run_id, "hits")}

    first = await sleuth.research(WEWORK, **options(web, tmp_path))
    assert asked(first.run_id) == {"searxng"}  # nothing said about an empty library
    again = await sleuth.research(WEWORK_AGAIN, **options(web, tmp_path))
    assert asked(again.run_id) == {"searxng", "library"}


async def test_search_library_alone_researches_what_past_runs_read(
    web: OfflineWeb, tmp_path: Path
) -> None:
    first = await sleuth.research(WEWORK, **options(web, tmp_path))
    again = await sleuth.research(WEWORK_AGAIN, **options(web, tmp_path, search="library"))
    assert again.sources
    with Store(tmp_path) as store:
        assert {s.url for s in again.sources} <= {p.url for p in store.list_library()}
    assert all(p.startswith("library, read ") for s in again.sources for p in s.providers)
    assert first.sources


async def test_no_library_keeps_past_pages_out(
    web: OfflineWeb, tmp_path: Path, closed_port: int
) -> None:
    await sleuth.research(WEWORK, **options(web, tmp_path))
    again = await sleuth.research(
        WEWORK_AGAIN, **offline(web, tmp_path, closed_port, no_library=True)
    )
    assert again.sources == []


async def test_library_pages_are_judged_like_any_page(
    web: OfflineWeb, tmp_path: Path, closed_port: int
) -> None:
    """A library page that names the question's subject once, in passing, is offered
    (it holds the question's words), read, and set aside as off-topic beside the pages on
    the subject, as any page would be; one on the subject is cited."""
    stadia = web.topics[0]
    near = f"http://127.0.0.1:{closed_port}/tomatoes"  # never fetched: fresh in the store
    on = web.doc(stadia.expected[1]).url
    garden = (
        "Tomatoes need six hours of sun a day. Water them at the roots in the morning, "
        "stake them early, and pinch out the side shoots so that the plant puts its "
        "strength into the fruit. Mulch keeps the soil moist through the summer. "
    )
    with Store(tmp_path) as store:
        store.put_page(
            page(
                near,
                garden * 3 + "A gardener's game is slow, unlike Google Stadia's cloud "
                "game streaming service, whose launch nobody thought worth waiting for. "
                + garden
                * 3,
                title="Growing tomatoes",
            )
        )
    first = await sleuth.research(stadia.question, **options(web, tmp_path, no_library=True))
    assert on in {s.url for s in first.sources}

    again = await sleuth.research(stadia.question, **offline(web, tmp_path, closed_port))

    assert on in {s.url for s in again.sources}
    assert near not in {s.url for s in again.sources}
    assert any(f.url == near and "off-topic" in f.reason for f in again.failures), again.markdown


# ---------------------------------------------------------------- the store


def test_an_old_store_is_migrated_and_its_pages_searchable(tmp_path: Path) -> None:
    with Database(tmp_path, migrations=MIGRATIONS[:4]) as old:
        old.write(
            lambda c: c.execute(
                "INSERT INTO pages (canonical_url, url, title, text, fetched_at) "
                "VALUES ('https://old.example/a', 'https://old.example/a', 'Old', "
                "'Lighthouses guide ships along rocky coasts', 1.0)"
            )
        )
    with Store(tmp_path) as store:
        found = store.search_library("lighthouse coasts")
    assert [p.url for p in found] == ["https://old.example/a"]


def test_a_page_stored_again_is_found_by_its_new_text_only(tmp_path: Path) -> None:
    with Store(tmp_path) as store:
        store.put_page(page("https://a.example/p", "Otters use stones to open shellfish"))
        store.put_page(page("https://a.example/p", "Beavers build dams from branches"))
        assert store.search_library("otters stones") == []
        assert [p.url for p in store.search_library("beavers dams")] == ["https://a.example/p"]
        assert store.library_size() == 1


def test_failures_are_not_in_the_library(tmp_path: Path) -> None:
    from sleuth.models import FetchFailure

    with Store(tmp_path) as store:
        store.put_page(
            CachedPage.from_failure(
                FetchFailure(url="https://x.example/", reason="HTTP 404"), "https://x.example/"
            )
        )
        assert store.library_size() == 0
        assert store.list_library() == []


def test_search_takes_fts_syntax_as_words(tmp_path: Path) -> None:
    with Store(tmp_path) as store:
        store.put_page(page("https://a.example/p", "NEAR the AND gate"))
        assert store.search_library('"NEAR( AND * :') != []


def test_forget_removes_the_text_from_the_database_file(tmp_path: Path) -> None:
    secret = "Marmalade recipes from the lighthouse keeper's grandmother"
    with Store(tmp_path) as store:
        store.put_page(page("https://private.example/jam", secret, title="Jam"))
        store.put_page(page("https://other.example/tea", "Tea is brewed with hot water"))
        store.put_search("searxng", "jam", {}, [])
        assert secret.encode() in file_bytes(tmp_path)
        done = store.forget_pages(site="private.example")
        assert done.pages == 1 and done.rewritten
        assert store.search_library("marmalade lighthouse") == []
        assert [p.url for p in store.list_library()] == ["https://other.example/tea"]
    on_disk = file_bytes(tmp_path)
    assert secret.encode() not in on_disk
    for word in (b"Marmalade", b"marmalad", b"grandmoth"):
        assert word not in on_disk, word
    with sqlite3.connect(tmp_path / "sleuth.db") as conn:
        ok = conn.execute("INSERT INTO pages_fts (pages_fts) VALUES ('integrity-check')")
        assert ok is not None


@pytest.mark.parametrize(
    ("how", "left"),
    [
        (
            {"urls": ["https://a.example/one?utm_source=x"]},
            ["https://b.example/two", "https://sub.a.example/three"],
        ),
        ({"site": "a.example"}, ["https://b.example/two"]),
        ({"before": 150.0}, ["https://b.example/two", "https://sub.a.example/three"]),
    ],
)
def test_forget_by_url_site_or_age(tmp_path: Path, how: dict[str, object], left: list[str]) -> None:
    with Store(tmp_path) as store:
        for when, url in enumerate(
            ["https://a.example/one", "https://b.example/two", "https://sub.a.example/three"]
        ):
            entry = page(url, f"Page number {when} about owls")
            store.put_page(entry.model_copy(update={"fetched_at": 100.0 + 100 * when}))
        store.forget_pages(**how)  # type: ignore[arg-type]
        assert sorted(p.url for p in store.list_library()) == sorted(left)
