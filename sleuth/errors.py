"""The one exception tree that sleuth raises.

Library exceptions (httpx, openai, pypdf, ...) are translated into these at the
boundary, so callers catch ``SleuthError`` and nothing else::

    SleuthError
    ├── ConfigError          bad input or settings: the CLI exits 2 with a one-line message
    │   └── ProviderError    unknown search provider, or one that lacks its API key
    └── FetchError           one URL could not be fetched (raised by ``fetch_page``)
        └── BlockedURLError  the SSRF guard refused a URL

A research in which single searches or pages fail is not an error: the failures are
recorded in ``Report.failures`` and shown in the report's Gaps section.
"""

from __future__ import annotations


class SleuthError(Exception):
    """Base class of every error sleuth raises on purpose."""


class ConfigError(SleuthError, ValueError):
    """Invalid input or settings; the message is one line a user can act on."""


class ProviderError(ConfigError):
    """A search provider that is unknown or not configured."""


class FetchError(SleuthError):
    """A single page could not be fetched or extracted."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason


class BlockedURLError(FetchError):
    """The URL points somewhere sleuth refuses to go (SSRF guard, scheme, port)."""
