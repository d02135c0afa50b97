"""The search stage: queries in, typed hits (and recorded failures) out.

Providers are small classes registered by name (see :mod:`sleuth.search.base`): the
web search engines, the documents folder (``local``), the pages past runs read
(``library``, :mod:`sleuth.search.library`), and the specialised services
(arXiv, PubMed, Semantic Scholar, Wikipedia, GitHub: :mod:`sleuth.search.scholarly`,
:mod:`sleuth.search.reference`), which keep to each service's published rate limit.
:func:`build_providers` turns ``settings.search`` into provider objects, ``auto``
routed by the question (:mod:`sleuth.search.routing`), checking every name and API key
before anything is sent; :func:`run_searches` runs all queries concurrently, each
falling back through the providers in order.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence

import httpx

from sleuth import timeline
from sleuth._sent import trace_sent
from sleuth._tls import client_tls
from sleuth._version import __version__
from sleuth.errors import ProviderError
from sleuth.models import SearchFailure, SearchHit
from sleuth.progress import Event, ProgressCallback, no_progress
from sleuth.search import (  # noqa: F401  (imported to register the built-in providers)
    duckduckgo,
    keyed,
    library,
    reference,
    scholarly,
    searxng,
)
from sleuth.search.base import (
    ENTRY_POINT_GROUP,
    ProviderFailure,
    SearchProvider,
    get_provider,
    provider_names,
    register,
)
from sleuth.search.config import SearchConfig
from sleuth.search.jsonapi import mask_key_params, seconds
from sleuth.search.routing import AUTO, expand, route

__all__ = [
    "AUTO",
    "ENTRY_POINT_GROUP",
    "UNREACHABLE",
    "ProviderFailure",
    "SearchConfig",
    "SearchProvider",
    "build_providers",
    "get_provider",
    "make_search_client",
    "provider_names",
    "register",
    "route",
    "run_searches",
]

log = logging.getLogger(__name__)

#: What a search that could not reach its engine's host is said to have met.
UNREACHABLE = "could not reach the search engine (no network?)"


def build_providers(
    settings: SearchConfig | object,
    client: httpx.AsyncClient,
    env: Mapping[str, str] | None = None,
    *,
    question: str | None = None,
) -> list[SearchProvider]:
    """The providers named in ``settings.search``, in fallback order (``settings``: a
    :class:`SearchConfig`, or the settings table it is made from); ``auto`` becomes the
    web search engines and the specialised providers ``question`` calls for
    (:func:`sleuth.search.routing.expand`; without a question, the web ones only).

    Every name and every API key is checked before this returns, so a run never
    starts searching with a half-usable configuration. All problems are reported
    together in one ``ProviderError`` (a config error: the CLI exits 2).
    """
    config = SearchConfig.of(settings)
    providers: list[SearchProvider] = []
    problems: list[str] = []
    names = expand(config.search, question, os.environ if env is None else env)
    for name in dict.fromkeys(names):
        try:
            providers.append(get_provider(name)(config, client, env))
        except ProviderError as exc:
            problems.append(str(exc))
    if problems:
        raise ProviderError("; ".join(problems))
    return providers


def make_search_client(settings: SearchConfig | object) -> httpx.AsyncClient:
    """The HTTP client the providers share.

    Search endpoints are chosen by the user (API hosts, their own SearXNG), so no
    SSRF guard applies here; page fetching has its own guarded client. Its request hook
    tells a run waiting for its first search that the request is out (``sleuth._sent``;
    a no-op otherwise).
    """
    config = SearchConfig.of(settings)
    user_agent = config.user_agent or f"sleuth/{__version__}"
    return httpx.AsyncClient(
        timeout=httpx.Timeout(config.search_timeout),
        headers={"User-Agent": user_agent},
        max_redirects=5,
        event_hooks={"request": [trace_sent]},
        **client_tls(),
    )


def _unreachable(exc: Exception) -> bool:
    """Whether ``exc`` says the provider's host could not be reached at all."""
    if isinstance(exc, ProviderFailure):
        return exc.unreachable
    return isinstance(exc, httpx.ConnectError)


def _failure_reason(exc: Exception, timeout: float) -> str:
    """A short line saying why a provider did not answer."""
    if isinstance(exc, ProviderFailure):
        return exc.reason
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return f"timed out after {seconds(timeout)}"
    if isinstance(exc, httpx.HTTPError):
        return f"request failed: {str(exc) or type(exc).__name__}"
    # A plugin's own bug: keep the run going, but make it visible when debugging.
    log.debug("search provider raised", exc_info=exc)
    return f"unexpected error: {type(exc).__name__}: {exc}"


