"""What searching reads of the settings: :class:`SearchConfig`, built from them at the edge."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from sleuth._config import picked

__all__ = ["SearchConfig"]


@dataclass(frozen=True)
class SearchConfig:
    """The search providers' settings (the same names as in the settings table, where
    each is described): which providers, in fallback order, how long a search may take,
    the SearXNG instance, the User-Agent, and for the ``local`` provider the documents
    folder, the store's home and the extraction limits it indexes with. A provider
    reads it as ``self.settings``."""

    search: tuple[str, ...]
    search_timeout: float
    searxng_url: str | None
    user_agent: str
    docs: Path | None
    home: Path | None
    extract_timeout: float
    extract_memory_mb: int
    extract_workers: int

    @classmethod
    def of(cls, settings: object) -> SearchConfig:
        """The providers' part of ``settings``: the settings table (or a mapping of its
        fields); a SearchConfig is returned as it is."""
        if isinstance(settings, SearchConfig):
            return settings
        values = picked(settings, [f.name for f in fields(cls)])
        values["search"] = tuple(values["search"])
        return cls(**values)
