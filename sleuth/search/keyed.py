"""The commercial search APIs that need an API key from the environment.

Each provider is a few lines: where to send the query, with which key, and which
JSON fields hold the results. The HTTP and error handling live in
:class:`~sleuth.search.jsonapi.JsonApiProvider`.
"""

from __future__ import annotations

from sleuth.models import SearchHit
from sleuth.search.base import ProviderFailure, register
from sleuth.search.jsonapi import JsonApiProvider, json_list

# SerpApi reports "the engine found nothing" through its ``error`` field too.
_SERPAPI_EMPTY = ("hasn't returned any results", "fully empty")


@register
class SerperProvider(JsonApiProvider):
    """Google results through serper.dev."""

    name = "serper"
    env_keys = ("SERPER_API_KEY",)
    endpoint = "https://google.serper.dev/search"

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """POST the query as JSON; results are in ``organic``."""
        data = await self.request_json(
            "POST",
            self.endpoint,
            json={"q": query, "num": limit},
            headers={"X-API-KEY": self.keys["SERPER_API_KEY"]},
        )
        return self.hits(query, json_list(data, "organic"), limit, url="link")


@register
class SerpApiProvider(JsonApiProvider):
    """Google results through serpapi.com."""

    name = "serpapi"
    env_keys = ("SERPAPI_API_KEY",)
    endpoint = "https://serpapi.com/search.json"

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """GET with the key as a parameter; results are in ``organic_results``."""
        data = await self.request_json(
            "GET",
            self.endpoint,
            params={
                "engine": "google",
                "q": query,
                "num": limit,
                "api_key": self.keys["SERPAPI_API_KEY"],
            },
        )
        if isinstance(data, dict) and data.get("error"):
            info = data.get("search_information")
            state = info.get("organic_results_state", "") if isinstance(info, dict) else ""
            if any(text in f"{data['error']} {state}".lower() for text in _SERPAPI_EMPTY):
                return []
            raise ProviderFailure(f"serpapi error: {self.redact(str(data['error']))}")
        return self.hits(query, json_list(data, "organic_results"), limit, url="link")


@register
class GoogleProvider(JsonApiProvider):
    """Google's Custom Search JSON API (a programmable search engine id is needed too)."""

    name = "google"
    env_keys = ("GOOGLE_API_KEY", "GOOGLE_CSE_ID")
    endpoint = "https://www.googleapis.com/customsearch/v1"
    max_num = 10  # the API refuses more per request

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """GET with key and engine id; results are in ``items`` (absent when none)."""
        data = await self.request_json(
            "GET",
            self.endpoint,
            params={
                "key": self.keys["GOOGLE_API_KEY"],
                "cx": self.keys["GOOGLE_CSE_ID"],
                "q": query,
                "num": min(limit, self.max_num),
            },
        )
        return self.hits(query, json_list(data, "items"), limit, url="link")


@register
class BraveProvider(JsonApiProvider):
    """The Brave Search API (web results)."""

    name = "brave"
    env_keys = ("BRAVE_API_KEY",)
    endpoint = "https://api.search.brave.com/res/v1/web/search"
    max_count = 20

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """GET with the subscription token header; results are in ``web.results``."""
        data = await self.request_json(
            "GET",
            self.endpoint,
            params={"q": query, "count": min(limit, self.max_count)},
            headers={
                "X-Subscription-Token": self.keys["BRAVE_API_KEY"],
                "Accept": "application/json",
            },
        )
        return self.hits(query, json_list(data, "web", "results"), limit, snippet="description")


@register
class TavilyProvider(JsonApiProvider):
    """The Tavily search API, built for LLM agents."""

    name = "tavily"
    env_keys = ("TAVILY_API_KEY",)
    endpoint = "https://api.tavily.com/search"
    max_results = 20

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """POST the query as JSON with a bearer token; results are in ``results``."""
        data = await self.request_json(
            "POST",
            self.endpoint,
            json={
                "query": query,
                "max_results": min(limit, self.max_results),
                "search_depth": "basic",
            },
            headers={"Authorization": f"Bearer {self.keys['TAVILY_API_KEY']}"},
        )
        return self.hits(query, json_list(data, "results"), limit, snippet="content")
