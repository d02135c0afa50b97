"""The one Origin rule of sleuth's local servers (``sleuth serve``, ``sleuth mcp --http``).

A browser names the page that sent a request in its ``Origin`` header. A request is
taken only when it carries none (a program, or a browser's same-origin GET) or names
exactly the origin it was sent to: the same scheme, host and port as the request's own
``Host``. A page of another local server (``http://localhost:<another port>``), a
sandboxed frame (``null``) or any site is refused, so no page the user has open can
drive a research or a tool call. Both servers check ``Host`` too (DNS rebinding), so
the origin compared against is a loopback one.

No imports beyond the standard library: the web page and the MCP server both use it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["SameOriginOnly", "origin_allowed"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def origin_allowed(origin: str | None, scheme: str, host: str | None) -> bool:
    """Whether a request with this ``Origin`` header, sent with ``scheme`` to ``host``
    (its ``Host`` header), may be served: no Origin, or exactly its own."""
    if origin is None:
        return True
    if not host:
        return False
    return origin.strip().lower() == f"{scheme}://{host.strip()}".lower()


class SameOriginOnly:
    """ASGI middleware: HTTP requests whose Origin :func:`origin_allowed` refuses get a
    403 and never reach ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {
                key.decode("latin-1").lower(): value.decode("latin-1")
                for key, value in scope.get("headers", [])
            }
            if not origin_allowed(headers.get("origin"), scope["scheme"], headers.get("host")):
                body = b'{"error": "cross-origin request refused"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 403,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
