"""A tiny BM25 index and the SearXNG-shaped JSON answer built from it.

The corpus is a few dozen documents, so a plain-Python Okapi BM25 is instant
to build and to query, and it has no progress bars, no warnings and no numpy.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["IndexEntry", "SearchIndex", "searxng_payload", "snippet", "tokenize"]

_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves recently found find
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _stem(word: str) -> str:
    """A deliberately light English suffix stripper (tariffs → tariff, landers → lander)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-cased, stemmed word tokens of ``text`` without stopwords and 1-letter words."""
    words = _WORD.findall(text.lower().replace("\u2019", "'"))
    return [_stem(word) for word in words if len(word) > 1 and word not in _STOPWORDS]


@dataclass(frozen=True)
class IndexEntry:
    """One searchable page: its URL, title and text, and a fixed snippet if it has one."""

    url: str
    title: str
    text: str
    snippet: str | None = None


class SearchIndex:
    """Okapi BM25 over title (counted twice) and text of each entry."""

    k1 = 1.2
    b = 0.75

    def __init__(self, entries: list[IndexEntry]) -> None:
        self.entries = entries
        self._counts: list[Counter[str]] = []
        self._lengths: list[int] = []
        self._sentences: dict[str, list[tuple[str, frozenset[str]]]] = {}
        df: Counter[str] = Counter()
        for entry in entries:
            tokens = tokenize(entry.title) * 2 + tokenize(entry.text)
            counts = Counter(tokens)
            self._counts.append(counts)
            self._lengths.append(len(tokens))
            df.update(counts.keys())
        total = len(entries)
        self._avg_length = sum(self._lengths) / total if total else 1.0
        self._idf = {term: math.log(1 + (total - n + 0.5) / (n + 0.5)) for term, n in df.items()}

    def search(self, query: str) -> list[tuple[IndexEntry, float]]:
        """Every entry that matches at least one query term, best first."""
        terms = set(tokenize(query))
        scored: list[tuple[float, int]] = []
        for index, counts in enumerate(self._counts):
            norm = self.k1 * (1 - self.b + self.b * self._lengths[index] / self._avg_length)
            score = sum(
                self._idf[term] * counts[term] * (self.k1 + 1) / (counts[term] + norm)
                for term in terms
                if counts.get(term)
            )
            if score > 0:
                scored.append((score, index))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [(self.entries[index], score) for score, index in scored]

    def sentences(self, entry: IndexEntry) -> list[tuple[str, frozenset[str]]]:
        """``entry``'s sentences with their tokens, split once and cached."""
        if entry.url not in self._sentences:
            self._sentences[entry.url] = _sentences(entry.text)
        return self._sentences[entry.url]


def _sentences(text: str) -> list[tuple[str, frozenset[str]]]:
    parts = [part.strip() for part in _SENTENCE.split(text) if part.strip()]
    return [(part, frozenset(tokenize(part))) for part in parts]


def snippet(index: SearchIndex, entry: IndexEntry, query: str, limit: int = 300) -> str:
    """The entry's fixed snippet, or the passage of its text that best matches ``query``."""
    if entry.snippet is not None:
        return entry.snippet
    sentences = index.sentences(entry)
    if not sentences:
        return ""
    terms = set(tokenize(query))
    best = max(range(len(sentences)), key=lambda i: (len(terms & sentences[i][1]), -i))
    passage = " ".join(text for text, _ in sentences[best : best + 3])
    if len(passage) <= limit:
        return passage
    return passage[:limit].rsplit(" ", 1)[0] + " …"


def searxng_payload(index: SearchIndex, query: str, pageno: int, per_page: int) -> dict[str, Any]:
    """The JSON body SearXNG's ``/search?format=json`` gives for one page of results."""
    found = index.search(query)
    start = (pageno - 1) * per_page
    results = []
    for position, (entry, score) in enumerate(found[start : start + per_page], start + 1):
        parts = urlsplit(entry.url)
        results.append(
            {
                "url": entry.url,
                "title": entry.title,
                "content": snippet(index, entry, query),
                "engine": "offline",
                "engines": ["offline"],
                "score": round(score, 4),
                "category": "general",
                "positions": [position],
                "template": "default.html",
                "parsed_url": [parts.scheme, parts.netloc, parts.path, "", parts.query, ""],
            }
        )
    return {
        "query": query,
        "number_of_results": len(found),
        "results": results,
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": [],
    }
