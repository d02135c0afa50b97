"""Bytes to text: the charset a body declares (header, BOM, ``<meta>``), checked against
what its bytes are, with sniffing when neither holds; and telling binary from text.

Pure functions that never raise on any input.
"""

from __future__ import annotations

import codecs
import re
from functools import cache

__all__ = ["decode_body", "looks_binary"]


_META_CHARSET = re.compile(
    rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]{1,40})""", re.IGNORECASE
)
# WHATWG: these labels mean windows-1252 in practice; cp1252 is a superset for text.
_LATIN1_LABELS = {
    "iso-8859-1",
    "iso8859-1",
    "latin-1",
    "latin1",
    "l1",
    "ascii",
    "us-ascii",
    "cp819",
    "ibm819",
    "iso_8859-1",
    "windows-1252",
    "cp1252",
}
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Control bytes that never occur in text (everything below 0x20 except \t \n \f \r and ESC).
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27)) + b"\x7f"


@cache
def _text_codecs() -> frozenset[str]:
    """Python's names of the codecs a page may name: real text encodings only.

    ``codecs.lookup`` also knows codecs that are not text encodings at all
    (``unicode_escape`` turns ``\\ud800`` into a lone surrogate, ``undefined`` raises on
    every byte, ``rot13``/``hex`` are transforms, ``idna``/``punycode`` are for host
    names). The list is charset-normalizer's, which names the encodings it can detect,
    less UTF-7, which decodes to lone surrogates (and which browsers refuse too).
    """
    from charset_normalizer.constant import IANA_SUPPORTED

    return frozenset(codecs.lookup(name).name for name in IANA_SUPPORTED if name != "utf_7")


def _codec(label: str | None) -> str | None:
    """Python's codec name for a charset label; None when unknown or not a text encoding."""
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in _LATIN1_LABELS:
        return "cp1252"
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    return name if name in _text_codecs() else None


def _bom_codec(data: bytes) -> str | None:
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name
    return None


def looks_binary(data: bytes) -> bool:
    """Whether ``data`` is not text at all (NUL bytes or many control bytes)."""
    sample = data[:8192]
    if not sample or _bom_codec(sample) in ("utf-16", "utf-32"):
        return False
    if b"\x00" in sample:
        return True
    controls = sum(sample.count(bytes([c])) for c in _CONTROL)
    return controls / len(sample) > 0.05


def _strict(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except (UnicodeError, LookupError):
        return None


def decode_body(data: bytes, charset: str | None = None, *, html: bool = True) -> str:
    """Decode a body to text: BOM, then the declared charset, then sniffing.

    A declared legacy charset loses to a valid UTF-8 reading of non-ASCII bytes:
    servers often label UTF-8 pages ``iso-8859-1``, while legacy text that happens
    to be valid multi-byte UTF-8 is vanishingly rare. Never raises.
    """
    bom = _bom_codec(data)
    if bom:
        return data.decode(bom, errors="replace")
    declared = _codec(charset)
    if declared is None and html:
        match = _META_CHARSET.search(data[:4096])
        declared = _codec(match.group(1).decode("ascii")) if match else None
    if declared in ("utf-16", "utf-32", "utf-16-le", "utf-16-be"):
        # A page that reached us as ASCII-compatible HTML cannot really be UTF-16.
        declared = None
    if declared != "utf-8" and not data.isascii():
        as_utf8 = _strict(data, "utf-8")
        if as_utf8 is not None:
            return as_utf8
    if declared:
        text = _strict(data, declared)
        if text is not None:
            return text
    else:
        text = _strict(data, "utf-8")
        if text is not None:
            return text
    return _guess_decode(data, declared)


def _guess_decode(data: bytes, declared: str | None) -> str:
    try:
        from charset_normalizer import from_bytes

        matches = from_bytes(data[:200_000])
        best = matches.best()
        if best is not None and best.encoding:
            # Latin texts often fit several code pages equally well; windows-1252 is
            # the web's own default (WHATWG), so it wins a tie.
            tied = {
                m.encoding
                for m in matches
                if (m.chaos, m.coherence) == (best.chaos, best.coherence)
            }
            return data.decode("cp1252" if "cp1252" in tied else best.encoding, errors="replace")
    except ImportError:  # charset-normalizer comes with trafilatura; be safe anyway
        pass
    return data.decode(declared or "cp1252", errors="replace")
