"""A loopback world of many large pages, for what a deep run holds in memory.

``BigWorld(pages=80, size=4_500_000)`` serves ``pages`` HTML pages of about ``size``
bytes each (long articles of real-looking sentences about one subject, every page on
its own loopback address, so no per-host limit applies) and a SearXNG-compatible
``/search`` that answers every query with a rotating share of them, so the queries of a
deep tree reach them all. With ``ScriptedLLM`` (``sleuth.testing.llm``) and
``ScriptedResearcher`` it is what :func:`bench.deep.big_deep_rss` runs a deep CLI
research against. Everything stays on loopback; start it with ``with BigWorld() as w``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["QUESTION", "BigWorld", "big_world"]

#: The question the pages answer (its words are in every title, snippet and page).
QUESTION = "How do tidal forces heat the interior of Europa and other icy moons?"
_WORDS = tuple(
    [
        "tidal",
        "heating",
        "europa",
        "ice",
        "shell",
        "ocean",
        "jupiter",
        "orbit",
        "eccentricity",
        "resonance",
        "io",
        "ganymede",
        "friction",
        "interior",
        "mantle",
        "flexing",
        "moon",
        "gravity",
        "heat",
        "flux",
        "crust",
        "plume",
        "enceladus",
        "saturn",
        "callisto",
        "laplace",
        "geology",
        "radiation",
        "silicate",
        "core",
        "water",
    ]
)


def _pool(count: int = 4000) -> list[str]:
    """Sentences to build pages from (made once: a page is a shuffle of them)."""
    rng = random.Random(0)
    return [" ".join(rng.choice(_WORDS) for _ in range(18)).capitalize() for _ in range(count)]


def _page(n: int, size: int, pool: list[str]) -> bytes:
    """Page ``n``: an article of about ``size`` bytes, different from every other."""
    rng = random.Random(n)
    order = list(range(len(pool)))
    rng.shuffle(order)
    title = f"Tidal heating of Europa and icy moons, part {n}"
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{title}</title></head><body><article><h1>{title}</h1>",
    ]
    total, i = 0, 0
    while total < size:
        para = f"<p>Study {n}.{i}: {pool[order[i % len(order)]]}. Tidal heating of Europa.</p>"
        parts.append(para)
        total += len(para)
        i += 1
    parts.append("</article></body></html>")
    return "".join(parts).encode()


class BigWorld:
    """The pages and the search (see the module doc); ``search_url`` is its SearXNG."""

    def __init__(self, pages: int = 80, size: int = 4_500_000) -> None:
        self.count = pages
        self.size = size
        self.pages: dict[str, bytes] = {}
        self.search_url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list[asyncio.Server] = []

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            target = head.split(b" ", 2)[1].decode()
            host = writer.get_extra_info("sockname")
            key = f"http://{host[0]}:{host[1]}{urlsplit(target).path}"
            if urlsplit(target).path == "/search":
                body, kind = self._search(target), b"application/json"
            elif key in self.pages:
                body, kind = self.pages[key], b"text/html; charset=utf-8"
            else:
                body, kind = b"not found", b"text/plain"
            status = b"200 OK" if body != b"not found" else b"404 Not Found"
            writer.write(
                b"HTTP/1.1 "
                + status
                + b"\r\nContent-Type: "
                + kind
                + b"\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
            )
            writer.write(body)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def _search(self, target: str) -> bytes:
        query = parse_qs(urlsplit(target).query).get("q", [""])[0]
        urls = sorted(self.pages)
        start = int(hashlib.sha256(query.encode()).hexdigest(), 16) % len(urls)
        chosen = (urls[start:] + urls[:start])[:20]
        results: list[dict[str, Any]] = [
            {
                "url": url,
                "title": f"Tidal heating of Europa and icy moons, part {url.rsplit('-', 1)[-1]}",
                "content": "How tidal forces heat the interior of Europa, Io and other icy moons.",
            }
            for url in chosen
        ]
        return json.dumps({"results": results}).encode()

    async def _start(self) -> None:
        pool = _pool()
        for n in range(self.count):
            server = await asyncio.start_server(self._answer, f"127.0.4.{n + 1}", 0)
            port = server.sockets[0].getsockname()[1]
            self.pages[f"http://127.0.4.{n + 1}:{port}/europa-tides-{n}"] = _page(
                n, self.size, pool
            )
            self._servers.append(server)
        search = await asyncio.start_server(self._answer, "127.0.4.250", 0)
        self._servers.append(search)
        self.search_url = f"http://127.0.4.250:{search.sockets[0].getsockname()[1]}"

    def __enter__(self) -> BigWorld:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(600)
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            for server in self._servers:
                server.close()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)


@contextmanager
def big_world(pages: int = 80, size: int = 4_500_000) -> Iterator[BigWorld]:
    """A :class:`BigWorld` for the ``with`` block."""
    with BigWorld(pages, size) as world:
        yield world
