"""Fuzzing: many generated inputs against extraction, URL handling and the SSRF guard.

tests/test_properties.py checks the same properties with a few dozen examples each, so
the test suite stays fast; this runs them by the thousand (hypothesis, no network):

* ``extract(html_or_bytes, url=...)`` never raises and never returns a NUL, on random
  text, random bytes and tag soup made of the pieces parsers trip on;
* ``canonicalize`` never raises on any text, and is idempotent on every URL ``check_url``
  lets through (garbage such as ``//`` or ``A:\\n0`` may canonicalise twice differently);
* ``check_url`` raises nothing but ``BlockedURLError`` on any text, and refuses every
  spelling of a blocked IPv4 address that it lets through httpx's parser;
* ``address_problem`` / ``is_public_address`` never raise on any text.

A failure is a crash: it is printed with hypothesis' shrunk example, and the exit code is 1.

    python bench/fuzz_extract.py                    # 20,000 examples per target (~10 min)
    python bench/fuzz_extract.py --examples 2000 --targets urls,guard
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sleuth.errors import BlockedURLError  # noqa: E402
from sleuth.extraction import extract  # noqa: E402
from sleuth.fetch.guard import address_problem, check_url, is_public_address  # noqa: E402
from sleuth.urls import canonicalize, host_of, registered_domain  # noqa: E402

_SOUP = st.lists(
    st.sampled_from(
        [
            "<html>",
            "</html>",
            "<head>",
            "<body>",
            "<p>",
            "</p>",
            "<div>",
            "</div>",
            "<article>",
            "<script>",
            "</script>",
            "<style>",
            "</style>",
            "<!--",
            "-->",
            "<![CDATA[",
            "]]>",
            "<svg>",
            "<math>",
            "<table>",
            "<td>",
            "<pre>",
            "<template>",
            "<noscript>",
            "<title>",
            "<meta charset=utf-16>",
            "<meta charset='x-unknown'>",
            "<base href='javascript:x'>",
            "&amp;",
            "&#0;",
            "&#x110000;",
            "&nbsp;",
            "\x00",
            "\ufeff",
            "\u202e",
            "\r",
            "\n",
            "word ",
            "Ein Satz mit Wörtern. ",
            "中文句子。",
            "<a href='//evil'>",
            "<",
            ">",
            '"',
            "'",
        ]
    ),
    max_size=400,
).map("".join)
_DOCUMENTS = st.one_of(
    st.text(max_size=5000),
    st.binary(max_size=5000),
    _SOUP,
    _SOUP.map(lambda s: s.encode("utf-8", "surrogatepass")),
)
_URLISH = st.one_of(
    st.text(max_size=300),
    st.builds(
        lambda scheme, rest: f"{scheme}{rest}",
        st.sampled_from(
            [
                "http://",
                "https://",
                "HTTP://",
                "http:/",
                "//",
                "http:\\\\",
                "ftp://",
                "javascript:",
                "http://[",
                "http://0x",
                "http://0",
            ]
        ),
        st.text(alphabet="0123456789abcdefx.:/[]%@#?&=\\ \t-_~", max_size=60),
    ),
)


def _check_extract(document: str | bytes) -> None:
    result = extract(document, url="https://example.com/page")
    assert isinstance(result.text, str) and "\x00" not in result.text


def _check_urls(text: str) -> None:
    once = canonicalize(text)  # never raises, on anything
    host_of(text)
    registered_domain(text)
    try:
        check_url(text, allow_private=True)
    except BlockedURLError:
        return  # never fetched: its canonical form identifies nothing
    assert canonicalize(once) == once, (text, once)


def _check_guard(text: str) -> None:
    try:
        check_url(text)
    except BlockedURLError as exc:
        assert exc.reason
    address_problem(text)
    is_public_address(text)


def _check_blocked_spelling(parts: list[str]) -> None:
    # A host spelled as 1-4 numeric parts (any base) that inet_aton reads as a blocked
    # address must never pass check_url.
    url = "http://" + ".".join(parts) + "/"
    try:
        check_url(url)
    except BlockedURLError:
        return
    from sleuth.fetch.guard import parse_ipv4_like

    try:
        ip = parse_ipv4_like(".".join(parts))
    except ValueError:
        return
    assert ip is None or is_public_address(ip), f"{url} passed the guard ({ip})"


_PART = st.one_of(
    st.integers(0, 2**32 - 1).map(str),
    st.integers(0, 2**32 - 1).map(hex),
    st.integers(0, 2**32 - 1).map(lambda n: "0" + oct(n)[2:]),
    st.integers(0, 255).map(str),
)

TARGETS: dict[str, tuple[Callable[..., None], tuple[st.SearchStrategy[object]]]] = {
    "extract": (_check_extract, (_DOCUMENTS,)),
    "urls": (_check_urls, (_URLISH,)),
    "guard": (_check_guard, (_URLISH,)),
    "spellings": (_check_blocked_spelling, (st.lists(_PART, min_size=1, max_size=4),)),
}


def fuzz(name: str, examples: int) -> tuple[int, str | None]:
    """Run one target; the number of examples tried and the failure (None if none)."""
    check, strategies = TARGETS[name]
    tried = [0]

    def counted(value: object) -> None:  # every target takes one generated value
        tried[0] += 1
        check(value)

    runner = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )(given(*strategies)(counted))
    try:
        runner()
    except Exception:
        return tried[0], traceback.format_exc(limit=-3)
    return tried[0], None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=20_000, help="examples per target")
    parser.add_argument(
        "--targets", default=",".join(TARGETS), help=f"comma-separated, from {', '.join(TARGETS)}"
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.targets.split(",") if n.strip()]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        parser.error(f"unknown targets: {', '.join(unknown)}")
    crashes = 0
    print(f"{'target':<10} {'examples':>9} {'seconds':>8}  result")
    for name in names:
        started = time.perf_counter()
        tried, failure = fuzz(name, args.examples)
        took = time.perf_counter() - started
        print(f"{name:<10} {tried:>9,} {took:>8.1f}  {'CRASH' if failure else 'ok'}", flush=True)
        if failure:
            crashes += 1
            print(failure)
    print(f"\n{crashes} crashing target(s) of {len(names)}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
