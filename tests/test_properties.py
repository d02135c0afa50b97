"""Properties that must hold for every input, checked with generated inputs (hypothesis).

The example-based tests pin the known cases (tests/test_urls.py, tests/test_guard.py,
tests/test_llm_parse.py, tests/test_extract.py); these generate the cases nobody thought
of. Example counts are kept small so the file runs in seconds; ``bench/fuzz_extract.py``
runs the same kind of inputs by the ten thousand.
"""

from __future__ import annotations

import ipaddress
import json
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth.errors import BlockedURLError
from sleuth.extraction import extract
from sleuth.fetch.guard import address_problem, check_url, is_public_address
from sleuth.llm.parse import parse_indices, parse_list, strip_think
from sleuth.urls import TRACKING_PARAMS, canonicalize

# As many examples as the profile says (conftest.py); the extraction properties, whose
# every example parses a page, half as many.
FAST = settings(suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(
    max_examples=max(10, settings.default.max_examples // 2),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# -- URLs ------------------------------------------------------------------------------------

_LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
_HOST = st.builds(
    lambda labels, tld: ".".join([*labels, tld]),
    st.lists(_LABEL, min_size=1, max_size=3),
    st.sampled_from(["com", "org", "io"]),
)
# No spaces: a URL is stripped as a whole, so a trailing one would be an artefact here
# (raw text, spaces included, is what the never-raises tests generate).
_SEGMENT = st.text(alphabet="abcXYZ019-._~%!$'()*+,;=:@", max_size=8)
_KEY = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda k: not k.startswith("utm_") and k not in TRACKING_PARAMS
)
_VALUE = st.text(alphabet="abc019-._~%+=/?:", max_size=8)


@st.composite
def web_urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "Https"]))
    host = draw(_HOST)
    if draw(st.booleans()):
        host = host.upper()
    port = draw(st.sampled_from(["", ":80", ":443", ":8080"]))
    path = "/".join(draw(st.lists(_SEGMENT, max_size=4)))
    pairs = draw(st.lists(st.tuples(_KEY, _VALUE), max_size=4))
    query = "&".join(f"{k}={v.replace('&', '').replace('#', '')}" for k, v in pairs)
    return f"{scheme}://{host}{port}/{path}" + (f"?{query}" if query else "")


_TRACKER = st.one_of(
    st.sampled_from(sorted(TRACKING_PARAMS)),
    st.from_regex(r"utm_[a-z]{1,8}", fullmatch=True),
    st.from_regex(r"UTM_[A-Za-z]{1,8}", fullmatch=True),
)


@FAST
@given(web_urls())
def test_canonicalize_is_idempotent(url: str) -> None:
    once = canonicalize(url)
    assert canonicalize(once) == once


@FAST
@given(
    st.one_of(st.text(max_size=200), st.text(max_size=60).map(lambda t: f"https://example.com/{t}"))
)
def test_canonicalize_never_raises_and_is_idempotent_on_fetchable_urls(text: str) -> None:
    once = canonicalize(text)
    assert isinstance(once, str)
    try:
        check_url(text, allow_private=True)
    except BlockedURLError:
        return  # garbage such as "//" is never fetched; its canonical form names nothing
    assert canonicalize(once) == once


@FAST
@given(
    web_urls(),
    st.lists(st.tuples(_TRACKER, _VALUE), min_size=1, max_size=4),
    st.text(alphabet="abc-_/?&=#", max_size=10),
    st.randoms(use_true_random=False),
)
def test_fragments_and_tracking_parameters_never_matter(
    url: str, trackers: list[tuple[str, str]], fragment: str, rnd: random.Random
) -> None:
    base, _, query = url.partition("?")
    pairs = [p for p in query.split("&") if p]
    for key, value in trackers:
        clean = value.replace("&", "").replace("#", "")
        pairs.insert(rnd.randrange(len(pairs) + 1), f"{key}={clean}")
    noisy = f"{base}?{'&'.join(pairs)}#{fragment}"
    assert canonicalize(noisy) == canonicalize(url)


