"""Shared plumbing for providers that answer JSON over HTTP (SearXNG and the keyed APIs)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

import httpx

from sleuth.search.base import ProviderFailure, SearchProvider

# Google and SerpApi take their key as a query parameter, and httpx logs request URLs
# at INFO level; this pattern finds such keys so the log filter below can mask them.
_KEY_PARAM = re.compile(r"([?&](?:api_key|apikey|key|token)=)[^&#\s\"']+", re.IGNORECASE)


def seconds(value: float) -> str:
    """``15.0`` -> ``"15s"``, ``0.5`` -> ``"0.5s"``: a timeout as a user reads it."""
    return f"{value:g}s"


def mask_key_params(text: str) -> str:
    """``text`` with the values of key-like URL query parameters replaced by ``***``."""
    return _KEY_PARAM.sub(r"\1***", text)


class _MaskKeysFilter(logging.Filter):
    """Masks API keys in the URLs that httpx writes to its log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                mask_key_params(str(arg)) if isinstance(arg, httpx.URL | str) else arg
                for arg in record.args
            )
        return True


def install_log_masking() -> None:
    """Attach the key-masking filter to the ``httpx`` logger, once."""
    logger = logging.getLogger("httpx")
    if not any(isinstance(f, _MaskKeysFilter) for f in logger.filters):
        logger.addFilter(_MaskKeysFilter())


install_log_masking()


def json_list(data: object, *path: str) -> list[Any]:
    """The list found at ``path`` inside a decoded JSON object.

    A missing key or ``null`` along the way means "no results" and gives ``[]``;
    anything of the wrong shape is an invalid response.
    """
    node: object = data
    for key in path:
        if not isinstance(node, Mapping):
            raise ProviderFailure("invalid response")
        node = node.get(key)
        if node is None:
            return []
    if not isinstance(node, list):
        raise ProviderFailure("invalid response")
    return node


class JsonApiProvider(SearchProvider):
    """A provider that sends one HTTP request per search and reads a JSON object back."""

    def status_reason(self, status: int) -> str:
        """The failure reason for a non-2xx answer; subclasses may add a hint."""
        if status == 429:
            return "rate limited (HTTP 429)"
        if status in (401, 403) and self.env_keys:
            return f"HTTP {status} (is {' / '.join(self.env_keys)} valid?)"
        return f"HTTP {status}"

    async def request_json(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str | int] | None = None,
        json: Mapping[str, object] | None = None,
        headers: Mapping[str, str] | None = None,
        follow_redirects: bool = False,
    ) -> Any:
        """Send the request and decode the answer; ``ProviderFailure`` on any problem.

        Redirects are not followed unless asked: an API key in a custom header must
        never travel to another host.
        """
        try:
            response = await self.client.request(
                method,
                url,
                params=params,
                json=json,
                headers=headers,
                follow_redirects=follow_redirects,
            )
        except httpx.TimeoutException:
            raise ProviderFailure(
                f"timed out after {seconds(self.settings.search_timeout)}"
            ) from None
        except httpx.HTTPError as exc:
            detail = mask_key_params(self.redact(str(exc))) or type(exc).__name__
            raise ProviderFailure(
                f"request failed: {detail}", unreachable=isinstance(exc, httpx.ConnectError)
            ) from None
        if not response.is_success:
            raise ProviderFailure(self.status_reason(response.status_code))
        try:
            return response.json()
        except ValueError:
            raise ProviderFailure("invalid response") from None
