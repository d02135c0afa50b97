"""SSRF guard: sleuth fetches URLs that came from search results, i.e. from strangers.

Two layers:

* ``check_url`` refuses, before any request, URLs that are obviously not public web
  pages: other schemes, credentials, malformed hosts and literal IP addresses that
  are not public (in every spelling ``inet_aton`` accepts: ``2130706433``,
  ``0177.0.0.1``, ``0x7f.1``, ``[::ffff:127.0.0.1]``).
* ``GuardedNetworkBackend`` is the one that matters: httpcore asks it for every TCP
  connection, so it resolves the name itself, refuses when any address is not
  public, and connects to the address it checked. The address that was checked is
  the address that is used (no DNS-rebinding window), and redirects need no extra
  care because every hop opens its connections here too.

Both layers also apply :class:`DomainRules` (``--allow-domains``/``--deny-domains``),
so the lists hold for every page URL and redirect hop, whoever asked for the page.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx
import idna

from sleuth._tls import ssl_context as shared_ssl_context
from sleuth.errors import BlockedURLError

__all__ = [
    "DomainRules",
    "GuardedNetworkBackend",
    "GuardedTransport",
    "address_problem",
    "check_url",
    "is_public_address",
    "parse_ipv4_like",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud instance-metadata endpoints: the classic SSRF prize (AWS/GCP/Azure/OpenStack,
# AWS over IPv6, Alibaba, Azure's wireserver which sits on a public-looking address).
_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "fd00:ec2::254",
        "100.100.100.200",
        "168.63.129.16",
        "169.254.170.2",
    )
)

# (network, what to call it). Order matters only for the wording of the reason.
_V4_RULES: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(
    (ipaddress.IPv4Network(net), label)
    for net, label in (
        ("0.0.0.0/8", "unspecified"),
        ("127.0.0.0/8", "loopback"),
        ("10.0.0.0/8", "private"),
        ("172.16.0.0/12", "private"),
        ("192.168.0.0/16", "private"),
        ("169.254.0.0/16", "link-local"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("255.255.255.255/32", "broadcast"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
        ("192.0.0.0/24", "reserved"),
        ("192.88.99.0/24", "reserved"),
        ("198.18.0.0/15", "benchmarking"),
        ("192.0.2.0/24", "documentation"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
    )
)
_V6_RULES: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(net), label)
    for net, label in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("fc00::/7", "unique-local"),
        ("ff00::/8", "multicast"),
        ("64:ff9b:1::/48", "local NAT64"),
        ("100::/64", "reserved"),
        ("2001:db8::/32", "documentation"),
        ("2001::/23", "reserved"),
        ("::/8", "reserved"),
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _as_ip(ip: str | IPAddress) -> IPAddress:
    if isinstance(ip, str):
        # Zone ids ("fe80::1%eth0") only exist for link-local addresses anyway.
        return ipaddress.ip_address(ip.split("%", 1)[0])
    return ip


def _embedded_v4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address] | None:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, 6to4, Teredo, NAT64)."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    value = int(ip)
    if ip in _NAT64 or (value >> 32 == 0 and value > 1):  # NAT64 or deprecated ::a.b.c.d
        return [ipaddress.IPv4Address(value & 0xFFFFFFFF)]
    return None


def address_problem(ip: str | IPAddress) -> str | None:
    """Why ``ip`` must not be contacted (e.g. ``"loopback address 127.0.0.1"``), or None.

    A string that is not an IP address at all is a problem too.
    """
    try:
        addr = _as_ip(ip)
    except ValueError:
        return f"not an IP address {ip!r}"
    if addr in _METADATA:
        return f"cloud metadata address {addr}"
    if isinstance(addr, ipaddress.IPv6Address):
        embedded = _embedded_v4(addr)
        if embedded is not None:
            for v4 in embedded:
                problem = address_problem(v4)
                if problem is not None:
                    return f"{problem} inside {addr}"
            if addr.ipv4_mapped is None and int(addr) >> 32 == 0:
                return f"reserved address {addr}"  # IPv4-compatible form: deprecated
            return None
        rules: Iterable[tuple[Any, str]] = _V6_RULES
    else:
        rules = _V4_RULES
    for network, label in rules:
        if addr in network:
            return f"{label} address {addr}"
    if not addr.is_global or addr.is_multicast:
        return f"non-public address {addr}"
    return None


def is_public_address(ip: str | IPAddress) -> bool:
    """Whether ``ip`` is an ordinary public unicast address that sleuth may contact."""
    return address_problem(ip) is None


# ---------------------------------------------------------------- domain lists


def _canonical_host(host: str) -> str:
    """``host`` for list matching: lower case, no final dot, one spelling per IP address
    (``16909060``, ``0x01020304`` and ``[::ffff:1.2.3.4]`` are all ``1.2.3.4``)."""
    host = host.lower().removesuffix(".").strip("[]")
    if ":" in host:
        try:
            v6 = ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return host
        return str(v6.ipv4_mapped) if v6.ipv4_mapped is not None else v6.compressed
    try:
        v4 = parse_ipv4_like(host)
    except ValueError:
        return host
    return str(v4) if v4 is not None else host


def _listed(host: str, domains: tuple[str, ...]) -> str | None:
    """The entry of ``domains`` that ``host`` is (or is a subdomain of), or None."""
    host = _canonical_host(host)
    for domain in domains:
        if host == domain or host.endswith("." + domain):
            return domain
    return None


@dataclass(frozen=True)
class DomainRules:
    """``--allow-domains`` and ``--deny-domains``: which hosts pages may come from at all.

    Entries are lower-case ASCII domains (or IP addresses) as ``Settings`` normalises
    them; an entry matches itself and its subdomains. Deny always wins. An allow list,
    when there is one, refuses every other host, and lets its own hosts resolve to
    private addresses (an intranet named on purpose), which ``allow_private`` would
    grant to every host.
    """

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("allow", "deny"):
            entries = tuple(_canonical_host(d) for d in getattr(self, name))
            object.__setattr__(self, name, entries)

    def __bool__(self) -> bool:
        return bool(self.allow or self.deny)

    def refusal(self, host: str) -> str | None:
        """Why the lists refuse ``host`` (naming the option), or None."""
        denied = _listed(host, self.deny)
        if denied is not None:
            return f"domain {host} is denied (--deny-domains {denied})"
        if self.allow and _listed(host, self.allow) is None:
            return f"domain {host} is not in --allow-domains"
        return None

    def allows_private(self, host: str) -> bool:
        """Whether ``host`` was allow-listed, so its private addresses may be used."""
        return (
            bool(self.allow)
            and _listed(host, self.allow) is not None
            and _listed(host, self.deny) is None
        )


NO_DOMAIN_RULES = DomainRules()


# ---------------------------------------------------------------- URLs

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)$")
_HOST_CHARS = re.compile(r"^[a-z0-9_.-]+$")
_LOCAL_NAMES = ("localhost", "localhost.localdomain", "metadata.google.internal", "metadata")


def _ipv4_number(part: str) -> int:
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part.startswith("0"):
        return int(part, 8)  # raises ValueError on "08": inet_aton refuses it too
    return int(part)


def parse_ipv4_like(host: str) -> ipaddress.IPv4Address | None:
    """Read ``host`` the way ``inet_aton`` (and browsers) do, if it looks numeric.

    Returns None for an ordinary name; raises ValueError for a host that looks
    like an IPv4 address but is not a valid one (``1.2.3.4.5``, ``999.1.1.1``).
    """
    parts = host.removesuffix(".").split(".")
    if not _NUMBER.match(parts[-1]):
        return None
    if len(parts) > 4 or not all(_NUMBER.match(p) for p in parts):
        raise ValueError(f"malformed IPv4 address {host!r}")
    try:
        numbers = [_ipv4_number(p) for p in parts]
    except ValueError:
        raise ValueError(f"malformed IPv4 address {host!r}") from None
    # a.b.c.d; a.b.c (c fills 16 bits); a.b (b fills 24 bits); a (32 bits).
    last_bits = 8 * (5 - len(numbers))
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 1 << last_bits:
        raise ValueError(f"malformed IPv4 address {host!r}")
    value = numbers[-1]
    for i, n in enumerate(numbers[:-1]):
        value |= n << (24 - 8 * i)
    return ipaddress.IPv4Address(value)


def _host_problem(host: str) -> tuple[str, bool] | None:
    """Why a URL host (ASCII, lower-case, IPv6 without brackets) is refused, or None.

    The flag says whether the problem is only the address (which ``allow_private``
    lifts) rather than the host's syntax (which nothing lifts).
    """
    if not host:
        return "URL has no host", False
    if ":" in host:
        if "%" in host:
            return f"IPv6 zone id in host {host!r}", False
        try:
            problem = address_problem(ipaddress.IPv6Address(host))
        except ValueError:
            return f"malformed host {host!r}", False
        return (problem, True) if problem else None
    try:
        v4 = parse_ipv4_like(host)
    except ValueError as exc:
        return str(exc), False
    if v4 is not None:
        problem = address_problem(v4)
        return (problem, True) if problem else None
    name = host.removesuffix(".")
    if not _HOST_CHARS.match(name) or ".." in name or name.startswith(".") or len(name) > 253:
        return f"malformed host {host!r}", False
    label = _bad_label(name)
    if label is not None:
        return f"malformed host {host!r} ({label})", False
    if name in _LOCAL_NAMES or name.endswith(".localhost"):
        return f"local host name {name!r}", True
    return None


def _bad_label(name: str) -> str | None:
    """What is wrong with a label of the host ``name`` that DNS or IDNA cannot take, or None.

    A label is at most 63 characters (the resolver's IDNA codec raises on a longer one),
    and an ``xn--`` label must be valid Punycode for IDNA (httpx decodes it, and raises
    on ``xn--a-`` or ``xn--zz``, when it builds the request).
    """
    for label in name.split("."):
        if len(label) > 63:
            return f"label of {len(label)} characters; the limit is 63"
        if label.startswith("xn--"):
            try:
                idna.decode(label)
            except (idna.IDNAError, UnicodeError, ValueError) as exc:
                return f"invalid IDNA label {label!r}: {exc}"
    return None


def check_url(
    url: str, allow_private: bool = False, domains: DomainRules = NO_DOMAIN_RULES
) -> None:
    """Raise :class:`BlockedURLError` unless ``url`` is an http(s) URL sleuth may fetch.

    With ``allow_private`` the address checks are skipped (for intranets and tests)
    but the scheme, credentials and host-syntax checks still apply. ``domains``
    refuses hosts by name, and lifts the address checks for its allow-listed hosts.
    """
    url = url.strip()
    _check_text(url)
    parsed = _parsed(url, allow_private)
    if parsed.userinfo:
        raise BlockedURLError(url, "credentials in URL")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise BlockedURLError(url, f"invalid port {parsed.port}")
    host = parsed.raw_host.decode("ascii", "replace").lower()
    found = _host_problem(host)
    if found is not None and not found[1]:
        raise BlockedURLError(url, found[0])  # the host's syntax: nothing lifts that
    # The lists before the address: with an allow list, "not in it" is the news.
    refused = domains.refusal(host.removesuffix(".")) if domains else None
    if refused is not None:
        raise BlockedURLError(url, refused)
    if found is not None and not (allow_private or domains.allows_private(host)):
        raise BlockedURLError(url, found[0])


def _check_text(url: str) -> None:
    """The URL as text: an http(s) scheme, no control character, no space in its host."""
    match = _SCHEME.match(url)
    scheme = match.group(1).lower() if match else ""
    if scheme not in ("http", "https"):
        raise BlockedURLError(url, f"scheme {scheme or '(none)'!r} is not allowed")
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise BlockedURLError(url, "control character in URL")
    authority = re.split(r"[/?#]", url.split("://", 1)[-1], maxsplit=1)[0]
    if any(c.isspace() or c == "\\" for c in authority):
        # Parsers disagree about these; a host that two parsers read differently is a trap.
        raise BlockedURLError(url, "whitespace or backslash in URL host")


def _parsed(url: str, allow_private: bool) -> httpx.URL:
    """``url`` parsed; httpx refuses e.g. "0177.0.0.1": the real problem is named."""
    try:
        return httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        try:
            found = _host_problem((urlsplit(url).hostname or "").lower())
        except ValueError:  # urllib finds it malformed too
            found = None
        if found is None or (allow_private and found[1]):
            raise BlockedURLError(url, f"invalid URL ({exc})") from None
        raise BlockedURLError(url, found[0]) from None


# ---------------------------------------------------------------- connect time


class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that only ever connects to checked addresses.

    ``connect_tcp`` resolves the host itself, raises :class:`BlockedURLError`
    if *any* address it resolves to is not public (unless ``allow_private``),
    and then connects to those same addresses, so a DNS answer cannot change
    between the check and the connection.
    """

    def __init__(
        self,
        allow_private: bool = False,
        backend: httpcore.AsyncNetworkBackend | None = None,
        domains: DomainRules = NO_DOMAIN_RULES,
    ) -> None:
        self._allow_private = allow_private
        self._backend = backend or httpcore.AnyIOBackend()
        self._domains = domains

    async def _resolve(self, host: str, port: int, limit_s: float | None) -> list[str]:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(limit_s):
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"DNS lookup for {host} timed out") from None
        except (OSError, UnicodeError) as exc:  # UnicodeError: a name IDNA cannot encode
            raise httpcore.ConnectError(f"DNS lookup for {host} failed ({exc})") from None
        addresses: list[str] = []
        for info in infos:
            address = str(info[4][0])
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise httpcore.ConnectError(f"DNS lookup for {host} found no address")
        return addresses

    # The signature is httpcore's, "timeout" name included.
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Resolve ``host``, refuse non-public answers, connect to a checked address."""
        refused = self._domains.refusal(host.lower().removesuffix(".")) if self._domains else None
        if refused is not None:
            raise BlockedURLError(host, refused)
        addresses = await self._resolve(host, port, timeout)
        if not (self._allow_private or self._domains.allows_private(host)):
            for address in addresses:
                problem = address_problem(address)
                if problem is not None:
                    raise BlockedURLError(host, problem)
        error: Exception | None = None
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc  # try the next address, as getaddrinfo-based clients do
        assert error is not None
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Never: a web page is not behind a Unix socket."""
        raise BlockedURLError(path, "Unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        """Delegate to the wrapped backend (httpcore uses it for retry back-off)."""
        await self._backend.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` whose connections all go through the guard.

    httpx has no public way to give its transport an httpcore network backend,
    so after the normal set-up we replace the private ``_pool`` (the one
    attribute httpx's own request/close methods use) with a pool built from the
    same arguments plus ``network_backend``. Environment proxies are ignored on
    purpose: through a proxy the guard would only ever see the proxy's address.
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        http2: bool = True,
        limits: httpx.Limits | None = None,
        domains: DomainRules = NO_DOMAIN_RULES,
    ) -> None:
        limits = limits or httpx.Limits()
        ssl_context = shared_ssl_context(trust_env=False)
        super().__init__(verify=ssl_context, http2=http2, limits=limits, trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=http2,
            network_backend=GuardedNetworkBackend(allow_private, domains=domains),
        )
