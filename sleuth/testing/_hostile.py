"""Responses for the hostile cases: slow, endless, broken, lying and empty pages.

Every streaming body checks the shared ``stopping`` event between chunks, so a
shutdown ends it within a tenth of a second; a client that disconnects ends it
through Starlette's disconnect listener.
"""

from __future__ import annotations

import asyncio
import html
import random
import threading
import zlib
from collections.abc import AsyncIterator, Callable
from functools import cache

from starlette.responses import RedirectResponse, Response, StreamingResponse

from sleuth.testing._corpus import Corpus, HostileEntry

__all__ = ["BOMB_INFLATED_SIZE", "HostileResponder", "gzip_bomb_size"]

HTML = "text/html; charset=utf-8"

#: Zeros per deflate segment and segments per bomb: 128 x 8 MiB = 1 GiB inflated.
_BOMB_SEGMENT = 8 << 20
_BOMB_SEGMENTS = 128
BOMB_INFLATED_SIZE = _BOMB_SEGMENT * _BOMB_SEGMENTS
#: A gzip member header: magic, deflate, no flags, mtime 0, max compression, Unix.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03"

SLOW_DRIP_SECONDS = 3600
_TICK = 0.1


@cache
def _bomb_parts() -> tuple[bytes, bytes]:
    """One deflate segment of 8 MiB of zeros (about 8 KB) and the stream's final block.

    The segment ends with a full flush, so it neither refers back to earlier data
    nor is referred to later: repeating it N times is a valid deflate stream of
    N x 8 MiB zeros. The whole bomb is computed once, in about 50 ms.
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    segment = compressor.compress(bytes(_BOMB_SEGMENT)) + compressor.flush(zlib.Z_FULL_FLUSH)
    return segment, compressor.flush(zlib.Z_FINISH)


#: CRC-32 of 1 GiB of zeros, for the gzip trailer (``_bomb_crc()`` recomputes it in 0.5 s).
_BOMB_CRC = 0x5B64C2B0


def _bomb_crc() -> int:
    """CRC-32 of the bomb's inflated bytes, the slow way: how ``_BOMB_CRC`` was made."""
    crc = 0
    for _ in range(_BOMB_SEGMENTS):
        crc = zlib.crc32(bytes(_BOMB_SEGMENT), crc)
    return crc


def gzip_bomb_size() -> int:
    """Bytes on the wire for the gzip bomb (header + segments + final block + trailer)."""
    segment, final = _bomb_parts()
    return len(_GZIP_HEADER) + len(segment) * _BOMB_SEGMENTS + len(final) + 8


@cache
def _binary_body() -> bytes:
    """32 KiB that start like a PNG and go on as seeded random bytes."""
    noise = random.Random(20240601).randbytes(32 * 1024)
    return b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + noise


def _error_page(status: int, reason: str) -> Response:
    body = (f"<!DOCTYPE html><html><head><title>{status} {reason}</title></head>"
            f"<body><h1>{status} {reason}</h1><p>nginx</p></body></html>")
    return Response(body, status_code=status, media_type=HTML)


