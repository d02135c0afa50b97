"""URL canonicalisation and domain helpers, shared by the rank and fetch stages.

``canonicalize`` maps the many spellings of one page (tracking parameters,
fragments, default ports, case, parameter order) onto one string, so that the
pipeline can de-duplicate and never fetch one page twice. It is deliberately
conservative: two URLs it maps together must almost surely serve the same page.
"""

from __future__ import annotations

import ipaddress
import re
import threading
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

import idna

__all__ = ["TRACKING_PARAMS", "canonicalize", "host_of", "registered_domain"]

#: Query parameters that only say where a click came from, never what the page is.
TRACKING_PARAMS = frozenset(
    {
        "gclid",
        "fbclid",
        "mc_cid",
        "mc_eid",
        "ref",
        "ref_src",
        "igshid",
        "msclkid",
        "_hsenc",
        "_hsmi",
        "yclid",
    }
)

_DEFAULT_PORTS = {"http": 80, "https": 443}
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
# RFC 3986 unreserved characters: their percent-encoded and literal forms are equivalent.
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _normalise_percent(part: str) -> str:
    """Upper-case percent escapes and decode the ones that encode unreserved characters."""

    def fix(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    return _PERCENT.sub(fix, part)


def _idna_host(host: str) -> str:
    """Lower-case ``host`` and turn a Unicode name into its ASCII (punycode) form."""
    host = host.strip().rstrip(".").lower()
    if not host or host.isascii():
        return host
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError:
        try:
            # Some real names are valid IDNA 2003 but not IDNA 2008 (e.g. with emoji).
            return host.encode("idna").decode("ascii")
        except UnicodeError:
            return host


# A scheme, and not "host:port" (the character after the colon is not a digit).
_HAS_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?!\d)")


def _split(url: str) -> SplitResult:
    url = url.strip()
    if not _HAS_SCHEME.match(url) and not url.startswith("//"):
        # A bare "example.com/path" is what people paste; read it as http.
        url = "http://" + url
    return urlsplit(url)


def host_of(url: str) -> str:
    """The lower-cased ASCII host of ``url`` (no port, no brackets); ``""`` if none."""
    try:
        host = _split(url).hostname or ""
    except ValueError:
        return ""
    return _idna_host(host)


def _netloc(parts: SplitResult, scheme: str) -> str:
    host = _idna_host(parts.hostname or "")
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc = f"{host}:{port}"
    if parts.username is not None:
        userinfo = parts.username
        if parts.password is not None:
            userinfo += ":" + parts.password
        netloc = f"{userinfo}@{netloc}"
    return netloc


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, so ``/a/./b/../c`` and ``/a/c`` compare equal."""
    if "." not in path:
        return path
    out: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if len(out) > 1:
                out.pop()
        elif segment != ".":
            out.append(segment)
    result = "/".join(out)
    if path.endswith(("/.", "/..")):
        result += "/"
    return result if result.startswith("/") else "/" + result


def _path(raw: str) -> str:
    path = _remove_dot_segments(_normalise_percent(raw or "/"))
    if len(path) > 1:
        # "/docs/" and "/docs" are one page on nearly every site; keep the root as "/".
        path = path.rstrip("/ \t") or "/"  # raw blanks too: the URL is stripped anyway
    return path


def _is_tracking(key: str) -> bool:
    key = unquote(key).lower()
    return key.startswith("utm_") or key in TRACKING_PARAMS


def _query(raw: str) -> str:
    # Work on the raw pairs rather than parse-and-reencode, which would change
    # the encoding of values ("+" vs "%20") and so the identity of the page.
    pairs = []
    for piece in raw.split("&"):
        piece = piece.strip()  # raw blanks are not part of a value (spaces are %20 or +)
        if not piece:
            continue
        key = piece.split("=", 1)[0]
        if _is_tracking(key):
            continue
        pairs.append(_normalise_percent(piece))
    return "&".join(sorted(pairs))


def canonicalize(url: str) -> str:
    """The canonical form of ``url``, used as the identity of a page.

    Lower-cases scheme and host (IDNA hosts become punycode), drops default ports,
    the fragment and tracking parameters (``utm_*``, ``gclid``, ``fbclid``, ...),
    sorts the remaining query parameters, normalises percent-escapes and strips a
    trailing slash from non-root paths. Never raises: a URL it cannot parse is
    returned stripped.
    """
    try:
        parts = _split(url)
        scheme = parts.scheme.lower()
        return urlunsplit(
            (scheme, _netloc(parts, scheme), _path(parts.path), _query(parts.query), "")
        )
    except ValueError:
        return url.strip()


_extractor: Any = None
_extractor_lock = threading.Lock()


def _tld_extractor() -> Any:
    """One shared ``TLDExtract`` on the bundled suffix list: it never downloads."""
    global _extractor
    with _extractor_lock:
        if _extractor is None:
            import tldextract

            _extractor = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
        return _extractor


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def registered_domain(url: str) -> str:
    """The registrable domain of ``url`` (or of a bare host): ``docs.python.org`` → ``python.org``.

    Uses the public suffix list bundled with tldextract, so ``github.com.evil.io``
    is ``evil.io``. IP addresses and hosts without a public suffix (``localhost``,
    ``foo.internal``) are their own domain.
    """
    host = host_of(url)
    if not host or _is_ip(host):
        return host
    result = _tld_extractor()(host)
    if not result.suffix or not result.domain:
        return host
    return f"{result.domain}.{result.suffix}"
