"""Rebuild the offline test web's corpus from the shared data sets.

Usage (from the repository root, with ``../shared/data`` beside the checkout)::

    .venv/bin/python tests/data/corpus/build_corpus.py [../shared/data]

It copies the selected pages (gzipped, byte for byte), the PDFs, the two real
pages behind hostile cases, extracts each document's plain text once (so that
``sleuth.testing.OfflineWeb`` starts without running an extractor) and writes
``manifest.json`` and ``LICENSES.md``. The selection below is hand-picked: the
pages fall into topic clusters that share vocabulary, plus unrelated pages.
The project's tests never run this script; they only read what it wrote.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pypdf
import trafilatura

HERE = Path(__file__).resolve().parent

# Where each source set comes from and under which licence it was published.
SOURCES: dict[str, dict[str, str]] = {
    "aeb": {
        "repo": "github.com/scrapinghub/article-extraction-benchmark",
        "licence": "MIT",
        "note": "Article Extraction Benchmark, (c) 2020 Scrapinghub; html/<sha256>.html.gz "
        "with the original URL in ground-truth.json. The pages themselves are "
        "third-party content kept as benchmark data.",
    },
    "readability": {
        "repo": "github.com/mozilla/readability @ ab4027a8b37669745016869a37a504727992b2ba",
        "licence": "Apache-2.0",
        "note": "Mozilla Readability.js test pages, test/test-pages/<name>/source.html "
        "(URLs rewritten to http://fakehost/ upstream). Third-party content kept "
        "as test fixtures.",
    },
    "postlight": {
        "repo": "github.com/postlight/parser @ e8ba7ece291efa4d915d50dd4deeec17d54359f2",
        "licence": "MIT OR Apache-2.0",
        "note": "Postlight (Mercury) Parser fixtures, fixtures/<domain>.html. Third-party "
        "content kept as test fixtures.",
    },
    "pdfs": {
        "repo": "github.com/Unstructured-IO/unstructured @ "
        "3e5482bfcdc843b5218ad98d2845b4b71ab013b7",
        "licence": "Apache-2.0",
        "note": "unstructured example-docs/pdf/<name>.pdf, (c) 2022 Unstructured "
        "Technologies; the documents are third-party samples.",
    },
}

# (doc id, source set, file inside the set). aeb files are named by hash prefix.
SELECTION: list[tuple[str, str, str]] = [
    # Cluster: Google Stadia cloud game streaming.
    ("wsj-stadia-xcloud-arcade", "aeb", "042bb7b5"),
    ("digg-stadia-early-reviews", "aeb", "680c2848"),
    ("hollywoodreporter-stadia-launch", "aeb", "8267acac"),
    ("wccftech-stadia-destiny-2", "aeb", "e100c961"),
    # Cluster: NASA, the Moon and other moons.
    ("aljazeera-nasa-commercial-moon-shot", "aeb", "42aad16b"),
    ("space-nasa-private-moon-landers", "aeb", "c50845a7"),
    ("space-europa-water-vapor", "aeb", "686bb170"),
    ("hawaiinewsnow-europa-telescope", "aeb", "f344ca5f"),
    ("sciencealert-titan-geological-map", "aeb", "359fee22"),
    # Cluster: the US-China trade war and tariffs.
    ("deccanherald-beijing-tariff-demands", "aeb", "39d5c43b"),
    ("nytimes-trade-war-world-guessing", "aeb", "702d1da6"),
    ("politifact-tariffs-guide", "aeb", "b6906ca0"),
    ("cnn-asian-markets-trade-war", "aeb", "d605bdef"),
    # Cluster: the Hong Kong protests.
    ("guardian-hong-kong-on-the-brink", "aeb", "5fa3154e"),
    ("express-hong-kong-china-troops", "aeb", "624fcd90"),
    ("washingtonexaminer-beijing-hong-kong", "aeb", "e4c6a3b4"),
    ("cityam-alibaba-hong-kong-listing", "aeb", "360c732d"),
    # Cluster: WeWork under investigation.
    ("venturebeat-wework-attorney-general", "aeb", "06e5123e"),
    ("techcrunch-wework-investigation", "aeb", "1ace8c85"),
    ("therealdeal-wework-layoffs", "aeb", "bc13ff87"),
    ("businessinsider-tech-news-wework", "aeb", "fde930b0"),
    # Cluster: methamphetamine, South Dakota's campaign and drug enforcement.
    ("thehill-south-dakota-meth-campaign", "aeb", "156770d6"),
    ("usatoday-meth-were-on-it", "aeb", "776a1c04"),
    ("spokesman-meth-ad-agencies", "aeb", "c13b9c0e"),
    ("therepublic-drug-investigation-arrests", "aeb", "961bd85c"),
    ("politifact-drugs-at-the-border", "aeb", "9e8c9f08"),
    # Cluster: Mozilla Firefox.
    ("wikipedia-mozilla", "readability", "wikipedia"),
    ("mozilla-firefox-customize", "readability", "mozilla-1"),
    ("mozilla-firefox-developer-edition", "readability", "mozilla-2"),
    ("firefox-nightly-news-85", "readability", "firefox-nightly-blog"),
    # Unrelated pages (some near a cluster's vocabulary, as distractors).
    ("engadget-xbox-one-x-review", "readability", "engadget"),
    ("arstechnica-minecraft-exploit", "readability", "ars-1"),
    ("v8-standalone-webassembly", "readability", "v8-blog"),
    ("nytimes-yahoo-verizon-sale", "readability", "nytimes-2"),
    ("lemonde-loi-renseignement", "readability", "lemonde-1"),
    ("wikipedia-hermitian-matrix", "readability", "wikipedia-3"),
    ("nbcnews-spacex-hold-up", "postlight", "www.nbcnews.com.html"),
    ("wired-rosetta-comet", "postlight", "www.wired.com.html"),
    ("fool-esports-amazon-activision", "postlight", "www.fool.com.html"),
    ("reuters-fed-lifts-rates", "postlight", "www.reuters.com.html"),
    ("newyorker-quantum-cryptography", "postlight", "www.newyorker.com.html"),
    # A PDF (its title is the first line of its first page).
    ("dense-passage-retrieval", "pdfs", "multi-column-2p.pdf"),
]

PDF_TITLES = {
    "multi-column-2p.pdf": "Dense Passage Retrieval for Open-Domain Question Answering",
    "layout-parser-paper-fast.pdf": (
        "LayoutParser: A Unified Toolkit for Deep Learning Based Document Image Analysis"
    ),
}

TOPICS: list[dict[str, Any]] = [
    {
        "id": "stadia",
        "question": "Is Google Stadia's cloud game streaming service worth it at launch?",
        "expected": [
            "wsj-stadia-xcloud-arcade",
            "digg-stadia-early-reviews",
            "hollywoodreporter-stadia-launch",
            "wccftech-stadia-destiny-2",
        ],
    },
    {
        "id": "moons",
        "question": "What have NASA and astronomers recently found out about the Moon, "
        "Jupiter's moon Europa and Saturn's moon Titan?",
        "expected": [
            "aljazeera-nasa-commercial-moon-shot",
            "space-nasa-private-moon-landers",
            "space-europa-water-vapor",
            "hawaiinewsnow-europa-telescope",
            "sciencealert-titan-geological-map",
        ],
    },
    {
        "id": "trade-war",
        "question": "How are tariffs in the US-China trade war affecting markets and trade talks?",
        "expected": [
            "deccanherald-beijing-tariff-demands",
            "nytimes-trade-war-world-guessing",
            "politifact-tariffs-guide",
            "cnn-asian-markets-trade-war",
        ],
    },
    {
        "id": "hong-kong",
        "question": "How is China responding to the protests in Hong Kong?",
        "expected": [
            "guardian-hong-kong-on-the-brink",
            "express-hong-kong-china-troops",
            "washingtonexaminer-beijing-hong-kong",
            "cityam-alibaba-hong-kong-listing",
        ],
    },
    {
        "id": "wework",
        "question": "Why is the New York attorney general investigating WeWork and its "
        "founder Adam Neumann?",
        "expected": [
            "venturebeat-wework-attorney-general",
            "techcrunch-wework-investigation",
            "therealdeal-wework-layoffs",
            "businessinsider-tech-news-wework",
        ],
    },
    {
        "id": "meth",
        "question": "How are South Dakota and police fighting meth (methamphetamine) drug use?",
        "expected": [
            "thehill-south-dakota-meth-campaign",
            "usatoday-meth-were-on-it",
            "spokesman-meth-ad-agencies",
            "therepublic-drug-investigation-arrests",
            "politifact-drugs-at-the-border",
        ],
    },
    {
        "id": "firefox",
        "question": "How is Mozilla's Firefox web browser developed and released?",
        "expected": [
            "wikipedia-mozilla",
            "mozilla-firefox-customize",
            "mozilla-firefox-developer-edition",
            "firefox-nightly-news-85",
        ],
    },
]

NAV_ONLY_LINKS = [
    "Home",
    "Hong Kong",
    "China",
    "Protests",
    "Politics",
    "World",
    "Asia",
    "Business",
    "Markets",
    "Trade war",
    "Tariffs",
    "Technology",
    "Games",
    "Stadia",
    "Science",
    "Space",
    "NASA",
    "Moon",
    "Opinion",
    "Video",
    "Podcasts",
    "Newsletters",
    "Subscribe",
    "Log in",
    "About us",
    "Contact",
    "Careers",
    "Advertise",
    "Privacy policy",
    "Terms of use",
]

# Synthetic hostile cases: what the search index claims about them (SEO-spam style).
HOSTILE: dict[str, dict[str, Any]] = {
    "slow_drip": {
        "path": "/google-stadia-review-is-cloud-gaming-worth-it",
        "topic": "stadia",
        "title": "Google Stadia review: is cloud game streaming worth it at launch?",
        "snippet": "Our full Google Stadia review: game streaming latency, 4K, price, "
        "Destiny 2 and Red Dead Redemption 2 tested. Is Stadia worth it?",
    },
    "gzip_bomb": {
        "path": "/stadia-launch-games-list",
        "topic": "stadia",
        "title": "Stadia launch: every game on Google's cloud streaming service",
        "snippet": "Google Stadia launch games, Stadia Pro subscription, controller and "
        "Chromecast: everything about Google's game streaming service.",
    },
    "endless": {
        "path": "/nasa-moon-landers-europa-titan-live",
        "topic": "moons",
        "title": "NASA moon landers, Europa water vapor and Titan map: live updates",
        "snippet": "Live: NASA picks SpaceX and Blue Origin for commercial Moon landers; "
        "water vapor on Jupiter's moon Europa; first map of Saturn's moon Titan.",
    },
    "binary_html": {
        "path": "/europa-moon-water-plumes-nasa",
        "topic": "moons",
        "title": "Water on Europa: NASA confirms plumes on Jupiter's icy moon",
        "snippet": "Astronomers using the Keck telescope found water vapor above Europa, "
        "Jupiter's moon, NASA scientists said.",
    },
    "redirect_loop": {
        "path": "/us-china-trade-war-tariffs-explained",
        "topic": "trade-war",
        "title": "US-China trade war explained: tariffs, markets and the phase one deal",
        "snippet": "How Trump's tariffs on Chinese goods and the US-China trade talks move "
        "stock markets, explained.",
    },
    "server_error": {
        "path": "/trade-war-tariff-tracker",
        "topic": "trade-war",
        "title": "Trade war tariff tracker: US and China tariffs on goods",
        "snippet": "Track every US tariff on Chinese goods and China's retaliatory tariffs "
        "in the trade war.",
    },
    "nav_only": {
        "path": "/hong-kong-protests-china-response",
        "topic": "hong-kong",
        "title": "Hong Kong protests: how China is responding",
        "snippet": "Hong Kong protests latest: China, Beijing, police and protesters at "
        "Hong Kong's universities.",
        "file": "hostile/nav-only.html",
    },
    "forbidden": {
        "path": "/hong-kong-protest-timeline",
        "topic": "hong-kong",
        "title": "Hong Kong protest timeline: China, police and protesters",
        "snippet": "A timeline of the Hong Kong protests and Beijing's response to the protesters.",
    },
    "not_found": {
        "path": "/wework-investigation-adam-neumann",
        "topic": "wework",
        "title": "WeWork investigation: New York attorney general probes Adam Neumann",
        "snippet": "The New York attorney general is investigating WeWork and its founder "
        "and former CEO Adam Neumann.",
    },
    "empty": {
        "path": "/meth-were-on-it-south-dakota",
        "topic": "meth",
        "title": "Meth. We're on it: South Dakota's anti-meth campaign",
        "snippet": "South Dakota's methamphetamine campaign 'Meth. We're on it' and how "
        "police fight meth use.",
    },
}


def _clean(text: str) -> str:
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    return re.sub(r"\n\s*\n+", "\n\n", text).strip()


def _snippet(text: str, limit: int = 300) -> str:
    return " ".join(text.split())[:limit].rsplit(" ", 1)[0] + " …"


def _html_title_and_text(html: str) -> tuple[str, str]:
    meta = trafilatura.extract_metadata(html)
    title = (meta.title if meta else None) or ""
    if not title:
        found = re.search(r"<title[^>]*>(.*?)</title>", html, re.S | re.I)
        title = found.group(1).strip() if found else ""
    text = trafilatura.extract(html, include_comments=False) or ""
    return _clean(title), _clean(text)


def _pdf_text(data: bytes) -> str:
    reader = pypdf.PdfReader(io.BytesIO(data))
    text = "\n".join(page.extract_text() or "" for page in reader.pages)
    return _clean(unicodedata.normalize("NFKC", text))  # NFKC undoes ligatures (ﬁ → fi)


def _aeb_file(root: Path, prefix: str) -> Path:
    (path,) = (root / "aeb" / "html").glob(prefix + "*.html.gz")
    return path


def _read_source(root: Path, source: str, name: str) -> tuple[bytes, str, str]:
    """Raw bytes, the path inside the source set and the page's original URL."""
    if source == "aeb":
        path = _aeb_file(root, name)
        truth = json.loads((root / "aeb" / "ground-truth.json").read_text())
        key = path.name.removesuffix(".html.gz")
        return gzip.decompress(path.read_bytes()), f"html/{path.name}", truth[key]["url"]
    if source == "readability":
        rel = f"test/test-pages/{name}/source.html"
        return (root / "readability" / rel).read_bytes(), rel, ""
    if source == "postlight":
        rel = f"fixtures/{name}"  # only the site is known, from the file name
        return (root / "postlight" / rel).read_bytes(), rel, ""
    rel = name
    return (root / "pdfs" / rel).read_bytes(), f"example-docs/pdf/{rel}", ""


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def build_doc(root: Path, doc_id: str, source: str, name: str) -> dict[str, Any]:
    """Copy one document into ``pages/`` and describe it for the manifest."""
    raw, rel, original = _read_source(root, source, name)
    if source == "pdfs":
        file, ctype = f"pages/{doc_id}.pdf", "application/pdf"
        title, text = PDF_TITLES[name], _pdf_text(raw)
        assert text.startswith(title.split(":")[0]), (doc_id, text[:80])
        (HERE / file).write_bytes(raw)
        path = f"/{doc_id}.pdf"
    else:
        html = raw.decode("utf-8")  # every selected page is UTF-8
        title, text = _html_title_and_text(html)
        file, ctype, path = f"pages/{doc_id}.html.gz", "text/html; charset=utf-8", f"/{doc_id}"
        (HERE / file).write_bytes(_gz(raw))
    assert title and len(text) > 300, (doc_id, title, len(text))
    return {
        "id": doc_id,
        "path": path,
        "file": file,
        "content_type": ctype,
        "title": title,
        "source": f"{source}:{rel}",
        "licence": SOURCES[source]["licence"],
        "original_url": original,
        "text": text,
    }


