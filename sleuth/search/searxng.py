"""SearXNG: a self-hosted metasearch instance queried through its JSON API."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from sleuth.errors import ProviderError
from sleuth.models import SearchHit
from sleuth.search.base import ProviderFailure, register
from sleuth.search.jsonapi import JsonApiProvider, json_list


@register
class SearxngProvider(JsonApiProvider):
    """Queries ``{searxng_url}/search?format=json``; needs ``--searxng-url``, no key."""

    name = "searxng"

    def __init__(
        self, settings: object, client: httpx.AsyncClient, env: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(settings, client, env)
        url = self.settings.searxng_url
        if not url:
            raise ProviderError(
                "search provider 'searxng' needs --searxng-url or SLEUTH_SEARXNG_URL"
            )
        self.base_url = url.rstrip("/")

    def status_reason(self, status: int) -> str:
        """Point at the usual cause of a 403: the instance does not serve JSON."""
        if status == 403:
            return "HTTP 403 (is the json format enabled in the instance's settings.yml?)"
        return super().status_reason(status)

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """One page of results; an empty page where every engine failed is a failure."""
        data = await self.request_json(
            "GET",
            f"{self.base_url}/search",
            params={"q": query, "format": "json", "pageno": 1},
            headers={"Accept": "application/json"},
            follow_redirects=True,
        )
        found = self.hits(query, json_list(data, "results"), limit, snippet="content")
        if not found and isinstance(data, dict):
            engines = [
                str(entry[0])
                for entry in data.get("unresponsive_engines") or []
                if isinstance(entry, list | tuple) and entry
            ]
            if engines:
                raise ProviderFailure(f"no engine answered ({', '.join(sorted(engines))})")
        return found
