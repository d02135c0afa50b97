"""What the fetcher reads of the settings: :class:`FetchConfig`, built from them at the edge."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from sleuth._config import picked

__all__ = ["FetchConfig"]


@dataclass(frozen=True)
class FetchConfig:
    """The fetcher's settings (the same names as in the settings table, where each is
    described): its URL rules, limits, manners toward each site, and the extraction
    workers it starts."""

    allow_private_urls: bool
    fetch_engine: Literal["httpx", "playwright"]
    timeout: float
    max_page_bytes: int
    max_redirects: int
    concurrency: int
    per_host_concurrency: int
    user_agent: str
    host_delay: float
    max_pages_per_host: int
    respect_robots: bool
    allow_domains: tuple[str, ...]
    deny_domains: tuple[str, ...]
    max_chars: int
    extract_timeout: float
    extract_memory_mb: int
    extract_workers: int

    @classmethod
    def of(cls, settings: object) -> FetchConfig:
        """The fetcher's part of ``settings``: the settings table (or a mapping of its
        fields); a FetchConfig is returned as it is."""
        if isinstance(settings, FetchConfig):
            return settings
        values = picked(settings, [f.name for f in fields(cls)])
        values["allow_domains"] = tuple(values["allow_domains"])
        values["deny_domains"] = tuple(values["deny_domains"])
        return cls(**values)