def build_hostile(root: Path) -> dict[str, dict[str, Any]]:
    """The hostile cases; two of them serve real (copied) documents."""
    cases = {name: dict(entry) for name, entry in HOSTILE.items()}
    raw, rel, original = _read_source(root, "aeb", "d1c57d78")
    html = raw.decode("utf-8")
    # Drop the in-page charset so the only declaration is the (wrong) HTTP header.
    html = re.sub(r'<meta charset="UTF-8">', "", html, count=1)
    (HERE / "hostile" / "wrong-charset.html.gz").write_bytes(_gz(html.encode("utf-8")))
    title, text = _html_title_and_text(html)
    cases["wrong_charset"] = {
        "path": "/nasa-adds-five-companies-lunar-lander-program",
        "topic": "moons",
        "title": title,
        "snippet": _snippet(text),
        "text": text,
        "file": "hostile/wrong-charset.html.gz",
        "source": f"aeb:{rel}",
        "licence": SOURCES["aeb"]["licence"],
        "original_url": original,
        "declared_charset": "iso-8859-1",
        "expect_text": "This \u201con-ramp\u201d to CLPS was specifically designed",
    }
    pdf, prel, _ = _read_source(root, "pdfs", "layout-parser-paper-fast.pdf")
    (HERE / "hostile" / "layoutparser.pdf").write_bytes(pdf)
    text = _pdf_text(pdf)
    cases["pdf"] = {
        "path": "/layoutparser-document-image-analysis.pdf",
        "topic": None,
        "title": PDF_TITLES["layout-parser-paper-fast.pdf"],
        "snippet": _snippet(text),
        "text": text,
        "file": "hostile/layoutparser.pdf",
        "source": f"pdfs:{prel}",
        "licence": SOURCES["pdfs"]["licence"],
        "original_url": "",
        "expect_text": "LayoutParser",
    }
    (HERE / "hostile" / "nav-only.html").write_text(_nav_only_html(), encoding="utf-8")
    return dict(sorted(cases.items()))