@FAST
@given(web_urls(), st.randoms(use_true_random=False))
def test_parameter_order_never_matters(url: str, rnd: random.Random) -> None:
    base, _, query = url.partition("?")
    pairs = query.split("&")
    rnd.shuffle(pairs)
    assert canonicalize(f"{base}?{'&'.join(pairs)}") == canonicalize(url)


@FAST
@given(st.text(max_size=200))
def test_check_url_refuses_garbage_only_with_its_own_error(text: str) -> None:
    try:
        check_url(text)
    except BlockedURLError as exc:
        assert exc.reason and "\n" not in exc.reason
    else:
        assert text.strip().lower().startswith(("http://", "https://"))


# -- the SSRF guard ----------------------------------------------------------------------------
# Independent of the guard's own tables: the networks come from the RFCs they are named by.

BLOCKED_V4 = [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "224.0.0.0/4",
    "240.0.0.0/4",
]
BLOCKED_V6 = ["::1/128", "fe80::/10", "fc00::/7", "ff00::/8"]
PUBLIC_V4 = [
    "1.0.0.0/8",
    "8.0.0.0/8",
    "23.0.0.0/8",
    "45.0.0.0/8",
    "93.0.0.0/8",
    "104.16.0.0/12",
    "142.250.0.0/15",
    "151.101.0.0/16",
    "185.0.0.0/8",
]
PUBLIC_V6 = ["2001:4860::/32", "2606:4700::/32", "2a00:1450::/32", "2400:cb00::/32"]


