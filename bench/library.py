"""The library: what pages past runs read give a later run, with and without web search.

On the tests' offline web (:class:`sleuth.testing.OfflineWeb`: the relevance corpus's
topics, every other topic's pages served and searchable beside each one's), for the
corpus topics of one split (tune: stadia, moons, trade-war, firefox; dev: hong-kong,
wework, meth; :mod:`bench.splits`), in one store:

1. **first**: each topic's question with its web search, ``--no-library`` (this fills
   the library with every page those runs read, the off-topic ones included);
2. **related, library only**: a related question per topic (:data:`RELATED`, written
   from the topic's question alone) with the search engine down, so that every source
   comes from the library;
3. **related, web**: the related questions with their web search, ``--no-library``;
4. **related, web + library**: the same with the library.

Per phase: sources cited per question; the share of them among the topic's expected
pages (``Topic.expected``: the pages a good search should find; a page outside it may
still be on-topic, so this is a floor); the share that only the library found (no web
search named them). No model (``--no-llm``); counts, not times.

    python -m bench.library --split tune
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import sleuth
from sleuth.testing import OfflineWeb

#: A second question per topic, on the same subject in other words.
RELATED = {
    "stadia": "What did reviewers say about Google Stadia when it launched?",
    "moons": "What are the latest discoveries about Europa, Titan and the Moon?",
    "trade-war": "What effect have US and China tariffs had on stock markets?",
    "firefox": "How does Mozilla build and ship new Firefox versions?",
    "hong-kong": "What has Beijing done about the Hong Kong protests?",
    "wework": "What is the New York attorney general's WeWork investigation about?",
    "meth": "What is South Dakota doing about methamphetamine addiction?",
}

SPLITS = {
    "tune": ("stadia", "moons", "trade-war", "firefox"),
    "dev": ("hong-kong", "wework", "meth"),
}


@dataclass
class Phase:
    """What one phase's runs cited: per topic, the expected pages and the cited ones."""

    name: str
    cited: dict[str, list[str]]
    expected: dict[str, set[str]]
    #: Per topic, the cited pages that only the library found.
    library_only: dict[str, list[str]]

    def expected_share(self) -> float:
        cited = sum(len(pages) for pages in self.cited.values())
        good = sum(page in self.expected[t] for t, pages in self.cited.items() for page in pages)
        return good / cited if cited else 0.0

    def per_question(self) -> float:
        return sum(len(p) for p in self.cited.values()) / max(1, len(self.cited))

    def library_share(self) -> float:
        cited = sum(len(p) for p in self.cited.values())
        return sum(len(p) for p in self.library_only.values()) / cited if cited else 0.0


def _doc_id(url: str) -> str:
    return urlsplit(url).path.strip("/").rsplit(".", 1)[0]


async def _phase(
    name: str, web: OfflineWeb, topics: Sequence[str], home: Path, related: bool, **more: Any
) -> Phase:
    chosen = [t for t in web.topics if t.id in topics]
    cited: dict[str, list[str]] = {}
    library_only: dict[str, list[str]] = {}
    for topic in chosen:
        settings: dict[str, Any] = {
            "search": "searxng",
            "searxng_url": web.searxng_url,
            "allow_private_urls": True,
            "timeout": 5,
            "no_llm": True,
            "home": str(home),
            **more,
        }
        question = RELATED[topic.id] if related else topic.question
        report = await sleuth.research(question, **settings)
        cited[topic.id] = [_doc_id(s.url) for s in report.sources]
        library_only[topic.id] = [
            _doc_id(s.url)
            for s in report.sources
            if s.providers and all(p.startswith("library") for p in s.providers)
        ]
    return Phase(name, cited, {t.id: set(t.expected) for t in chosen}, library_only)


async def run(split: str) -> list[Phase]:
    """The four phases on ``split``'s topics, in one fresh store."""
    topics = SPLITS[split]
    closed = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    closed.bind(("127.0.0.1", 0))  # bound, never listening: the search engine is down
    down = f"http://127.0.0.1:{closed.getsockname()[1]}"
    try:
        with OfflineWeb() as web, tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            return [
                await _phase("first (web)", web, topics, home, False, no_library=True),
                await _phase("related, library only", web, topics, home, True, searxng_url=down),
                await _phase("related, web", web, topics, home, True, no_library=True),
                await _phase("related, web + library", web, topics, home, True),
            ]
    finally:
        closed.close()


def table(split: str, phases: Sequence[Phase]) -> str:
    """The phases as a small text table."""
    lines = [
        f"library, split {split} ({', '.join(SPLITS[split])}), no model",
        f"{'phase':<24} {'cited/q':>8} {'expected':>9} {'library only':>13}",
    ]
    for phase in phases:
        lines.append(
            f"{phase.name:<24} {phase.per_question():>8.1f} "
            f"{phase.expected_share():>9.0%} {phase.library_share():>13.0%}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.library", description=__doc__)
    parser.add_argument("--split", choices=sorted(SPLITS), default="tune")
    args = parser.parse_args(argv)
    print(table(args.split, asyncio.run(run(args.split))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
