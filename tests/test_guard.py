"""The SSRF guard: which addresses and URLs sleuth refuses to touch, and why."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import AsyncIterator

import httpcore
import httpx
import pytest

from sleuth.errors import BlockedURLError
from sleuth.fetch import check_url, is_public_address
from sleuth.fetch.guard import GuardedNetworkBackend, GuardedTransport, address_problem

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "100.63.255.255",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.167.255.255",
    "169.253.255.255",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",  # IPv4-mapped public
    "2002:0808:0808::1",  # 6to4 around 8.8.8.8
    "64:ff9b::808:808",  # NAT64 around 8.8.8.8
]

BLOCKED = {
    "127.0.0.1": "loopback",
    "127.255.255.254": "loopback",
    "::1": "loopback",
    "10.1.2.3": "private",
    "172.16.0.1": "private",
    "172.31.255.255": "private",
    "192.168.1.1": "private",
    "169.254.1.1": "link-local",
    "fe80::1": "link-local",
    "fe80::1%eth0": "link-local",
    "100.64.0.1": "carrier-grade NAT",
    "100.127.255.255": "carrier-grade NAT",
    "224.0.0.1": "multicast",
    "239.255.255.250": "multicast",
    "ff02::1": "multicast",
    "0.0.0.0": "unspecified",
    "::": "unspecified",
    "255.255.255.255": "broadcast",
    "240.0.0.1": "reserved",
    "fc00::1": "unique-local",
    "fd12:3456::1": "unique-local",
    "192.0.2.1": "documentation",
    "2001:db8::1": "documentation",
    # cloud metadata
    "169.254.169.254": "cloud metadata",
    "fd00:ec2::254": "cloud metadata",
    "100.100.100.200": "cloud metadata",
    # IPv4 wrapped in IPv6
    "::ffff:127.0.0.1": "loopback",
    "::ffff:7f00:1": "loopback",
    "::ffff:169.254.169.254": "cloud metadata",
    "::ffff:10.0.0.1": "private",
    "::127.0.0.1": "loopback",  # deprecated IPv4-compatible
    "::8.8.8.8": "reserved",
    "2002:7f00:0001::1": "loopback",  # 6to4 around 127.0.0.1
    "2002:c0a8:0101::": "private",  # 6to4 around 192.168.1.1
    "2001:0:4136:e378:8000:63bf:f5ff:fffe": "private",  # Teredo, client 10.0.0.1
    "64:ff9b::a9fe:a9fe": "cloud metadata",  # NAT64 around 169.254.169.254
}


@pytest.mark.parametrize("ip", PUBLIC)
def test_public_addresses_pass(ip: str) -> None:
    assert is_public_address(ip)


@pytest.mark.parametrize(("ip", "kind"), BLOCKED.items())
def test_non_public_addresses_are_refused_with_a_reason(ip: str, kind: str) -> None:
    assert not is_public_address(ip)
    problem = address_problem(ip)
    assert problem is not None and problem.startswith(kind)


def test_garbage_is_not_a_public_address() -> None:
    assert not is_public_address("not-an-ip")
    assert not is_public_address("")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/", "loopback address 127.0.0.1"),
        ("http://2130706433/", "loopback address 127.0.0.1"),  # decimal
        ("http://0177.0.0.1/", "loopback address 127.0.0.1"),  # octal
        ("http://0x7f.0x0.0x0.0x1/", "loopback address 127.0.0.1"),  # hex
        ("http://0x7f000001/", "loopback address 127.0.0.1"),
        ("http://127.1/", "loopback address 127.0.0.1"),  # short form
        ("http://0/", "unspecified address 0.0.0.0"),
        ("http://[::1]:8080/", "loopback address ::1"),
        ("http://[::ffff:127.0.0.1]/", "loopback address 127.0.0.1"),
        ("http://[::ffff:a9fe:a9fe]/", "cloud metadata address 169.254.169.254"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata address 169.254.169.254"),
        ("http://[fd00:ec2::254]/", "cloud metadata address fd00:ec2::254"),
        ("http://10.0.0.1:9200/_cat", "private address 10.0.0.1"),
        ("http://192.168.0.1./", "private address 192.168.0.1"),
        ("http://localhost:8000/", "local host name"),
        ("http://admin.localhost/", "local host name"),
        ("http://metadata.google.internal/computeMetadata/v1/", "local host name"),
        ("ftp://example.com/file", "scheme 'ftp'"),
        ("file:///etc/passwd", "scheme 'file'"),
        ("gopher://example.com/", "scheme 'gopher'"),
        ("javascript:alert(1)", "scheme 'javascript'"),
        ("http://user:pass@example.com/", "credentials"),
        ("http://user@example.com/", "credentials"),
        ("http://example.com\\@127.0.0.1/", "backslash"),
        ("http://exa mple.com/", "whitespace"),
        ("http://example.com\r\n/", "control character"),
        ("http://1.2.3.4.5/", "malformed IPv4"),
        ("http://256.1.1.1/", "malformed IPv4"),
        ("http://08.1.1.1/", "malformed IPv4"),
        ("http://example.123/", "malformed IPv4"),
        ("http://a..b.com/", "malformed host"),
        ("http://ex%41mple.com/", "malformed host"),
        ("http:///nohost", "no host"),
        ("http://[fe80::1%25eth0]/", "zone id"),
        # Hosts that httpx or the resolver would raise on (IDNA, label length), and ports
        # no socket takes: refused by name, never an "unexpected error" with a traceback.
        ("http://xn--a-/", "invalid IDNA label 'xn--a-'"),
        ("http://www.xn--ls8h-.example/", "invalid IDNA label 'xn--ls8h-'"),
        ("http://xn--zz.com/", "invalid IDNA label 'xn--zz'"),
        ("http://xn--ab.com/", "invalid IDNA label 'xn--ab'"),
        ("http://sub.xn--/", "invalid IDNA label 'xn--'"),
        ("http://" + "a" * 64 + ".com/", "label of 64 characters"),
        ("http://example.com:99999/", "invalid port 99999"),
        ("http://example.com:0/", "invalid port 0"),
    ],
)
def test_check_url_refuses(url: str, reason: str) -> None:
    with pytest.raises(BlockedURLError) as info:
        check_url(url)
    assert reason in info.value.reason


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/",
        "http://example.com:8080/path?q=1#frag",
        "https://münchen.de/",
        "https://8.8.8.8/dns",
        "https://[2606:4700:4700::1111]/",
        "https://sub_domain.example.org/",
        "https://example.com/a b",
        "https://xn--mnchen-3ya.de/",
        "http://example.com:65535/",
        "http://" + "a" * 63 + ".com/",
    ],
)
def test_check_url_allows_public_urls(url: str) -> None:
    check_url(url)


def test_allow_private_lifts_only_the_address_rules() -> None:
    check_url("http://127.0.0.1:8000/", allow_private=True)
    check_url("http://2130706433/", allow_private=True)
    check_url("http://localhost/", allow_private=True)
    check_url("http://[::1]/", allow_private=True)
    for url in [
        "ftp://127.0.0.1/",
        "http://u:p@127.0.0.1/",
        "http://1.2.3.4.5/",
        "http://xn--a-/",
        "http://127.0.0.1:99999/",
        "http://[::1]:70000/",
    ]:
        with pytest.raises(BlockedURLError):
            check_url(url, allow_private=True)
    # httpx itself cannot request a leading-zero address, so it stays refused, as invalid.
    with pytest.raises(BlockedURLError, match="invalid URL"):
        check_url("http://0177.0.0.1/", allow_private=True)


# ---------------------------------------------------------------- connect time


@pytest.fixture
async def loopback_server() -> AsyncIterator[int]:
    """A bare TCP server on 127.0.0.1 that answers every request with a tiny page."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n"
            b"Connection: close\r\n\r\nok"
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield port


