"""Responses for the hostile cases: slow, endless, broken, lying and empty pages.

Also odd-but-common content (a page labelled as the wrong type, a cut-off gzip
body, legacy charsets, a cookie wall, one enormous line, text that tries to give
orders), charset labels that name Python codecs which are not text encodings
(``unicode_escape``, ``undefined``), a site whose robots.txt disallows its page for
sleuth, and pages under the byte cap whose markup is built to be costly to extract
(floods of elements).

Every streaming body checks the shared ``stopping`` event between chunks, so a
shutdown ends it within a tenth of a second; a client that disconnects ends it
through Starlette's disconnect listener.
"""

from __future__ import annotations

import asyncio
import gzip
import html
import random
import threading
import zlib
from collections.abc import AsyncIterator, Callable
from functools import cache

from starlette.responses import RedirectResponse, Response, StreamingResponse

from sleuth.testing._corpus import Corpus, HostileEntry

__all__ = [
    "BOMB_INFLATED_SIZE",
    "FLOOD_NOTE",
    "LONG_LINE_INTRO",
    "LONG_LINE_SIZE",
    "ROBOTS_TXT",
    "TRUNCATED_GZIP_SHARE",
    "HostileResponder",
    "br_flood_page",
    "div_flood_page",
    "gzip_bomb_size",
    "long_line_page",
    "paragraph_flood_page",
]

HTML = "text/html; charset=utf-8"

#: Zeros per deflate segment and segments per bomb: 128 x 8 MiB = 1 GiB inflated.
_BOMB_SEGMENT = 8 << 20
_BOMB_SEGMENTS = 128
BOMB_INFLATED_SIZE = _BOMB_SEGMENT * _BOMB_SEGMENTS
#: A gzip member header: magic, deflate, no flags, mtime 0, max compression, Unix.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03"

SLOW_DRIP_SECONDS = 3600
_TICK = 0.1

#: The robots.txt of the ``robots_disallowed`` site: its one page is off limits to sleuth
#: (only), and other robots may read everything but the admin pages.
ROBOTS_TXT = """\
# Release Watch
User-agent: *
Disallow: /admin/
Disallow: /search

User-agent: sleuth
Disallow: /firefox-release-calendar
"""
#: What part of the gzipped ``truncated_gzip`` page is sent (the rest never comes).
TRUNCATED_GZIP_SHARE = 0.6
#: Bytes of the ``long_line`` page: one line of minified HTML, under the default page cap.
LONG_LINE_SIZE = 2_000_000


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
    body = (
        f"<!DOCTYPE html><html><head><title>{status} {reason}</title></head>"
        f"<body><h1>{status} {reason}</h1><p>nginx</p></body></html>"
    )
    return Response(body, status_code=status, media_type=HTML)


