"""What the benchmark world serves: its pages, where they come from, and their bytes.

:func:`load_pages` reads the page sets of :data:`KINDS` (see :mod:`bench.world` for what
each holds); each page carries its URL on the real web where known (``origin``), which
:mod:`bench.hosts` turns into the site whose host serves it.
"""

from __future__ import annotations

import gzip
import html
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.parse import quote, urlsplit

from bench.pages import canonical_url, read_body, real_pages
from sleuth.testing._corpus import Corpus

__all__ = [
    "KINDS",
    "REPO",
    "PageEntry",
    "address_of_page",
    "data_dir",
    "load_pages",
    "slug",
]

REPO = Path(__file__).resolve().parents[1]
#: Every set of pages the world can serve, and the second octet of their addresses.
KINDS = {"hotpotqa": 1, "corpus": 2, "aeb": 3, "wcxb": 4, "readability": 5, "postlight": 6}


def data_dir() -> Path:
    """``../shared/data`` beside the checkout (or ``$SLEUTH_BENCH_DATA``)."""
    return Path(os.environ.get("SLEUTH_BENCH_DATA", REPO.parent / "shared" / "data"))


@dataclass
class PageEntry:
    """One page of the world: where it lives, what it is, and its bytes."""

    kind: str  # one of KINDS
    key: str  # HotpotQA title, corpus doc id, AEB id, WCXB id, test-page or fixture name
    title: str
    text: str
    path: str
    body: Callable[[], bytes]
    content_type: str = "text/html; charset=utf-8"
    url: str = ""
    size: int = 0  # bytes of the body (0: not measured)
    #: What the page's latency is seeded with: its path, or for the heavy sets (whose
    #: paths repeat, "/" above all) kind, key and path.
    latency_key: str = ""
    origin: str = ""  # its URL on the real web, where known
    site: str = ""  # the site whose host serves it (bench.hosts)

    def __post_init__(self) -> None:
        self.latency_key = self.latency_key or self.path


def slug(title: str) -> str:
    return quote(title.replace(" ", "_"), safe="_()-.,'")


def _wiki_page(title: str, sentences: list[str]) -> bytes:
    """A HotpotQA paragraph as an encyclopedia page, with the chrome real ones have."""
    esc = html.escape
    text = esc("".join(sentences).strip())
    nav = "".join(
        f'<li><a href="/wiki/{p}">{p.replace("_", " ")}</a></li>'
        for p in (
            "Main_Page",
            "Contents",
            "Current_events",
            "Random_article",
            "About",
            "Contact_us",
            "Donate",
            "Help",
        )
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)} - Wikipedia</title></head><body>"
        f'<header><nav><ul>{nav}</ul></nav><form><input name="search" '
        f'placeholder="Search Wikipedia"></form></header>'
        f"<main><article><h1>{esc(title)}</h1>"
        f'<p class="tagline">From Wikipedia, the free encyclopedia</p>'
        f"<p>{text}</p></article></main>"
        f"<footer><p>Text is available under the Creative Commons Attribution-ShareAlike "
        f'License; additional terms may apply.</p><ul><li><a href="/privacy">Privacy '
        f'policy</a></li><li><a href="/about">About Wikipedia</a></li><li><a '
        f'href="/disclaimers">Disclaimers</a></li></ul></footer></body></html>'
    ).encode()


def _gunzip(file: Path) -> bytes:
    return gzip.decompress(file.read_bytes())


def load_pages(
    data: Path,
    kinds: tuple[str, ...] = tuple(KINDS),
    drop: frozenset[str] = frozenset(),
    also: frozenset[str] = frozenset(),
) -> list[PageEntry]:
    """The pages of ``kinds`` and those named ``kind:key`` in ``also``, without those
    named in ``drop``."""
    pages = _light_pages(data)
    wanted = set(kinds) | {a.partition(":")[0] for a in also}
    heavy = tuple(k for k in wanted if k in ("wcxb", "readability", "postlight"))
    served = _corpus_sources()
    pages += [
        PageEntry(
            p.kind,
            p.key,
            p.title,
            p.text,
            p.path,
            partial(read_body, p.file),
            size=p.size,
            latency_key=f"/{p.kind}/{p.key}{p.path}",
            origin=p.origin,
        )
        for p in real_pages(data, heavy)
        if f"{p.kind}:{p.key}" not in served
    ]
    return [
        p
        for p in pages
        if (p.kind in kinds or f"{p.kind}:{p.key}" in also) and f"{p.kind}:{p.key}" not in drop
    ]