def fake_dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> None:
    """Make chosen names resolve to chosen addresses (everything else: real resolver)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: object, port: object, *args: object, **kwargs: object) -> list:
        if isinstance(host, str) and host in answers:
            return [
                (
                    socket.AF_INET6 if ":" in a else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (a, port),
                )
                for a in answers[host]
            ]
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


async def test_connect_refuses_a_name_that_resolves_to_loopback(
    monkeypatch: pytest.MonkeyPatch, loopback_server: int
) -> None:
    # The URL looks public; only the DNS answer gives it away (DNS rebinding).
    fake_dns(monkeypatch, {"innocent.example": ["127.0.0.1"]})
    check_url(f"http://innocent.example:{loopback_server}/")
    backend = GuardedNetworkBackend(allow_private=False)
    with pytest.raises(BlockedURLError) as info:
        await backend.connect_tcp("innocent.example", loopback_server, timeout=2)
    assert info.value.reason == "loopback address 127.0.0.1"


async def test_connect_refuses_when_any_answer_is_private(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dns(monkeypatch, {"mixed.example": ["93.184.216.34", "10.0.0.5"]})
    with pytest.raises(BlockedURLError, match=re.escape("private address 10.0.0.5")):
        await GuardedNetworkBackend().connect_tcp("mixed.example", 80, timeout=2)


async def test_connect_uses_the_address_it_checked(
    monkeypatch: pytest.MonkeyPatch, loopback_server: int
) -> None:
    fake_dns(monkeypatch, {"intranet.example": ["127.0.0.1"]})
    transport = GuardedTransport(allow_private=True, http2=False)
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.get(f"http://intranet.example:{loopback_server}/")
    assert response.text == "ok"


async def test_guarded_transport_surfaces_blocked_not_connect_error(
    monkeypatch: pytest.MonkeyPatch, loopback_server: int
) -> None:
    fake_dns(monkeypatch, {"rebound.example": ["127.0.0.1"]})
    async with httpx.AsyncClient(transport=GuardedTransport()) as client:
        with pytest.raises(BlockedURLError, match="loopback"):
            await client.get(f"http://rebound.example:{loopback_server}/")


async def test_unresolvable_name_is_a_connect_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> list:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    with pytest.raises(
        httpcore.ConnectError, match=re.escape("DNS lookup for nowhere.example failed")
    ):
        await GuardedNetworkBackend().connect_tcp("nowhere.example", 80, timeout=2)


async def test_unix_sockets_are_refused() -> None:
    with pytest.raises(BlockedURLError):
        await GuardedNetworkBackend(allow_private=True).connect_unix_socket("/var/run/docker.sock")
