"""URL identity: one page, one canonical URL; one site, one registered domain."""

from __future__ import annotations

import pytest

from sleuth.urls import canonicalize, host_of, registered_domain


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # case of scheme and host, default ports, fragments
        ("HTTP://Example.COM/Path", "http://example.com/Path"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("https://example.com:80/a", "https://example.com:80/a"),
        ("https://example.com/a#section-2", "https://example.com/a"),
        # root path and trailing slashes
        ("https://example.com", "https://example.com/"),
        ("https://example.com/", "https://example.com/"),
        ("https://example.com/docs/", "https://example.com/docs"),
        ("https://example.com/a/./b/../c", "https://example.com/a/c"),
        # tracking parameters go, the rest are sorted and kept as written
        ("https://example.com/a?utm_source=x&utm_medium=y&id=3", "https://example.com/a?id=3"),
        ("https://example.com/a?b=2&a=1&gclid=zz&fbclid=q", "https://example.com/a?a=1&b=2"),
        (
            "https://example.com/a?ref=hn&ref_src=twsrc&igshid=1&msclkid=2&yclid=3",
            "https://example.com/a",
        ),
        (
            "https://example.com/a?mc_cid=1&mc_eid=2&_hsenc=3&_hsmi=4&q=x",
            "https://example.com/a?q=x",
        ),
        ("https://example.com/a?UTM_Source=x&q=a+b", "https://example.com/a?q=a+b"),
        (
            "https://example.com/search?q=%2fx&q=%7euser",
            "https://example.com/search?q=%2Fx&q=~user",
        ),
        # percent-encoding case; unreserved escapes decoded
        ("https://example.com/%7euser/%2fa%2Fb", "https://example.com/~user/%2Fa%2Fb"),
        # internationalised host names become punycode
        ("https://Bücher.example/x", "https://xn--bcher-kva.example/x"),
        ("https://example.com./a", "https://example.com/a"),
        # a bare host is read as http
        ("example.com/page", "http://example.com/page"),
    ],
)
def test_canonicalize(url: str, expected: str) -> None:
    assert canonicalize(url) == expected


def test_canonical_urls_of_one_page_agree() -> None:
    spellings = [
        "https://www.example.com/post/?utm_campaign=spring#comments",
        "HTTPS://WWW.EXAMPLE.COM:443/post",
        "https://www.example.com/post?fbclid=abc",
    ]
    assert len({canonicalize(u) for u in spellings}) == 1


def test_canonicalize_keeps_pages_apart() -> None:
    assert canonicalize("https://example.com/a?id=1") != canonicalize("https://example.com/a?id=2")
    assert canonicalize("https://example.com/A") != canonicalize("https://example.com/a")


def test_canonicalize_is_idempotent_and_never_raises() -> None:
    for url in [
        "https://example.com/a?b=1&a=2#x",
        "http://[::1]:8080/x/",
        "http://host:99999/",
        "not a url",
        "",
        "https://bad\u0000host/",
    ]:
        once = canonicalize(url)
        assert canonicalize(once) == once


def test_ipv6_host_keeps_brackets() -> None:
    assert canonicalize("http://[2001:DB8::1]:80/a/") == "http://[2001:db8::1]/a"


@pytest.mark.parametrize(
    ("url", "domain"),
    [
        ("https://docs.python.org/3/library/", "python.org"),
        ("https://github.com.evil.io/login", "evil.io"),
        ("https://foo.government.com/", "government.com"),
        ("https://www.bbc.co.uk/news", "bbc.co.uk"),
        ("https://a.b.c.example.com.au/", "example.com.au"),
        ("http://127.0.0.1:8000/x", "127.0.0.1"),
        ("http://127.0.1.7/", "127.0.1.7"),
        ("http://[::1]/", "::1"),
        ("http://localhost:8000/", "localhost"),
        ("http://foo.internal/x", "foo.internal"),
        ("https://Bücher.example.de/", "example.de"),
        ("example.org", "example.org"),
    ],
)
def test_registered_domain(url: str, domain: str) -> None:
    assert registered_domain(url) == domain


def test_registered_domain_uses_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    # The bundled suffix list answers; tldextract must not try to download one.
    import tldextract.suffix_list as suffix_list

    def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("tldextract tried to download the suffix list")

    monkeypatch.setattr(suffix_list, "find_first_response", refuse)
    assert registered_domain("https://news.ycombinator.com/item") == "ycombinator.com"


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://User@Example.COM:8443/a", "example.com"),
        ("http://[::1]:80/", "::1"),
        ("https://bücher.de/", "xn--bcher-kva.de"),
        ("mailto:someone", ""),
    ],
)
def test_host_of(url: str, host: str) -> None:
    assert host_of(url) == host