def _nav_only_html() -> str:
    items = "\n".join(
        f'      <li><a href="/section/{re.sub(r"[^a-z]+", "-", label.lower())}">{label}</a></li>'
        for label in NAV_ONLY_LINKS
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{HOSTILE["nav_only"]["title"]}</title>
</head>
<body>
  <header>
    <nav class="site-menu">
    <ul>
{items}
    </ul>
    </nav>
  </header>
  <aside class="sidebar"><nav><ul>
{items}
  </ul></nav></aside>
  <footer><nav><ul>
{items}
  </ul></nav></footer>
</body>
</html>
"""


def write_licences(docs: list[dict[str, Any]], hostile: dict[str, dict[str, Any]]) -> None:
    """``LICENSES.md``: each source set's origin and licence, then one line per file."""
    lines = [
        "# Offline test web corpus: origins and licences",
        "",
        "Generated by `build_corpus.py` from `../shared/data`. Pages are copied byte for",
        "byte (gzipped); the one change is noted under the hostile cases.",
        "",
        "## Source sets",
        "",
    ]
    for key, src in SOURCES.items():
        lines += [f"- **{key}**: {src['repo']} ({src['licence']}). {src['note']}"]
    lines += [
        "",
        "## Corpus documents",
        "",
        "| id | file | origin | original URL | licence |",
        "|---|---|---|---|---|",
    ]
    for doc in docs:
        lines.append(
            f"| {doc['id']} | {doc['file']} | {doc['source']} | "
            f"{doc['original_url'] or '-'} | {doc['licence']} |"
        )
    lines += ["", "## Hostile cases backed by files", ""]
    for name, case in hostile.items():
        if "source" in case:
            lines.append(
                f"- `{name}`: {case['file']} from {case['source']} "
                f"({case['licence']}) {case.get('original_url') or ''}"
            )
    lines += [
        '  (`wrong_charset`: the page\'s `<meta charset="UTF-8">` was removed.)',
        "- `nav_only`: hostile/nav-only.html, written for this corpus (MIT, as the project).",
        "- The other hostile cases are generated at run time.",
        "",
    ]
    (HERE / "LICENSES.md").write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str]) -> None:
    """Rebuild everything under this folder from the shared data root in ``argv``."""
    root = Path(argv[1] if len(argv) > 1 else HERE.parents[3] / "shared" / "data").resolve()
    for sub in ("pages", "hostile"):
        (HERE / sub).mkdir(exist_ok=True)
        for old in (HERE / sub).iterdir():
            old.unlink()
    docs = [build_doc(root, doc_id, source, name) for doc_id, source, name in SELECTION]
    hostile = build_hostile(root)
    manifest = {"version": 1, "docs": docs, "hostile": hostile, "topics": TOPICS}
    (HERE / "manifest.json").write_text(
        json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    write_licences(docs, hostile)
    print(f"{len(docs)} docs, {len(hostile)} hostile cases, {len(TOPICS)} topics")


if __name__ == "__main__":
    main(sys.argv)