class HostileResponder:
    """Builds the response for each hostile case; one instance per running web."""

    def __init__(self, corpus: Corpus, stopping: threading.Event) -> None:
        self.corpus = corpus
        self.stopping = stopping
        self._filler = _filler_chunk(corpus)
        builders: dict[str, Callable[[HostileEntry, str], Response]] = {
            "slow_drip": self._slow_drip, "endless": self._endless,
            "gzip_bomb": self._gzip_bomb, "redirect_loop": self._redirect_loop,
            "binary_html": lambda case, path: Response(_binary_body(), media_type=HTML),
            "not_found": lambda case, path: _error_page(404, "Not Found"),
            "forbidden": lambda case, path: _error_page(403, "Forbidden"),
            "server_error": lambda case, path: _error_page(500, "Internal Server Error"),
            "empty": lambda case, path: Response(b"", media_type=HTML),
            "wrong_charset": self._file_response, "nav_only": self._file_response,
            "pdf": self._file_response,
        }
        self._builders = builders

    def paths(self, case: HostileEntry) -> tuple[str, ...]:
        """The paths a case answers on (the redirect loop has a second one)."""
        if case.name == "redirect_loop":
            return (case.path, case.path + "/next")
        return (case.path,)

    def respond(self, case: HostileEntry, path: str) -> Response:
        """The response for ``case`` requested at ``path`` (one of ``paths(case)``)."""
        return self._builders[case.name](case, path)

    def _file_response(self, case: HostileEntry, path: str) -> Response:
        assert case.file is not None, case.name
        if case.name == "pdf":
            media = "application/pdf"
        elif case.declared_charset:
            media = f"text/html; charset={case.declared_charset}"
        else:
            media = HTML
        return Response(self.corpus.body(case.file), media_type=media)

    def _redirect_loop(self, case: HostileEntry, path: str) -> Response:
        target = case.path if path != case.path else case.path + "/next"
        return RedirectResponse(target, status_code=302)

    def _slow_drip(self, case: HostileEntry, path: str) -> Response:
        page = (f"<!DOCTYPE html><html><head><title>{html.escape(case.title)}</title></head>"
                f"<body><h1>{html.escape(case.title)}</h1>"
                + f"<p>{html.escape(case.snippet)}</p>" * 40 + "</body></html>").encode()
        body = (page * (SLOW_DRIP_SECONDS // len(page) + 1))[:SLOW_DRIP_SECONDS]
        return StreamingResponse(self._drip(body), media_type=HTML)

    async def _drip(self, body: bytes) -> AsyncIterator[bytes]:
        for index in range(len(body)):
            if index and not await self._pause(1.0):
                return
            yield body[index:index + 1]

    async def _pause(self, seconds: float) -> bool:
        """Sleep ``seconds`` in short ticks; ``False`` as soon as the web is stopping."""
        for _ in range(round(seconds / _TICK)):
            if self.stopping.is_set():
                return False
            await asyncio.sleep(_TICK)
        return not self.stopping.is_set()

    def _endless(self, case: HostileEntry, path: str) -> Response:
        head = (f"<!DOCTYPE html><html><head><title>{html.escape(case.title)}</title></head>"
                f"<body><h1>{html.escape(case.title)}</h1>").encode()
        return StreamingResponse(self._forever(head), media_type=HTML)

    async def _forever(self, head: bytes) -> AsyncIterator[bytes]:
        yield head
        while not self.stopping.is_set():
            yield self._filler
            await asyncio.sleep(0)  # let other connections run between chunks

    def _gzip_bomb(self, case: HostileEntry, path: str) -> Response:
        headers = {"Content-Encoding": "gzip", "Content-Length": str(gzip_bomb_size())}
        return StreamingResponse(self._bomb(), media_type=HTML, headers=headers)

    async def _bomb(self) -> AsyncIterator[bytes]:
        segment, final = _bomb_parts()
        yield _GZIP_HEADER
        for _ in range(_BOMB_SEGMENTS):
            if self.stopping.is_set():
                return
            yield segment
            await asyncio.sleep(0)
        yield final + _BOMB_CRC.to_bytes(4, "little") + BOMB_INFLATED_SIZE.to_bytes(4, "little")


def _filler_chunk(corpus: Corpus, size: int = 64 * 1024) -> bytes:
    """About ``size`` bytes of article-like HTML made from the corpus's own sentences."""
    paragraphs = [line.strip() for doc in corpus.docs[:8] for line in doc.text.split("\n")
                  if len(line.strip()) > 80]
    if not paragraphs:
        paragraphs = ["Lorem ipsum dolor sit amet, consectetur adipiscing elit." * 4]
    parts: list[str] = []
    total = 0
    while total < size:
        for paragraph in paragraphs:
            piece = f"<article><p>{html.escape(paragraph)}</p></article>\n"
            parts.append(piece)
            total += len(piece.encode())
            if total >= size:
                break
    return "".join(parts).encode()
