"""A downloaded body to readable text, by what it is: HTML, PDF or plain text.

:func:`convert` is what the fetcher hands its extraction workers for each page: the
body's kind comes from its bytes first (a PDF is a PDF whatever its label, a "PDF" that
is a login page is read as the page it is) and its ``Content-Type`` second; the text is
then extracted, and a page with almost no words, or only a cookie-consent notice, is
refused. A refusal is :class:`Unreadable`, with the reason the report's Gaps will show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sleuth.extraction.decode import decode_body, looks_binary
from sleuth.extraction.html import extract
from sleuth.extraction.pdf import pdf_text
from sleuth.extraction.text import Extracted, ExtractError, normalize_text

__all__ = [
    "ACCEPTED_TYPES",
    "HTML_TYPES",
    "Body",
    "Unreadable",
    "consent_only",
    "convert",
    "kind_of",
]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/x-markdown"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
# Labels that say nothing about the content: look at the bytes instead.
SNIFF_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream"})
#: The content types worth downloading at all.
ACCEPTED_TYPES = HTML_TYPES | TEXT_TYPES | PDF_TYPES | SNIFF_TYPES
_HTML_START = re.compile(rb"^\s*<(!doctype\s+html|html|head|body|meta|title)\b", re.IGNORECASE)
# Fewer words than this is a logo or a "Loading…", not something to read.
_MIN_WORDS = 3
# The stock phrases of cookie-consent dialogs. A short text that is mostly these is a
# "cookie wall" (the article is behind a click), not a page to read and cite.
_CONSENT = re.compile(
    r"\b(cookies?|consent(?:ing)?|(?:our|\d+) partners|personal data|privacy policy|"
    r"cookie policy|accept all|reject all|(?:manage|your) preferences|legitimate interests?|"
    r"personali[sz]ed (?:ads|advertising|content)|store and/or access information)\b",
    re.IGNORECASE,
)
_CONSENT_MAX_WORDS = 400


class Unreadable(Exception):
    """A page problem: ``reason`` for the report's Gaps, ``status`` the HTTP status."""

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status

    def __reduce__(self) -> tuple[type[Unreadable], tuple[str, int | None]]:
        # Raised in an extraction worker and rebuilt in the caller: keep the status too.
        return type(self), (self.reason, self.status)


@dataclass(frozen=True)
class Body:
    """What was downloaded: the final URL, status, ``Content-Type`` (its media type and
    charset) and the (decompressed) bytes."""

    url: str
    status: int
    mime: str
    charset: str | None
    data: bytes


def kind_of(body: Body) -> str:
    """ "html", "pdf" or "text"; raises :class:`Unreadable` for anything else."""
    data, mime = body.data, body.mime
    if data.lstrip()[:5] == b"%PDF-":
        return "pdf"
    if mime in PDF_TYPES:
        # A "PDF" that is an HTML page (a login wall, or a server that labels by the
        # URL's ".pdf") is read as the page it is.
        return "html" if _HTML_START.match(data[:1024]) else "pdf"
    if mime in HTML_TYPES:
        return "html"
    if mime in TEXT_TYPES:
        return "text"
    if mime in SNIFF_TYPES:
        if looks_binary(data):
            raise Unreadable("binary content", body.status)
        return "html" if _HTML_START.match(data[:1024]) else "text"
    raise Unreadable(f"unsupported content type {mime}", body.status)


def convert(body: Body, max_chars: int) -> tuple[Extracted, str]:
    """The body's text and the content type it was read as (runs in an extraction worker)."""
    if not body.data.strip():
        raise Unreadable("empty response", body.status)
    kind = kind_of(body)
    if kind == "pdf":
        try:
            extracted = pdf_text(body.data, max_chars)
        except ExtractError as exc:
            raise Unreadable(str(exc), body.status) from None
        if not extracted.text:
            raise Unreadable("no text in PDF (scanned images only?)", body.status)
        return extracted, "application/pdf"
    if looks_binary(body.data):
        raise Unreadable("binary content", body.status)
    text = decode_body(body.data, body.charset, html=kind == "html")
    if kind == "html":
        extracted = extract(text, body.url)
        mime = body.mime if body.mime in HTML_TYPES else "text/html"
    else:
        extracted = Extracted(text=normalize_text(text))
        mime = body.mime if body.mime in TEXT_TYPES else "text/plain"
    if len(extracted.text.split()) < _MIN_WORDS:
        raise Unreadable("no main text", body.status)
    if consent_only(extracted.text):
        raise Unreadable("cookie wall: only a consent notice, no content", body.status)
    return extracted, mime


def consent_only(text: str) -> bool:
    """Whether ``text`` is a cookie-consent notice and nothing else.

    Short (a real article about cookies is longer), at least four different consent
    phrases, and dense in them: one in every 25 words or more.
    """
    words = len(text.split())
    if words > _CONSENT_MAX_WORDS:
        return False
    found = [m.lower() for m in _CONSENT.findall(text)]
    return len(set(found)) >= 4 and len(found) * 25 >= words
