"""DuckDuckGo (the default): the ``ddgs`` metasearch library, no key needed.

``ddgs`` is synchronous, so each search runs in a worker thread. It is imported
inside :meth:`DuckDuckGoProvider.search` so that ``sleuth --help`` stays fast.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any, ClassVar

from sleuth._sent import request_sent
from sleuth.models import SearchHit
from sleuth.search.base import ProviderFailure, SearchProvider, register
from sleuth.search.jsonapi import seconds

# ddgs raises DDGSException with this text when every engine answered with nothing.
_NO_RESULTS = "no results found"
# primp's errors for a host that could not be reached, as ddgs puts them in its message.
_UNREACHABLE = ("DNSError", "DNSTimeoutError", "ConnectError")


@register
class DuckDuckGoProvider(SearchProvider):
    """Web results through ``ddgs`` (DuckDuckGo and the other engines it aggregates)."""

    name = "duckduckgo"
    #: ``ddgs`` backend(s); "auto" lets it fall back across engines when one is throttled.
    backend: ClassVar[str] = "auto"

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """Run ``DDGS().text`` in a thread and map its exceptions to failure reasons."""
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        request_sent()  # handed to ddgs' own HTTP stack: nothing to wait for here
        try:
            rows = await asyncio.to_thread(self._text, query, limit)
        except RatelimitException:
            raise ProviderFailure("rate limited") from None
        except TimeoutException:
            raise ProviderFailure(
                f"timed out after {seconds(self.settings.search_timeout)}"
            ) from None
        except DDGSException as exc:
            if _NO_RESULTS in str(exc).lower():
                return []
            # ddgs words a network error as "DNSError: DNSError('…')" (primp's class name).
            raise ProviderFailure(
                f"search failed: {exc}", unreachable=str(exc).startswith(_UNREACHABLE)
            ) from None
        return self.hits(query, rows or [], limit, url="href", snippet="body")

    def _text(self, query: str, limit: int) -> list[dict[str, Any]]:
        """The blocking call, run in a worker thread."""
        from ddgs import DDGS

        timeout = max(1, math.ceil(self.settings.search_timeout))
        result: list[dict[str, Any]] = DDGS(timeout=timeout).text(
            query, max_results=limit, backend=self.backend
        )
        return result
