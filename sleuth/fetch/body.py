"""Reading a response body safely: decompressed with a bound on output, and capped.

Only ``gzip`` and ``deflate`` are asked for (what :class:`Inflater` can decode with a
bound on its output); the decoded bytes are counted as they come, so a body over the cap
(``--max-page-bytes``) is refused as soon as it shows, and a gzip bomb never grows past it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import httpx

from sleuth.extraction.content import Unreadable

__all__ = ["Inflater", "parse_content_type", "read_body"]


@dataclass
class Inflater:
    """Content-Encoding decoder that never produces much more output than asked for.

    httpx's own decoders inflate a whole network chunk at once, which for a gzip
    bomb can be ~1000x the chunk; here output is capped per call, so memory stays
    near ``max_page_bytes`` whatever the compression ratio.
    """

    encoding: str
    _zlib: zlib._Decompress | None = field(default=None, init=False)
    _started: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.encoding = self.encoding.strip().lower()
        if self.encoding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header
        elif self.encoding == "deflate":
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS)
        elif self.encoding not in ("", "identity"):
            raise Unreadable(f"unsupported content encoding {self.encoding}")

    def feed(self, chunk: bytes, room: int) -> bytes:
        """Decode ``chunk``, returning at most ``room + 1`` bytes (enough to see the cap passed)."""
        if self._zlib is None:
            return chunk
        try:
            return self._inflate(chunk, room)
        except zlib.error:
            if self.encoding == "deflate" and not self._started:
                # "deflate" is often sent raw, without the zlib header the RFC asks for.
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                return self._inflate(chunk, room)
            raise Unreadable("corrupt compressed body") from None

    @property
    def complete(self) -> bool:
        """False while a compressed stream has not reached its end (yet, or ever)."""
        return self._zlib is None or self._zlib.eof or not self._started

    def _inflate(self, data: bytes, room: int) -> bytes:
        assert self._zlib is not None
        out = bytearray()
        while data and len(out) <= room:
            piece = self._zlib.decompress(data, room + 1 - len(out))
            self._started = True
            out += piece
            data = self._zlib.unconsumed_tail
            if self._zlib.eof:
                rest = self._zlib.unused_data
                if not rest.strip(b"\0"):
                    break
                # Concatenated gzip members are one body (RFC 1952 section 2.2).
                self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 32)
                data = rest
            elif not piece:
                break
        return bytes(out)


def parse_content_type(header: str) -> tuple[str, str | None]:
    mime, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return mime.strip().lower(), charset


async def read_body(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    """The decoded body, and whether its compressed stream (if any) was complete.

    Raises :class:`~sleuth.extraction.content.Unreadable` ("too large") past ``cap`` bytes.
    """
    too_large = Unreadable(f"too large (over {cap:,} bytes)", response.status_code)
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > cap:
        raise too_large
    if response.is_stream_consumed:
        # The transport handed over a body it had already read and decoded
        # (httpx.MockTransport does); all that is left to do is to measure it.
        if len(response.content) > cap:
            raise too_large
        return response.content, True
    # Raw bytes plus our own bounded inflater: counting decoded bytes is what
    # stops a gzip bomb, and bounding each inflate step is what keeps it small.
    inflater = Inflater(response.headers.get("content-encoding", ""))
    body = bytearray()
    async for chunk in response.aiter_raw():
        body += inflater.feed(chunk, cap - len(body))
        if len(body) > cap:
            raise too_large
    return bytes(body), inflater.complete
