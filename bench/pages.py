"""The benchmark world's heavy real pages: WCXB dev, Mozilla Readability and Postlight.

Saved pages of real sites at their real sizes (median 90–140 KB of HTML, 210 of the
1,797 over 500 KB, the largest 5.3 MB), served as they were saved. What the world's
search indexes for each page is its main text:

* WCXB dev (``wcxb-dev``, 1,497 pages of seven types): the human-reviewed
  ``main_content`` of its ground truth, and its ``title``;
* Readability (``readability/test/test-pages/*``, 130): the text of ``expected.html``
  (Readability.js's reviewed output) and the title of ``expected-metadata.json``;
* Postlight (``postlight/fixtures``, 170): no ground truth, so a cheap text of the
  page (lxml, without scripts, styles, navigation, headers, footers and forms) and
  its ``<title>``.

Each page also keeps the URL it had on the real web where that is known (WCXB's
``url``, a Readability page's canonical link, a Postlight fixture's name), which the
world uses to put it on its real site's host.

Where a page has no truth text (two WCXB pages lack ``main_content``, and a few have an
empty one: a bot wall), the cheap text stands in. Reading titles and texts (about 2 s
on 2 cores: 1,800 truth files and 300 lxml parses) is done once and cached in
``bench/.cache`` (keyed by each file's size and mtime; 6 MB): the cached read takes 0.2 s.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import json
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

__all__ = ["RealPage", "canonical_url", "cheap_text", "read_body", "real_pages"]

CACHE = Path(__file__).resolve().parent / ".cache" / "real-pages-v2.json.gz"
#: Index text kept per page: enough for BM25, and the snippet comes from its best part.
_TEXT_LIMIT = 60_000
_DROP = (
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "svg",
    "iframe",
    "select",
)


@dataclass(frozen=True)
class RealPage:
    """One saved page: its set, id, title, index text, URL path, HTML size and file, and
    its URL on the real web ("" where unknown)."""

    kind: str  # "wcxb" | "readability" | "postlight"
    key: str
    title: str
    text: str
    path: str
    size: int  # bytes of HTML as served (uncompressed)
    file: str  # absolute path; ``.gz`` files are served decompressed
    origin: str = ""


def read_body(file: str) -> bytes:
    """The page's HTML bytes as served."""
    data = Path(file).read_bytes()
    return gzip.decompress(data) if file.endswith(".gz") else data


def _gz_size(file: Path) -> int:
    # ISIZE, the gzip trailer's uncompressed size modulo 2**32: pages are far below that.
    with file.open("rb") as handle:
        handle.seek(-4, 2)
        return int(struct.unpack("<I", handle.read(4))[0])


def cheap_text(raw: bytes) -> tuple[str, str]:
    """``(title, text)`` of an HTML page, the quick way: lxml's text without the chrome."""
    import lxml.html

    try:
        tree = lxml.html.document_fromstring(raw)
    except Exception:  # saved pages can be anything; an unreadable one indexes as empty
        return "", ""
    title = " ".join((tree.findtext(".//title") or "").split())
    for node in tree.xpath("|".join(f"//{tag}" for tag in _DROP)):
        node.drop_tree()
    lines = (" ".join(line.split()) for line in tree.text_content().splitlines())
    return title, "\n".join(line for line in lines if line)[:_TEXT_LIMIT]


_CANONICAL = re.compile(
    rb"<(?:link|meta)\b[^>]*?(?:rel=[\"']?canonical|property=[\"']?og:url)[^>]*>", re.IGNORECASE
)
_HREF = re.compile(rb"(?:href|content)=[\"']?(https?://[^\"'\s>]+)", re.IGNORECASE)


def canonical_url(raw: bytes) -> str:
    """The page's canonical link (or ``og:url``) where its head has one, else ``""``."""
    for tag in _CANONICAL.finditer(raw, 0, 300_000):
        found = _HREF.search(tag.group(0))
        if found:
            return found.group(1).decode("ascii", "replace")
    return ""


def _html_text(file: Path) -> str:
    return cheap_text(file.read_bytes())[1]