def _in(networks: list[str]) -> st.SearchStrategy[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    def pick(net: str, r: int) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        network = ipaddress.ip_network(net)
        return network[r % network.num_addresses]

    return st.builds(pick, st.sampled_from(networks), st.integers(min_value=0))


def _part(n: int, how: str) -> str:
    return {"dec": str(n), "hex": hex(n), "HEX": f"0X{n:X}", "oct": f"0{n:o}"}[how]


@st.composite
def v4_spellings(draw: st.DrawFn, ip: ipaddress.IPv4Address) -> str:
    """One of the many host spellings ``inet_aton`` (and so curl and browsers) accept."""
    value = int(ip)
    octets = list(ip.packed)
    how = st.sampled_from(["dec", "hex", "HEX", "oct"])
    form = draw(st.sampled_from(["dotted", "parts", "int", "short3", "short2", "dot"]))
    if form == "dotted":
        return str(ip)
    if form == "dot":
        return f"{ip}."
    if form == "int":
        return _part(value, draw(how))
    if form == "short3":
        return ".".join(
            [
                _part(octets[0], draw(how)),
                _part(octets[1], draw(how)),
                _part(value & 0xFFFF, draw(how)),
            ]
        )
    if form == "short2":
        return f"{_part(octets[0], draw(how))}.{_part(value & 0xFFFFFF, draw(how))}"
    return ".".join(_part(o, draw(how)) for o in octets)


def v6_wrappings(ip: ipaddress.IPv4Address) -> list[str]:
    """IPv6 spellings that carry ``ip``: mapped (two ways), compatible, NAT64, 6to4."""
    high, low = int(ip) >> 16, int(ip) & 0xFFFF
    return [
        f"::ffff:{ip}",
        f"::FFFF:{high:x}:{low:x}",
        f"::{ip}",
        f"0:0:0:0:0:ffff:{ip}",
        f"64:ff9b::{ip}",
        f"2002:{high:x}:{low:x}::1",
    ]


@FAST
@given(st.data(), _in(BLOCKED_V4))
def test_every_spelling_of_a_blocked_v4_address_is_refused(
    data: st.DataObject, ip: ipaddress.IPv4Address
) -> None:
    assert address_problem(ip) is not None
    host = data.draw(v4_spellings(ip))
    with pytest.raises(BlockedURLError):
        check_url(f"http://{host}/latest/meta-data/")
    for wrapped in v6_wrappings(ip):
        assert not is_public_address(wrapped), wrapped
        with pytest.raises(BlockedURLError):
            check_url(f"http://[{wrapped}]:8080/")


@FAST
@given(_in(BLOCKED_V6), st.from_regex(r"[a-z]{1,4}[0-9]{0,2}", fullmatch=True))
def test_every_blocked_v6_address_is_refused_with_or_without_a_zone(
    ip: ipaddress.IPv6Address, zone: str
) -> None:
    for spelled in (str(ip), ip.exploded, str(ip).upper()):
        assert not is_public_address(spelled)
        assert not is_public_address(f"{spelled}%{zone}")  # as getaddrinfo may answer
        for url in (
            f"http://[{spelled}]/",
            f"http://[{spelled}%25{zone}]/",
            f"https://[{spelled}]:443/x",
        ):
            with pytest.raises(BlockedURLError):
                check_url(url)


@FAST
@given(_in(PUBLIC_V4))
def test_every_public_v4_address_is_allowed(ip: ipaddress.IPv4Address) -> None:
    assert is_public_address(ip) and is_public_address(f"::ffff:{ip}")
    for host in (str(ip), str(int(ip)), f"[::ffff:{ip}]"):
        check_url(f"https://{host}/page?q=1")


@FAST
@given(_in(PUBLIC_V6))
def test_every_public_v6_address_is_allowed(ip: ipaddress.IPv6Address) -> None:
    assert is_public_address(ip)
    check_url(f"https://[{ip}]/page")
    check_url(f"https://[{ip.exploded.upper()}]:8443/page")


# -- reply parsers ---------------------------------------------------------------------------

_ITEM = st.from_regex(r"[A-Za-zäöüé][A-Za-z0-9äöüé ?'.-]{0,30}[A-Za-z0-9?]", fullmatch=True).map(
    lambda s: " ".join(s.split())
)
_ITEMS = st.lists(_ITEM, min_size=1, max_size=8, unique=True)


def _render(items: list[str], style: str) -> str:
    if style == "numbered":
        return "\n".join(f"{n}. {item}" for n, item in enumerate(items, 1))
    if style == "paren":
        return "\n".join(f"{n}) {item}" for n, item in enumerate(items, 1))
    if style == "bullets":
        return "\n".join(f"- {item}" for item in items)
    if style == "stars":
        return "\n".join(f"* **{item}**" for item in items)
    if style == "fenced":
        return "```json\n" + json.dumps(items, ensure_ascii=False, indent=2) + "\n```"
    return json.dumps({"queries": items}, ensure_ascii=False)


@FAST
@given(
    _ITEMS,
    st.sampled_from(["numbered", "paren", "bullets", "stars", "fenced", "object"]),
    st.sampled_from(["", "Here are the queries:\n", "Sure!\n\n"]),
)
def test_rendered_lists_round_trip(items: list[str], style: str, lead_in: str) -> None:
    assert parse_list(lead_in + _render(items, style)) == items


_THOUGHT = st.text(max_size=300).filter(
    lambda t: not re.search(r"</?(think|thinking|reasoning)\b", t, re.IGNORECASE)
)


@FAST
@given(_THOUGHT, _ITEMS, st.sampled_from(["think", "thinking", "reasoning", "THINK"]))
def test_think_blocks_never_leak_into_the_answer(thought: str, items: list[str], tag: str) -> None:
    leaked = ["LEAKED-QUERY", "from the reasoning"]
    inner = f"{thought} {json.dumps(leaked)} 1. LEAKED-QUERY\n- LEAKED-QUERY\n{thought}"
    reply = f"<{tag}>{inner}</{tag}>\n{json.dumps(items, ensure_ascii=False)}"
    assert parse_list(reply) == items
    assert "LEAKED-QUERY" not in strip_think(reply)
    # Reasoning cut off before its end (the model ran out of tokens) leaves no answer at all.
    assert parse_list(f"<{tag}>{inner}") == []
    assert "LEAKED-QUERY" not in strip_think(f"<{tag}>{inner}")


@FAST
@given(
    st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=10),
    st.integers(min_value=1, max_value=20),
    st.booleans(),
)
def test_picked_indices_round_trip(numbers: list[int], n: int, fenced: bool) -> None:
    body = json.dumps(numbers)
    reply = f"```json\n{body}\n```" if fenced else f"I pick {body}."
    expected = list(dict.fromkeys(x for x in numbers if x <= n))
    assert parse_indices(reply, n) == expected


