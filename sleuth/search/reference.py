"""The reference providers: Wikipedia (any language) and GitHub (repositories, code).

Wikipedia's hits are articles with their introduction as the snippet, searched in the
language of ``--lang``, else of the question (its script: Han, kana, hangul, Cyrillic;
else English). GitHub's are repositories with their description (``github``) and, with
``GITHUB_TOKEN``, files with the lines that matched (``github-code``: GitHub's code
search needs a token).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import httpx

from sleuth.errors import ConfigError
from sleuth.lang import language_name
from sleuth.models import SearchHit
from sleuth.search.base import ProviderFailure, register
from sleuth.search.jsonapi import json_list
from sleuth.search.paced import PacedProvider, Reply, query_terms
from sleuth.search.pacing import MAX_HOLD_S, Limit, retry_after

__all__ = ["GitHubCodeProvider", "GitHubProvider", "WikipediaProvider", "wiki_language"]

#: Wikipedias whose language sleuth can name (space-separated); ``--lang`` may give any
#: other code itself.
_WIKIS = "en zh ja ko de fr es pt it nl ru uk pl tr ar hi vi id sv"
_CODE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def wiki_language(lang: str | None, query: str) -> str:
    """The Wikipedia language code for ``--lang`` (a code or a name), else for the script
    of ``query``; ``en`` when neither tells."""
    if lang and _CODE.fullmatch(lang.strip()):
        return re.split(r"[-_]", lang.strip())[0].lower()
    try:
        name = language_name(lang, query)
    except ConfigError:
        return "en"
    return next((code for code in _WIKIS.split() if language_name(code) == name), "en")


def _search_rank(page: dict[str, Any]) -> int:
    """A page's place in the search's answer (``index``; pages come in id order)."""
    index = page.get("index")
    return index if isinstance(index, int) else 10**6


@register
class WikipediaProvider(PacedProvider):
    """The MediaWiki API of Wikipedia: a full-text search with each article's introduction."""

    name = "wikipedia"
    service = "Wikipedia"
    url_setting = "wikipedia_url"
    # Wikimedia's API etiquette: requests in series, not in parallel (and maxlag=5).
    limits = (Limit(0.0, "one request at a time", serial=True),) * 2
    max_limit = 20  # extracts come for at most 20 pages at once

    def __init__(
        self, settings: object, client: httpx.AsyncClient, env: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(settings, client, env)
        # With --lang the wiki is known now; in the URL, it keys the search cache too.
        if self.lang:
            self.base_url = self.base_url.replace("{lang}", wiki_language(self.lang, ""))

    def service_query(self, query: str) -> str:
        """The key words; a question in Chinese, Japanese or Korean as it is."""
        if _CJK.search(query):
            return " ".join(query.split())
        return " ".join(query_terms(query)) or " ".join(query.split())

    async def find(self, asked: str, limit: int, deadline: float) -> list[SearchHit]:
        """One request: the search as a generator of pages, with extracts and URLs."""
        url = self.base_url.replace("{lang}", wiki_language(self.lang, asked))
        count = min(limit, self.max_limit)
        reply = await self.get(
            url,
            {
                "action": "query",
                "format": "json",
                "formatversion": 2,
                "generator": "search",
                "gsrsearch": asked,
                "gsrnamespace": 0,
                "gsrlimit": count,
                "prop": "extracts|info",
                "exintro": 1,
                "explaintext": 1,
                "exlimit": count,
                "inprop": "url",
                "maxlag": 5,
            },
            pace=f"{self.name}:{url}",
            deadline=deadline,
        )
        data = reply.json()
        error = data.get("error") if isinstance(data, Mapping) else None
        if isinstance(error, Mapping):
            code = str(error.get("code", "error"))
            raise ProviderFailure(self.with_detail(f"API error {code}", str(error.get("info", ""))))
        pages = [p for p in json_list(data, "query", "pages") if isinstance(p, dict)]
        pages.sort(key=_search_rank)
        items = [
            {
                "title": p.get("title"),
                "url": p.get("canonicalurl") or p.get("fullurl"),
                "snippet": p.get("extract"),
            }
            for p in pages
        ]
        return self.hits(asked, items, limit)

    def hold_for(self, reply: Reply) -> float | None:
        """A 429, or the API's ``maxlag`` error (HTTP 200 with ``Retry-After``)."""
        if reply.status == 200 and b'"maxlag"' in reply.body:
            data = reply.json()
            error = data.get("error") if isinstance(data, Mapping) else None
            if isinstance(error, Mapping) and error.get("code") == "maxlag":
                return retry_after(reply.headers.get("retry-after")) or 5.0
        return super().hold_for(reply)


class _GitHub(PacedProvider):
    """What GitHub's two searches share: headers, the rate-limit answers, the errors."""

    service = "GitHub"
    url_setting = "github_url"
    optional_env_keys: ClassVar[tuple[str, ...]] = ("GITHUB_TOKEN",)
    max_per_page = 100

    def service_query(self, query: str) -> str:
        """A few key words (GitHub's search wants every word to match)."""
        return " ".join(query_terms(query, most=5))

    def headers(self, accept: str = "application/vnd.github+json") -> dict[str, str]:
        """The API's headers, the token when there is one."""
        headers = {"Accept": accept, "X-GitHub-Api-Version": "2022-11-28"}
        if "GITHUB_TOKEN" in self.keys:
            headers["Authorization"] = f"Bearer {self.keys['GITHUB_TOKEN']}"
        return headers

    def hold_for(self, reply: Reply) -> float | None:
        """A 403 or 429 that says the quota is spent waits for its reset (or its
        ``Retry-After``: the secondary limits)."""
        if reply.status in (403, 429):
            wait = retry_after(reply.headers.get("retry-after"))
            if wait is not None:
                return wait
            if reply.headers.get("x-ratelimit-remaining") == "0":
                reset = reply.headers.get("x-ratelimit-reset", "")
                if not reset.isdigit():
                    return 60.0
                return min(max(0.0, float(reset) - time.time()), MAX_HOLD_S)
        return super().hold_for(reply)

    async def search_api(
        self, kind: str, asked: str, limit: int, deadline: float, accept: str
    ) -> list[Any]:
        """The ``items`` of ``/search/{kind}``."""
        reply = await self.get(
            f"{self.base_url}/search/{kind}",
            {"q": asked, "per_page": min(limit, self.max_per_page)},
            headers=self.headers(accept),
            deadline=deadline,
        )
        return [item for item in json_list(reply.json(), "items") if isinstance(item, dict)]


@register
class GitHubProvider(_GitHub):
    """GitHub's repository search: each repository's page, its description as the snippet."""

    name = "github"
    limits = (
        Limit(6.0, "10 searches a minute without GITHUB_TOKEN"),
        Limit(2.0, "30 searches a minute with GITHUB_TOKEN"),
    )

    async def find(self, asked: str, limit: int, deadline: float) -> list[SearchHit]:
        """One request, best match first."""
        items = await self.search_api(
            "repositories", asked, limit, deadline, "application/vnd.github+json"
        )
        return self.hits(asked, [self._repository(item) for item in items], limit)

    @staticmethod
    def _repository(item: dict[str, Any]) -> dict[str, object]:
        facts = [str(item["language"])] if item.get("language") else []
        if isinstance(item.get("stargazers_count"), int):
            facts.append(f"{item['stargazers_count']:,} stars")
        about = str(item.get("description") or "")
        return {
            "title": item.get("full_name"),
            "url": item.get("html_url"),
            "snippet": f"{about} ({', '.join(facts)})"
            if about and facts
            else about or ", ".join(facts),
        }


@register
class GitHubCodeProvider(_GitHub):
    """GitHub's code search (it needs ``GITHUB_TOKEN``): files, the matching lines as the
    snippet."""

    name = "github-code"
    env_keys = ("GITHUB_TOKEN",)
    optional_env_keys = ()
    limits = (Limit(6.0, "10 code searches a minute"),) * 2

    async def find(self, asked: str, limit: int, deadline: float) -> list[SearchHit]:
        """One request, with the text matches."""
        items = await self.search_api(
            "code", asked, limit, deadline, "application/vnd.github.text-match+json"
        )
        return self.hits(asked, [self._file(item) for item in items], limit)

    @staticmethod
    def _file(item: dict[str, Any]) -> dict[str, object]:
        repository = item.get("repository")
        owner = repository.get("full_name") if isinstance(repository, dict) else None
        matches = item.get("text_matches")
        fragments = [
            str(m.get("fragment", ""))
            for m in (matches if isinstance(matches, list) else [])
            if isinstance(m, dict)
        ]
        return {
            "title": f"{owner}: {item.get('path')}" if owner else item.get("path"),
            "url": item.get("html_url"),
            "snippet": " … ".join(f for f in fragments if f),
        }