def _corpus_sources() -> set[str]:
    """``kind:key`` of the Readability and Postlight pages the corpus already serves."""
    served = set()
    for doc in Corpus.load(REPO / "tests" / "data" / "corpus").docs:
        kind, _, file = doc.source.partition(":")
        if kind == "readability" and file.endswith("/source.html"):
            served.add(f"readability:{file.rsplit('/', 2)[-2]}")
        elif kind == "postlight":
            served.add(f"postlight:{file.rsplit('/', 1)[-1].removesuffix('.html')}")
    return served


def _light_pages(data: Path) -> list[PageEntry]:
    pages: list[PageEntry] = []
    corpus_file = data / "hotpotqa" / "hotpotqa_train_corpus.json"
    if corpus_file.is_file():
        paragraphs: dict[str, list[str]] = json.loads(corpus_file.read_text(encoding="utf-8"))
        for title, sentences in paragraphs.items():
            pages.append(
                PageEntry(
                    "hotpotqa",
                    title,
                    title,
                    "".join(sentences).strip(),
                    f"/wiki/{slug(title)}",
                    body=partial(_wiki_page, title, sentences),
                    size=len(_wiki_page(title, sentences)),
                    origin=f"https://en.wikipedia.org/wiki/{slug(title)}",
                )
            )
    corpus = Corpus.load(REPO / "tests" / "data" / "corpus")
    seen_urls: set[str] = set()
    for doc in corpus.docs:
        if doc.original_url:
            seen_urls.add(doc.original_url.split("?")[0].rstrip("/"))
        body = corpus.body(doc.file)
        pages.append(
            PageEntry(
                "corpus",
                doc.id,
                doc.title,
                doc.text,
                doc.path,
                body=partial(corpus.body, doc.file),
                content_type=doc.content_type,
                size=len(body),
                origin=_corpus_origin(doc.original_url, doc.source, body),
            )
        )
    aeb = data / "aeb"
    if (aeb / "ground-truth.json").is_file():
        truth: dict[str, dict[str, str]] = json.loads(
            (aeb / "ground-truth.json").read_text(encoding="utf-8")
        )
        for page_id, entry in sorted(truth.items()):
            url = str(entry.get("url", "")).split("?")[0].rstrip("/")
            file = aeb / "html" / f"{page_id}.html.gz"
            if (
                not url
                or any(url.startswith(s) or s.startswith(url) for s in seen_urls)
                or not file.is_file()
            ):
                continue  # already served as a corpus page
            raw = gzip.decompress(file.read_bytes())
            found = re.search(rb"<title[^>]*>(.*?)</title>", raw, re.DOTALL | re.IGNORECASE)
            title = (
                html.unescape(found.group(1).decode("utf-8", "replace")).strip() if found else ""
            ) or page_id[:12]
            path = urlsplit(str(entry.get("url", ""))).path or f"/{page_id}"
            pages.append(
                PageEntry(
                    "aeb",
                    page_id,
                    " ".join(title.split())[:200],
                    str(entry.get("articleBody", "")),
                    path,
                    body=partial(_gunzip, file),
                    size=len(raw),
                    origin=str(entry.get("url", "")),
                )
            )
    return pages


def _corpus_origin(original_url: str | None, source: str, body: bytes) -> str:
    """A corpus document's URL on the web: its own, else that of the page it was saved
    from (a Readability page's canonical link, a Postlight fixture's name), else ""."""
    if original_url:
        return original_url
    kind, _, file = source.partition(":")
    if kind == "postlight":
        return "https://" + file.rsplit("/", 1)[-1].removesuffix(".html").replace("--", "/")
    return canonical_url(body) if kind == "readability" else ""


def address_of_page(kind: str, index: int) -> str:
    return f"127.{KINDS[kind]}.{index // 250}.{index % 250 + 1}"