# -- extraction ------------------------------------------------------------------------------

_WORD = st.from_regex(r"[a-z]{3,9}", fullmatch=True)
_SENTENCE = st.lists(_WORD, min_size=6, max_size=14).map(lambda ws: " ".join(ws).capitalize() + ".")


@st.composite
def _paragraphs(draw: st.DrawFn) -> list[str]:
    """3-6 paragraphs of distinct words: an article, not one line repeated (extraction
    drops near-duplicate blocks on purpose, as boilerplate)."""
    count = draw(st.integers(3, 6))
    words = draw(st.lists(_WORD, min_size=count * 18, max_size=count * 18, unique=True))
    paragraphs = []
    for n in range(count):
        mine = words[n * 18 : (n + 1) * 18]
        paragraphs.append(
            " ".join(mine[:9]).capitalize() + ". " + " ".join(mine[9:]).capitalize() + "."
        )
    return paragraphs


@SLOW
@given(
    st.one_of(
        st.text(max_size=2000),
        st.binary(max_size=2000),
        st.lists(
            st.sampled_from(
                [
                    "<p>",
                    "</p>",
                    "<div>",
                    "<script>",
                    "</script>",
                    "<style>",
                    "<!--",
                    "-->",
                    "<![CDATA[",
                    "]]>",
                    "<svg>",
                    "<body>",
                    "<html>",
                    "&amp;",
                    "&#0;",
                    "\x00",
                    "text ",
                    "<meta charset=utf-16>",
                ]
            ),
            max_size=200,
        ).map("".join),
    )
)
def test_extract_never_raises(document: str | bytes) -> None:
    result = extract(document, url="https://example.com/page")
    assert isinstance(result.text, str)
    assert "\x00" not in result.text


@SLOW
@given(
    _paragraphs(),
    _SENTENCE,
    st.lists(st.sampled_from(["head", "top", "middle", "bottom", "after"]), min_size=1, max_size=4),
)
def test_extract_keeps_the_article_and_drops_scripts_and_styles(
    paragraphs: list[str], title: str, places: list[str]
) -> None:
    script = (
        "<script>var SECRETJS = 'Tracking pixel sentence that must not be read.';"
        "document.write('<p>SECRETJS written</p>');</script>"
    )
    style = "<style>.SECRETCSS::after { content: 'Styled sentence that is invisible.' }</style>"
    noise = {place: "" for place in ("head", "top", "middle", "bottom", "after")}
    for n, place in enumerate(places):
        noise[place] += script if n % 2 == 0 else style
    body = [f"<p>{p}</p>" for p in paragraphs]
    body.insert(len(body) // 2, noise["middle"])
    page = (
        f"<!DOCTYPE html><html><head><title>{title}</title>{noise['head']}</head><body>"
        f"<nav><a href='/'>Home</a> <a href='/about'>About</a></nav>{noise['top']}"
        f"<article><h1>{title}</h1>{''.join(body)}{noise['bottom']}</article>"
        f"<footer>Copyright footer</footer>{noise['after']}</body></html>"
    )
    text = " ".join(extract(page, url="https://example.com/article").text.split())
    assert "SECRET" not in text and "Tracking pixel" not in text and "invisible" not in text
    for paragraph in paragraphs:
        assert paragraph in text