def _own_hits(hits: Sequence[SearchHit], query: str, limit: int) -> list[SearchHit]:
    """The provider's hits tagged with ``query``, in rank order, at most ``limit``."""
    tagged = [h if h.query == query else h.model_copy(update={"query": query}) for h in hits]
    return sorted(tagged, key=lambda h: h.rank)[:limit]


def _failed(
    provider: str, query: str, reason: str, exc: Exception, on_event: ProgressCallback
) -> SearchFailure:
    """The failure of one provider for ``query``, logged and told to ``on_event``."""
    unreachable = _unreachable(exc)
    log.info("search provider %s failed for %r: %s", provider, query, reason)
    # A network error's text is a resolver's or a socket's (URLs of engines the user
    # never chose): the line says what it means; --verbose and data keep it.
    said = UNREACHABLE if unreachable else reason
    data = {"query": query, "provider": provider, "reason": reason}
    on_event(
        Event(
            "search_failed",
            f"{provider} failed for {query!r}: {said}",
            {**data, "unreachable": True} if unreachable else data,
        )
    )
    return SearchFailure(provider=provider, query=query, reason=reason, unreachable=unreachable)


async def _search_one(
    query: str,
    providers: Sequence[SearchProvider],
    *,
    limit: int,
    per_search: float,
    on_event: ProgressCallback,
) -> tuple[list[SearchHit], list[SearchFailure]]:
    """Try the providers in order until one answers ``query`` with at least one hit."""
    failures: list[SearchFailure] = []
    answered_empty: str | None = None
    for provider in providers:
        with timeline.span("search", "search", query):
            timeline.note(detail=provider.name)
            try:
                async with asyncio.timeout(per_search):
                    found = await provider.search(query, limit=limit)
            except Exception as exc:
                reason = mask_key_params(provider.redact(_failure_reason(exc, per_search)))
                timeline.note(outcome="failed", detail=f"{provider.name}: {reason}")
                failures.append(_failed(provider.name, query, reason, exc, on_event))
                continue
            timeline.note(size=len(found))
        hits = _own_hits(found, query, limit)
        if hits:
            count = f"{len(hits)} result{'' if len(hits) == 1 else 's'}"
            on_event(
                Event(
                    "search",
                    f"{provider.name}: {count} for {query!r}",
                    {"query": query, "provider": provider.name, "hits": len(hits)},
                )
            )
            return hits, failures
        answered_empty = provider.name
    if answered_empty is not None:
        on_event(
            Event(
                "search",
                f"no results for {query!r}",
                {"query": query, "provider": answered_empty, "hits": 0},
            )
        )
    return [], failures


async def run_searches(
    queries: list[str],
    providers: list[SearchProvider],
    *,
    limit: int,
    timeout: float,  # noqa: ASYNC109 (per search, not for the whole call)
    on_event: ProgressCallback = no_progress,
    concurrency: int = 4,
) -> tuple[list[SearchHit], list[SearchFailure]]:
    """Search every query, falling back through ``providers`` in order.

    Queries run concurrently (at most ``concurrency`` at once; repeats and blank
    ones are searched once / not at all). For each query the first provider that
    answers with at least one hit wins; a provider that fails or exceeds
    ``timeout`` seconds is recorded as a :class:`SearchFailure` and the next one is
    tried, and one that answers with nothing is passed over without a failure.
    Provider problems never raise. Hits come back in query order, then rank;
    failures in query order, then provider order.
    """
    if not providers:
        raise ValueError("run_searches needs at least one provider")
    if limit < 1 or concurrency < 1 or timeout <= 0:
        raise ValueError("limit and concurrency must be >= 1 and timeout > 0")
    semaphore = asyncio.Semaphore(concurrency)

    async def bounded(query: str) -> tuple[list[SearchHit], list[SearchFailure]]:
        async with semaphore:
            return await _search_one(
                query, providers, limit=limit, per_search=timeout, on_event=on_event
            )

    unique = [q for q in dict.fromkeys(queries) if q.strip()]
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(bounded(query)) for query in unique]
    hits = [hit for task in tasks for hit in task.result()[0]]
    failures = [failure for task in tasks for failure in task.result()[1]]
    return hits, failures
