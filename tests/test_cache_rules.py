"""The URL rules hold for what the store already has: cached pages answer a run only
where that run's own settings would let the page be fetched.

A page cached by a run with ``--allow-private-urls`` (or other domain lists) is
refused, as a named gap and with no request, by a later run whose settings refuse it:
on a rerun, through ``sleuth resume``, and when the page came from a name that resolved
to a private address. Every run uses its own ``--home`` under ``tmp_path``.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from sleuth.cli import run
from sleuth.fetch import Fetcher
from sleuth.models import FetchFailure, Page
from sleuth.pipeline.cached import StorePageCache
from sleuth.pipeline.recorder import run_options
from sleuth.settings import Settings, load_settings
from sleuth.store import Store
from sleuth.testing import OfflineWeb

PAGE_TIMEOUT = 5.0
DAY = 86_400.0


def base_args(web: OfflineWeb, home: Path, *extra: str) -> list[str]:
    return [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--no-llm",
        "--timeout",
        str(PAGE_TIMEOUT),
        "--home",
        str(home),
        "--quiet",
        "--format",
        "json",
        *extra,
    ]


def research(
    web: OfflineWeb, home: Path, out: Path, question: str, *extra: str
) -> tuple[int, dict[str, Any]]:
    code = run([*base_args(web, home, *extra), "-o", str(out), question])
    data = json.loads(out.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return code, data


def host(url: str) -> str:
    return urlsplit(url).hostname or ""


def page_requests(web: OfflineWeb) -> list[str]:
    main = urlsplit(web.base_url).netloc
    return [f"http://{r.host}{r.path}" for r in web.requests if r.host != main]


@pytest.fixture
def cached_run(web: OfflineWeb, tmp_path: Path) -> tuple[Path, str, dict[str, Any]]:
    """A home whose cache holds the offline web's pages for one question, read with
    ``--allow-private-urls`` (the offline web is on loopback)."""
    home = tmp_path / "home"
    # A topic whose pages all answer at once (stadia's slow drip would hold every second
    # run that is refused the cited pages until its 5 s deadline).
    question = web.topics[3].question
    code, first = research(web, home, tmp_path / "first.json", question, "--allow-private-urls")
    assert code == 0 and first["sources"], "the first run read nothing to cache"
    return home, question, first


@pytest.mark.slow
@pytest.mark.parametrize("rules", ["default", "deny", "allow"])
def test_a_page_cached_under_other_rules_is_refused_without_a_request(
    rules: str, web: OfflineWeb, tmp_path: Path, cached_run: tuple[Path, str, dict[str, Any]]
) -> None:
    home, question, first = cached_run
    cited = [s["url"] for s in first["sources"]]
    refused_hosts = {host(url) for url in cited}
    extra: list[str] = []
    expected = "blocked: loopback address "
    if rules == "deny":  # private addresses allowed, but the cited sites denied
        extra = ["--allow-private-urls", "--deny-domains", ",".join(sorted(refused_hosts))]
        expected = "blocked: domain "
    elif rules == "allow":  # only a site the first run did not cite
        others = {host(d.url) for d in web.docs} - refused_hosts
        extra = ["--allow-domains", sorted(others)[0]]
        expected = "blocked: domain "
    web.reset_log()
    _code, second = research(web, home, tmp_path / "second.json", question, *extra)
    assert not [r for r in page_requests(web) if host(r) in refused_hosts], (
        "a refused page was requested"
    )
    assert not {host(s["url"]) for s in second["sources"]} & refused_hosts, (
        "a page these settings refuse was cited from the cache"
    )
    reasons = {f["url"]: f["reason"] for f in second["failures"]}
    # Each cited page the second run came to is a named refusal; without any private
    # address allowed, it comes to every one (nothing else can be read).
    tried = [url for url in cited if url in reasons] if rules != "default" else cited
    assert tried and all(reasons.get(url, "").startswith(expected) for url in tried), reasons
    gaps = second["markdown"].split("## Gaps", 1)[1]
    assert expected.strip() in gaps


def test_a_resumed_run_applies_its_own_rules_to_the_cache(
    web: OfflineWeb,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    cached_run: tuple[Path, str, dict[str, Any]],
) -> None:
    """A resumed run reuses what the store has whatever its age, but only what its own
    settings (here the defaults: no private addresses) let it fetch."""
    home, question, first = cached_run
    strict = load_settings(
        {
            "search": "searxng",
            "searxng_url": web.searxng_url,
            "no_llm": True,
            "timeout": PAGE_TIMEOUT,
        },
        env={},
    )
    with Store(home) as store:
        run_id = store.create_run(question, run_options(strict))
        store.finish_run(run_id, "interrupted")
    web.reset_log()
    out = tmp_path / "resumed.json"
    code = run(
        ["resume", run_id, "--home", str(home), "--quiet", "--format", "json", "-o", str(out)]
    )
    resumed = json.loads(out.read_text(encoding="utf-8"))
    assert page_requests(web) == [], "the resumed run sent a request for a refused page"
    assert code == 1 and resumed["run_id"] == run_id and resumed["sources"] == []
    reasons = {f["url"]: f["reason"] for f in resumed["failures"]}
    for source in first["sources"]:
        assert reasons[source["url"]].startswith("blocked: loopback address ")
    capsys.readouterr()


# ---------------------------------------------------------------- the fetcher's cache


async def test_a_page_read_from_a_private_address_is_not_served_under_stricter_rules(
    web: OfflineWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name (not a literal address) that resolved to loopback when the page was read:
    the cache remembers where the page came from, so a run without
    ``--allow-private-urls`` does not reuse it; its own fetch is refused by the guard."""
    doc = web.docs[0]
    address, port = urlsplit(doc.url).hostname, urlsplit(doc.url).port
    real = socket.getaddrinfo

    def getaddrinfo(name: object, *args: object, **kwargs: object) -> list[Any]:
        if name == "wiki.intranet.corp":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    url = f"http://wiki.intranet.corp:{port}{urlsplit(doc.url).path}"
    with Store(tmp_path / "home") as store:
        served: list[tuple[Page | FetchFailure, int, int]] = []
        for allow_private in (True, True, False):
            settings = Settings(allow_private_urls=allow_private, timeout=PAGE_TIMEOUT)
            web.reset_log()
            async with Fetcher(settings, cache=StorePageCache.for_run(store, settings)) as fetcher:
                result = await fetcher.fetch(url)
            served.append((result, fetcher.cache_hits, len(web.requests)))
    (first, _, first_asked), (again, again_hits, again_asked), strict = served
    assert isinstance(first, Page) and first.title == doc.title and first_asked == 1
    # Under the same rules the cache answers, with no request.
    assert isinstance(again, Page) and again_hits == 1 and again_asked == 0
    result, hits, asked = strict
    assert isinstance(result, FetchFailure) and hits == 0 and asked == 0
    assert result.reason == f"blocked: loopback address {address}"


async def test_a_cached_page_whose_redirect_ends_in_a_denied_domain_is_not_served(
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        if request.url.host == "short.example":
            return httpx.Response(301, headers={"location": "https://ads.example/landing"})
        return httpx.Response(
            200,
            html="<html><head><title>Landing</title></head><body>"
            "<article><p>"
            + "A page about the Moon and its orbit. " * 20
            + "</p></article></body></html>",
        )

    url = "https://short.example/x"
    with Store(tmp_path / "home") as store:
        for deny in ([], ["ads.example"]):
            settings = Settings(deny_domains=deny)
            async with Fetcher(
                settings,
                transport=httpx.MockTransport(handler),
                cache=StorePageCache.for_run(store, settings),
            ) as fetcher:
                result = await fetcher.fetch(url)
    assert isinstance(result, FetchFailure)
    assert result.reason == "blocked: domain ads.example is denied (--deny-domains ads.example)"
    # The denied site itself was asked only by the first, permissive run.
    assert asked == [url, "https://ads.example/landing", url]
    assert fetcher.cache_hits == 0
