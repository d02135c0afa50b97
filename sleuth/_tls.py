"""One TLS context per process, shared by every HTTP client sleuth makes.

Building a context loads the CA bundle (tens of milliseconds); a run makes several
clients (search, fetch, model, Ollama probe), so a cached rerun spent most of its
time here before the context was shared. ``ssl.SSLContext`` is safe to share.

:class:`LazyTransport` loads it only for the first ``https://`` request: a client that
only speaks plain HTTP (a local SearXNG, Ollama or model server), or is never used
before a run's first search (the default provider has its own), does not wait for it.
:func:`client_tls` gives a client one, unless proxies are configured in the environment
(httpx mounts those only for clients on its default transport).
"""

from __future__ import annotations

import ssl
import urllib.request
from functools import lru_cache
from typing import Any

import httpx

__all__ = ["LazyTransport", "client_tls", "ssl_context"]


def ssl_context(trust_env: bool = True) -> ssl.SSLContext:
    """The verifying context; ``trust_env`` honours ``SSL_CERT_FILE``/``SSL_CERT_DIR``."""
    # One cache key per value, however it is passed (f(), f(True), f(trust_env=True)).
    return _context(bool(trust_env))


@lru_cache(maxsize=2)
def _context(trust_env: bool) -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=trust_env)


class LazyTransport(httpx.AsyncBaseTransport):
    """``httpx.AsyncHTTPTransport(verify=ssl_context(trust_env), **options)``, made when the
    first ``https://`` request needs it; plain ``http://`` requests go through a twin
    made without the CA bundle.

    The twin's context trusts no certificate at all (a fresh ``PROTOCOL_TLS_CLIENT``
    context: hostname checked, certificate required, no CA loaded), so it could not
    complete a TLS handshake even if it were ever asked to.
    """

    def __init__(self, *, trust_env: bool = True, **options: Any) -> None:
        self._trust_env = trust_env
        self._options = options
        self._made: dict[bool, httpx.AsyncHTTPTransport] = {}

    def _transport(self, tls: bool) -> httpx.AsyncHTTPTransport:
        if tls not in self._made:
            context = (
                ssl_context(self._trust_env) if tls else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            )
            self._made[tls] = httpx.AsyncHTTPTransport(
                verify=context, trust_env=self._trust_env, **self._options
            )
        return self._made[tls]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the transport for its scheme."""
        return await self._transport(request.url.scheme == "https").handle_async_request(request)

    async def aclose(self) -> None:
        """Close the transports made so far."""
        for transport in self._made.values():
            await transport.aclose()


def client_tls(*, trust_env: bool = True, limits: httpx.Limits | None = None) -> dict[str, Any]:
    """The keywords giving an ``httpx.AsyncClient`` the shared context and ``limits``:
    through a :class:`LazyTransport`, or eagerly when the client is to use proxies from
    the environment (any ``*_proxy`` variable: httpx mounts them only for a client on its
    default transport)."""
    if trust_env and urllib.request.getproxies():
        return {"verify": ssl_context(trust_env), **({"limits": limits} if limits else {})}
    options: dict[str, Any] = {"limits": limits} if limits else {}
    return {"transport": LazyTransport(trust_env=trust_env, **options)}