class HostileResponder:
    """Builds the response for each hostile case; one instance per running web."""

    def __init__(self, corpus: Corpus, stopping: threading.Event) -> None:
        self.corpus = corpus
        self.stopping = stopping
        self._filler = _filler_chunk(corpus)
        builders: dict[str, Callable[[HostileEntry, str], Response]] = {
            "slow_drip": self._slow_drip,
            "endless": self._endless,
            "gzip_bomb": self._gzip_bomb,
            "redirect_loop": self._redirect_loop,
            "binary_html": lambda case, path: Response(_binary_body(), media_type=HTML),
            "not_found": lambda case, path: _error_page(404, "Not Found"),
            "forbidden": lambda case, path: _error_page(403, "Forbidden"),
            "server_error": lambda case, path: _error_page(500, "Internal Server Error"),
            "empty": lambda case, path: Response(b"", media_type=HTML),
            "wrong_charset": self._file_response,
            "nav_only": self._file_response,
            "pdf": self._file_response,
            "html_as_pdf": self._labelled("application/pdf"),
            "meta_charset": self._labelled("text/html"),  # charset only in a <meta> tag
            "no_charset": self._labelled("text/html"),  # cp1252, declared nowhere
            "cookie_wall": self._file_response,
            "injection": self._file_response,
            "truncated_gzip": self._truncated_gzip,
            "long_line": lambda case, path: Response(long_line_page(), media_type=HTML),
            "div_flood": lambda case, path: Response(div_flood_page(), media_type=HTML),
            "br_flood": lambda case, path: Response(br_flood_page(), media_type=HTML),
            "paragraph_flood": lambda case, path: Response(paragraph_flood_page(), media_type=HTML),
            "robots_disallowed": self._robots_site,
            # Python codecs that are not text encodings: a label is not a licence to
            # run any codec (unicode_escape turns the text's "\\ud800" into a lone
            # surrogate; "undefined" raises on every byte).
            "unicode_escape": self._labelled("text/plain; charset=unicode_escape"),
            "undefined_charset": self._labelled("text/html; charset=undefined"),
        }
        self._builders = builders

    def paths(self, case: HostileEntry) -> tuple[str, ...]:
        """The paths a case answers on (the redirect loop and two robots.txt add one)."""
        if case.name == "redirect_loop":
            return (case.path, case.path + "/next")
        if case.name in ("robots_disallowed", "server_error"):
            return (case.path, "/robots.txt")  # the broken server breaks its robots.txt too
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

    def _labelled(self, content_type: str) -> Callable[[HostileEntry, str], Response]:
        """The case's file under exactly this Content-Type (no charset added)."""

        def respond(case: HostileEntry, path: str) -> Response:
            assert case.file is not None, case.name
            return Response(self.corpus.body(case.file), headers={"Content-Type": content_type})

        return respond

    def _truncated_gzip(self, case: HostileEntry, path: str) -> Response:
        """The page gzipped and cut off: a complete HTTP response, an incomplete gzip stream."""
        assert case.file is not None, case.name
        packed = gzip.compress(self.corpus.body(case.file), compresslevel=9, mtime=0)
        body = packed[: int(len(packed) * TRUNCATED_GZIP_SHARE)]
        return Response(body, media_type=HTML, headers={"Content-Encoding": "gzip"})

    def _robots_site(self, case: HostileEntry, path: str) -> Response:
        if path == "/robots.txt":
            return Response(ROBOTS_TXT, media_type="text/plain; charset=utf-8")
        return self._file_response(case, path)

    def _redirect_loop(self, case: HostileEntry, path: str) -> Response:
        target = case.path if path != case.path else case.path + "/next"
        return RedirectResponse(target, status_code=302)

    def _slow_drip(self, case: HostileEntry, path: str) -> Response:
        page = (
            f"<!DOCTYPE html><html><head><title>{html.escape(case.title)}</title></head>"
            f"<body><h1>{html.escape(case.title)}</h1>"
            + f"<p>{html.escape(case.snippet)}</p>" * 40
            + "</body></html>"
        ).encode()
        body = (page * (SLOW_DRIP_SECONDS // len(page) + 1))[:SLOW_DRIP_SECONDS]
        return StreamingResponse(self._drip(body), media_type=HTML)

    async def _drip(self, body: bytes) -> AsyncIterator[bytes]:
        for index in range(len(body)):
            if index and not await self._pause(1.0):
                return
            yield body[index : index + 1]

    async def _pause(self, seconds: float) -> bool:
        """Sleep ``seconds`` in short ticks; ``False`` as soon as the web is stopping."""
        for _ in range(round(seconds / _TICK)):
            if self.stopping.is_set():
                return False
            await asyncio.sleep(_TICK)
        return not self.stopping.is_set()

    def _endless(self, case: HostileEntry, path: str) -> Response:
        head = (
            f"<!DOCTYPE html><html><head><title>{html.escape(case.title)}</title></head>"
            f"<body><h1>{html.escape(case.title)}</h1>"
        ).encode()
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


_TOWNS = (
    "Lincoln County",
    "Hartford",
    "Canton",
    "Beresford",
    "Worthing",
    "Lennox",
    "Tea",
    "Harrisburg",
    "Parker",
    "Marion",
    "Chancellor",
    "Davis",
)
_COMMENTS = (
    "The turbines would stand closer to our farmhouse than the county setback ever allowed.",
    "Our township needs the tax revenue; the school roof has leaked for six winters.",
    "Nobody has measured the low-frequency noise at night, and that is when we sleep.",
    "Bald eagles nest along the creek below the ridge where tower nine would go.",
    "My family leased our quarter section, and the payments kept the farm in the family.",
    "Shadow flicker across a kitchen window is not a small thing when it lasts an hour.",
    "The road repair agreement must be signed before the first crane crosses the bridge.",
    "Property values near the Jasper County turbines did not fall; please read that study.",
    "Decommissioning bonds should cover removing every foundation, not only the towers.",
    "Put the hearing record online so that people who work days can read it.",
)
#: The first words of the ``long_line`` page's text.
LONG_LINE_INTRO = (
    "The county zoning board received thousands of written comments about "
    "the Prairie Ridge wind farm permit"
)


@cache
def long_line_page(size: int = LONG_LINE_SIZE) -> bytes:
    """A minified page of ``size`` bytes without one line break: a public-comment record."""
    head = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Prairie '
        "Ridge wind farm permit: every public comment | County Record</title></head>"
        '<body><header><a href="/">County Record</a> <a href="/hearings">Hearings'
        "</a></header><article><h1>Prairie Ridge wind farm permit: every public comment"
        f"</h1><p>{LONG_LINE_INTRO}, about turbine setbacks, noise, eagles and road "
        "repairs. We publish the record exactly as the board handed it over: one unbroken "
        'block of text.</p><p class="record">'
    )
    tail = "</p></article><footer>County Record</footer></body></html>"
    parts, total, n = [head], len(head.encode()) + len(tail), 0
    while True:
        n += 1
        piece = (
            f"Comment {n} ({_TOWNS[n % len(_TOWNS)]}): "
            f"{html.escape(_COMMENTS[n * 7 % len(_COMMENTS)])} "
        )
        if total + len(piece.encode()) > size:
            break
        parts.append(piece)
        total += len(piece.encode())
    parts.append(tail)
    return "".join(parts).encode()


#: The first words of the ``paragraph_flood`` page's text.
FLOOD_NOTE = "Note 1: the Moon raises two tidal bulges"


@cache
def div_flood_page(count: int = 280_000) -> bytes:
    """4.8 MB of ``<div>tide a</div>``: one element per 17 bytes, no head, no article.

    Extracting it cost 33 s of CPU and 2.6 GB before pages were read up to their
    30,000th element.
    """
    return b"<div>tide a</div>" * count


@cache
def br_flood_page(count: int = 350_000) -> bytes:
    """4.9 MB of ``tide moon <br>``: one line break every 14 bytes, no other markup."""
    return b"tide moon <br>" * count


@cache
def paragraph_flood_page(count: int = 60_000) -> bytes:
    """A page of ``count`` short paragraphs (3.3 MB): a long record, as some sites publish."""
    head = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>The Moon '
        "and the tides: sixty thousand notes on tidal locking</title></head><body>"
        "<article><h1>The Moon and the tides: sixty thousand notes</h1>"
    )
    notes = (f"<p>Note {n}: the Moon raises two tidal bulges.</p>" for n in range(1, count + 1))
    return (head + "".join(notes) + "</article></body></html>").encode()


def _filler_chunk(corpus: Corpus, size: int = 64 * 1024) -> bytes:
    """About ``size`` bytes of article-like HTML made from the corpus's own sentences."""
    paragraphs = [
        line.strip()
        for doc in corpus.docs[:8]
        for line in doc.text.split("\n")
        if len(line.strip()) > 80
    ]
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
