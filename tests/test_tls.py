"""The search and model clients load the CA bundle only for HTTPS, and still honour proxies.

A plain-HTTP endpoint (a local SearXNG or model server) is reached without building the
TLS context; a proxy set in the environment is used exactly as before (httpx mounts
environment proxies only on its default transport, so then the context is built as before).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from sleuth.llm._wire import model_http_client
from sleuth.search import make_search_client
from sleuth.settings import Settings

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


async def _serve(lines: list[str]) -> asyncio.AbstractServer:
    """A loopback server that records each request line and answers "hello"."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        lines.append((await reader.readline()).decode().strip())
        while (await reader.readline()).strip():
            pass
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello")
        await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, "127.0.0.1", 0)


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[str]]]:
    lines: list[str] = []
    srv = await _serve(lines)
    host, port = srv.sockets[0].getsockname()[:2]
    try:
        yield f"http://{host}:{port}", lines
    finally:
        srv.close()
        await srv.wait_closed()


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.mark.parametrize("make", ["search", "model"])
async def test_a_proxy_from_the_environment_is_still_used(
    make: str, server: tuple[str, list[str]], no_proxies: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy, lines = server
    monkeypatch.setenv("HTTP_PROXY", proxy)
    client = make_search_client(Settings()) if make == "search" else model_http_client(10)
    async with client:
        reply = await client.get("http://sleuth-proxy-check.invalid/q?x=1")
    assert reply.text == "hello"
    assert lines == ["GET http://sleuth-proxy-check.invalid/q?x=1 HTTP/1.1"]


@pytest.mark.parametrize("make", ["search", "model"])
async def test_plain_http_is_reached_without_a_proxy(
    make: str, server: tuple[str, list[str]], no_proxies: None
) -> None:
    url, lines = server
    client = make_search_client(Settings()) if make == "search" else model_http_client(10)
    async with client:
        reply = await client.get(f"{url}/search?q=x")
    assert reply.text == "hello"
    assert lines == ["GET /search?q=x HTTP/1.1"]


def test_plain_http_does_not_load_the_ca_bundle(tmp_path: Path) -> None:
    """A run against a local SearXNG or model server never waits for the CA bundle."""
    code = """
import asyncio, os, sys
for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
    os.environ.pop(name, None)
from sleuth._tls import _context
from sleuth.llm._wire import model_http_client
from sleuth.search import make_search_client
from sleuth.settings import Settings

async def main():
    async def answer(reader, writer):
        while (await reader.readline()).strip():
            pass
        writer.write(b"HTTP/1.1 200 OK\\r\\ncontent-length: 2\\r\\nconnection: close\\r\\n\\r\\nok")
        await writer.drain()
        writer.close()
    srv = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    for client in (make_search_client(Settings()), model_http_client(10)):
        async with client:
            assert (await client.get(f"http://127.0.0.1:{port}/")).text == "ok"
    srv.close()
    print("CONTEXTS", _context.cache_info().currsize)

asyncio.run(main())
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.stdout.strip().splitlines()[-1:] == ["CONTEXTS 0"], proc.stderr


async def test_https_still_builds_the_verifying_context(no_proxies: None) -> None:
    """The first https request gets the shared, verifying context (a refused connection
    to a closed loopback port is enough to make the transport)."""
    from sleuth._tls import LazyTransport, ssl_context

    transport = LazyTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get("https://127.0.0.1:9/")
    made = transport._made[True]  # the transport it made for https
    context = made._pool._ssl_context  # httpcore keeps the context it dials with
    assert context is ssl_context()
    assert context.verify_mode.name == "CERT_REQUIRED" and context.check_hostname
