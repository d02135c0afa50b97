"""The search provider seam: a small class with one async method returning typed hits."""

from __future__ import annotations

import html
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar, TypeVar

import httpx

from sleuth.errors import ProviderError
from sleuth.errors import ProviderFailure as ProviderFailure  # re-exported for plugins
from sleuth.models import SearchHit
from sleuth.search.config import SearchConfig

ENTRY_POINT_GROUP = "sleuth.search_providers"

_TAG = re.compile(r"<[^>]{0,200}>")
_SPACE = re.compile(r"\s+")


def clean_text(value: object) -> str:
    """Plain one-line text from an API field that may hold HTML highlights or entities."""
    if value is None:
        return ""
    text = html.unescape(_TAG.sub("", str(value)))
    return _SPACE.sub(" ", text).strip()


class SearchProvider(ABC):
    """A search backend.

    Subclasses set ``name`` (and ``env_keys`` for the API keys they need), and
    implement :meth:`search`. They are registered with :func:`register` or through
    the ``sleuth.search_providers`` entry point group, never picked by if/elif.
    """

    name: ClassVar[str]
    #: Environment variables that must be set for the provider to work.
    env_keys: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        settings: SearchConfig | object,
        client: httpx.AsyncClient,
        env: Mapping[str, str] | None = None,
    ) -> None:
        #: The providers' settings (a :class:`~sleuth.search.config.SearchConfig`, made
        #: from the settings table when given that).
        self.settings = SearchConfig.of(settings)
        self.client = client
        env = os.environ if env is None else env
        missing = [key for key in self.env_keys if not env.get(key)]
        if missing:
            needed = " and ".join(missing)
            raise ProviderError(
                f"search provider '{self.name}' needs {needed} set in the environment"
            )
        self.keys = {key: env[key] for key in self.env_keys}

    @abstractmethod
    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """Return at most ``limit`` hits for ``query``; raise on failure (the caller records it)."""

    def hit(
        self, query: str, rank: int, *, title: object, url: object, snippet: object = ""
    ) -> SearchHit | None:
        """Build a hit from loosely typed API fields; ``None`` when the URL is unusable."""
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return None
        return SearchHit(
            title=clean_text(title) or url,
            url=url,
            snippet=clean_text(snippet),
            rank=rank,
            provider=self.name,
            query=query,
        )

    def hits(
        self,
        query: str,
        items: Iterable[Any],
        limit: int,
        *,
        title: str = "title",
        url: str = "url",
        snippet: str = "snippet",
    ) -> list[SearchHit]:
        """Hits from a list of result objects, reading the named keys of each.

        Entries that are not objects, lack a usable URL or repeat an earlier URL are
        skipped; the rest are ranked 1, 2, 3... in answer order, at most ``limit``.
        """
        found: list[SearchHit] = []
        seen: set[str] = set()
        for item in items:
            if len(found) >= limit:
                break
            if not isinstance(item, Mapping):
                continue
            made = self.hit(
                query,
                len(found) + 1,
                title=item.get(title),
                url=item.get(url),
                snippet=item.get(snippet),
            )
            if made is not None and made.url not in seen:
                seen.add(made.url)
                found.append(made)
        return found

    def redact(self, text: str) -> str:
        """``text`` with every API key of this provider replaced by ``***``."""
        for secret in self.keys.values():
            if secret:
                text = text.replace(secret, "***")
        return text


_P = TypeVar("_P", bound=type[SearchProvider])
_REGISTRY: dict[str, type[SearchProvider]] = {}
_ENTRY_POINTS: dict[str, EntryPoint] = {}
_entry_points_loaded = False


def register(cls: _P) -> _P:
    """Class decorator: make a provider available by its ``name``."""
    _REGISTRY[cls.name] = cls
    return cls


def _load_entry_points() -> None:
    """Note the plugged-in providers; each is imported only when it is asked for."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTRY:
            _ENTRY_POINTS.setdefault(ep.name, ep)


def provider_names() -> list[str]:
    """Every registered provider name, built-in and plugged in."""
    _load_entry_points()
    return sorted(set(_REGISTRY) | set(_ENTRY_POINTS))


def get_provider(name: str) -> type[SearchProvider]:
    """The provider class registered as ``name``; ``ProviderError`` if there is none."""
    _load_entry_points()
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name not in _ENTRY_POINTS:
        known = ", ".join(provider_names())
        raise ProviderError(f"unknown search provider '{name}' (known: {known})")
    try:
        cls = _ENTRY_POINTS[name].load()
    except Exception as exc:  # a broken plugin is a configuration problem, not a crash
        raise ProviderError(f"search provider '{name}' could not be loaded: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, SearchProvider)):
        raise ProviderError(f"search provider '{name}' is not a SearchProvider subclass")
    _REGISTRY[name] = cls
    return cls