def _wcxb(root: Path) -> Iterator[tuple[str, Path, dict[str, object]]]:
    for gt_file in sorted((root / "ground-truth").glob("*.json")):
        page = root / "html" / f"{gt_file.stem}.html.gz"
        if not page.is_file():
            continue
        data = json.loads(gt_file.read_text(encoding="utf-8"))
        gt = data.get("ground_truth") or {}
        text, title = str(gt.get("main_content") or ""), str(gt.get("title") or "")
        if not text.strip() or not title.strip():
            cheap_title, cheap = cheap_text(read_body(str(page)))
            text, title = text if text.strip() else cheap, title.strip() or cheap_title
        path = urlsplit(str(data.get("url") or "")).path or "/"
        yield (
            gt_file.stem,
            page,
            {
                "title": title,
                "text": text,
                "path": path,
                "size": _gz_size(page),
                "origin": str(data.get("url") or ""),
            },
        )


def _readability(root: Path) -> Iterator[tuple[str, Path, dict[str, object]]]:
    for case in sorted(p for p in (root / "test" / "test-pages").iterdir() if p.is_dir()):
        source = case / "source.html"
        if not source.is_file():
            continue
        meta_file, expected = case / "expected-metadata.json", case / "expected.html"
        meta = json.loads(meta_file.read_text(encoding="utf-8")) if meta_file.is_file() else {}
        raw = source.read_bytes()
        own_title, cheap = cheap_text(raw)
        text = _html_text(expected) if expected.is_file() else cheap
        yield (
            case.name,
            source,
            {
                "title": str(meta.get("title") or own_title or case.name),
                "text": text or cheap,
                "path": f"/{case.name}",
                "size": source.stat().st_size,
                "origin": canonical_url(raw),
            },
        )


def _postlight(root: Path) -> Iterator[tuple[str, Path, dict[str, object]]]:
    for source in sorted((root / "fixtures").glob("*.html")):
        title, text = cheap_text(source.read_bytes())
        name = source.name.removesuffix(".html")
        # "www.reddit.com--image" -> a path on its own host, as a crawler saved it
        yield (
            name,
            source,
            {
                "title": html.unescape(title) or name,
                "text": text,
                "path": "/" + quote(name.replace("--", "/"), safe="/.-_"),
                "size": source.stat().st_size,
                "origin": "https://" + name.replace("--", "/"),
            },
        )


_SETS = {
    "wcxb": ("wcxb-dev", _wcxb),
    "readability": ("readability", _readability),
    "postlight": ("postlight", _postlight),
}


def _load_cache() -> dict[str, dict[str, object]]:
    try:
        loaded = json.loads(gzip.decompress(CACHE.read_bytes()))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def real_pages(data: Path, kinds: tuple[str, ...] = tuple(_SETS)) -> list[RealPage]:
    """The saved pages of ``kinds`` under ``data`` (sets that are absent are skipped)."""
    cache, changed = _load_cache(), False
    pages: list[RealPage] = []
    for kind in kinds:
        folder = data / _SETS[kind][0]
        if not folder.is_dir():
            continue
        listing = sorted(
            (str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*")
            if p.is_file()
        )
        signature = hashlib.sha256(json.dumps(listing).encode()).hexdigest()
        entry = cache.get(kind)
        if (
            not isinstance(entry, dict)
            or entry.get("signature") != signature
            or entry.get("folder") != str(folder)
        ):
            found = [
                asdict(
                    RealPage(
                        kind,
                        key,
                        " ".join(str(meta["title"]).split())[:200],
                        str(meta["text"])[:_TEXT_LIMIT],
                        str(meta["path"]),
                        int(str(meta["size"])),
                        str(file),
                        str(meta.get("origin") or ""),
                    )
                )
                for key, file, meta in _SETS[kind][1](folder)
            ]
            entry = cache[kind] = {"signature": signature, "folder": str(folder), "pages": found}
            changed = True
        pages += [RealPage(**row) for row in entry["pages"]]
    if changed:
        _save(cache)
    return pages


def _save(cache: dict[str, dict[str, object]]) -> None:
    # Two worlds may start at once (the suite's and the relevance one): each writes its
    # own file and renames it into place. A checkout that cannot be written to just
    # reads the pages again next time.
    tmp = CACHE.with_name(f"{CACHE.name}.{os.getpid()}.tmp")
    try:
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(gzip.compress(json.dumps(cache).encode(), 5))
        tmp.replace(CACHE)
    except OSError:
        tmp.unlink(missing_ok=True)
