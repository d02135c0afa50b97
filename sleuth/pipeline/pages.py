"""One page on its own: :func:`fetch_page`, ``sleuth.fetch_page``."""

from __future__ import annotations

from sleuth.fetch import FetchConfig
from sleuth.fetch import fetch_page as fetch_with
from sleuth.models import Page
from sleuth.settings import Settings, load_settings

__all__ = ["fetch_page"]


async def fetch_page(url: str, settings: Settings | None = None) -> Page:
    """Fetch one page, through the same SSRF guard and limits as a research; raises
    :class:`~sleuth.errors.BlockedURLError` or :class:`~sleuth.errors.FetchError` when it
    can't. Without ``settings``, they are read from the environment (``load_settings()``).
    """
    return await fetch_with(url, FetchConfig.of(settings or load_settings()))
