"""The scholarly providers: arXiv, PubMed and Semantic Scholar.

Each finds papers for the key words of a query and returns them as hits whose snippet
is the abstract and whose URL is the paper's canonical page (arXiv's abstract page,
PubMed's record) or, for Semantic Scholar, its open-access PDF when there is one.
Each keeps to its service's published rate limit (see the ``limits`` of each class).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from xml.etree.ElementTree import Element

from sleuth.models import SearchHit
from sleuth.search.base import ProviderFailure, clean_text, register
from sleuth.search.jsonapi import json_list
from sleuth.search.paced import PacedProvider, Reply, parse_xml, query_terms
from sleuth.search.pacing import Limit

__all__ = ["ArxivProvider", "PubMedProvider", "SemanticScholarProvider"]

_ATOM = "{http://www.w3.org/2005/Atom}"
#: arXiv answers a bad query with HTTP 200 and one entry whose id is under this path.
_ARXIV_ERROR_ID = "/api/errors"
_VERSION = re.compile(r"v\d+$")


def _text(node: Element | None) -> str:
    """All the text inside ``node`` (inline markup such as <i> kept as its words)."""
    return clean_text("".join(node.itertext())) if node is not None else ""


def _abstract_page(url: str) -> str:
    """An arXiv abstract page as cited: https, without the version (the latest one)."""
    if url.startswith("http://arxiv.org/"):
        url = "https://" + url[len("http://") :]
    return _VERSION.sub("", url) if url.startswith("https://arxiv.org/abs/") else url


@register
class ArxivProvider(PacedProvider):
    """arXiv's Atom API: papers whose metadata hold every key word of the query."""

    name = "arxiv"
    service = "arXiv"
    url_setting = "arxiv_url"
    # "no more than one request every three seconds, ... a single connection at a time"
    limits = (Limit(3.0, "one request every 3 s", serial=True),) * 2
    max_results = 50

    def service_query(self, query: str) -> str:
        """``all:word AND all:word ...`` (words with punctuation quoted)."""
        terms = query_terms(query, most=6)
        return " AND ".join(f"all:{t}" if t.isalnum() else f'all:"{t}"' for t in terms)

    async def find(self, asked: str, limit: int, deadline: float) -> list[SearchHit]:
        """One request; the feed's entries in relevance order."""
        reply = await self.get(
            self.base_url,
            {
                "search_query": asked,
                "start": 0,
                "max_results": min(limit, self.max_results),
                "sortBy": "relevance",
            },
            deadline=deadline,
        )
        feed = parse_xml(reply.body)
        if feed.tag != f"{_ATOM}feed":
            raise ProviderFailure("invalid response (not an Atom feed)")
        entries = feed.findall(f"{_ATOM}entry")
        if len(entries) == 1 and _ARXIV_ERROR_ID in _text(entries[0].find(f"{_ATOM}id")):
            said = _text(entries[0].find(f"{_ATOM}summary"))
            raise ProviderFailure(self.with_detail("the query was refused", said))
        return self.hits(asked, (self._paper(e) for e in entries), limit)

    def _paper(self, entry: Element) -> dict[str, str]:
        page = _text(entry.find(f"{_ATOM}id"))
        for link in entry.findall(f"{_ATOM}link"):
            if link.get("rel") == "alternate" and link.get("href"):
                page = link.get("href", page)
        return {
            "title": _text(entry.find(f"{_ATOM}title")),
            "url": _abstract_page(page),
            "snippet": _text(entry.find(f"{_ATOM}summary")),
        }


@register
class PubMedProvider(PacedProvider):
    """PubMed through NCBI's E-utilities: ``esearch`` finds the records, ``efetch`` reads
    their titles and abstracts."""

    name = "pubmed"
    service = "NCBI"
    url_setting = "pubmed_url"
    optional_env_keys = ("NCBI_API_KEY",)
    # "no more than 3 requests per second" without a key, 10 with one (a little slower,
    # so that clock jitter never makes four in one second).
    limits = (
        Limit(0.34, "3 requests a second without NCBI_API_KEY"),
        Limit(0.11, "10 requests a second with NCBI_API_KEY"),
    )
    page = "https://pubmed.ncbi.nlm.nih.gov/{pmid}/"

    def params(self, **extra: str | int) -> dict[str, str | int]:
        """The parameters every E-utilities request carries (the tool's name, the key)."""
        base: dict[str, str | int] = {"db": "pubmed", "tool": "sleuth"}
        if "NCBI_API_KEY" in self.keys:
            base["api_key"] = self.keys["NCBI_API_KEY"]
        return {**base, **extra}

    async def find(self, asked: str, limit: int, deadline: float) -> list[SearchHit]:
        """``esearch`` (JSON) for the ids in relevance order, then ``efetch`` (XML)."""
        reply = await self.get(
            f"{self.base_url}/esearch.fcgi",
            self.params(term=asked, retmode="json", retmax=limit, sort="relevance"),
            deadline=deadline,
        )
        data = reply.json()
        result = data.get("esearchresult") if isinstance(data, Mapping) else None
        if isinstance(result, Mapping) and isinstance(result.get("ERROR"), str):
            raise ProviderFailure(self.with_detail("the query was refused", result["ERROR"]))
        ids = [str(i) for i in json_list(data, "esearchresult", "idlist") if str(i).isdigit()]
        if not ids:
            return []
        reply = await self.get(
            f"{self.base_url}/efetch.fcgi",
            self.params(id=",".join(ids), retmode="xml", rettype="abstract"),
            deadline=deadline,
        )
        papers = {paper["pmid"]: paper for paper in self._articles(reply)}
        return self.hits(asked, (papers[i] for i in ids if i in papers), limit)

    def _articles(self, reply: Reply) -> Iterable[dict[str, str]]:
        root = parse_xml(reply.body)
        if root.tag != "PubmedArticleSet":
            raise ProviderFailure("invalid response (not a PubmedArticleSet)")
        for article in root.iter("PubmedArticle"):
            pmid = _text(article.find("MedlineCitation/PMID"))
            if not pmid.isdigit():
                continue
            parts = []
            for part in article.iterfind("MedlineCitation/Article/Abstract/AbstractText"):
                label = part.get("Label")
                text = _text(part)
                parts.append(f"{label.capitalize()}: {text}" if label and text else text)
            yield {
                "pmid": pmid,
                "title": _text(article.find("MedlineCitation/Article/ArticleTitle")),
                "url": self.page.format(pmid=pmid),
                "snippet": " ".join(p for p in parts if p),
            }


@register
class SemanticScholarProvider(PacedProvider):
    """Semantic Scholar's Graph API paper search (all fields of science)."""

    name = "semanticscholar"
    service = "Semantic Scholar"
    url_setting = "semantic_scholar_url"
    optional_env_keys = ("SEMANTIC_SCHOLAR_API_KEY",)
    # A key's published rate is one request a second; without one the requests share a
    # pool with every other keyless client, so they are kept to the same pace.
    limits = (
        Limit(1.0, "one request a second (a pool shared by all clients without a key)"),
        Limit(1.0, "one request a second with SEMANTIC_SCHOLAR_API_KEY"),
    )
    fields = "title,abstract,url,tldr,openAccessPdf"
    max_limit = 100

    def service_query(self, query: str) -> str:
        """Plain key words (the search takes no syntax; hyphens are better as spaces)."""
        return " ".join(query_terms(query)).replace("-", " ")

    async def find(self, asked: str, limit: int, deadline: float) -> list[SearchHit]:
        """One request; ``data`` in relevance order."""
        headers = {}
        if "SEMANTIC_SCHOLAR_API_KEY" in self.keys:
            headers["x-api-key"] = self.keys["SEMANTIC_SCHOLAR_API_KEY"]
        reply = await self.get(
            f"{self.base_url}/paper/search",
            {"query": asked, "limit": min(limit, self.max_limit), "fields": self.fields},
            headers=headers,
            deadline=deadline,
        )
        papers = [self._paper(p) for p in json_list(reply.json(), "data") if isinstance(p, dict)]
        return self.hits(asked, papers, limit)

    @staticmethod
    def _paper(paper: dict[str, Any]) -> dict[str, object]:
        pdf = paper.get("openAccessPdf")
        pdf_url = pdf.get("url") if isinstance(pdf, dict) else None
        tldr = paper.get("tldr")
        summary = paper.get("abstract") or (tldr.get("text") if isinstance(tldr, dict) else "")
        return {
            "title": paper.get("title"),
            "url": pdf_url if isinstance(pdf_url, str) and pdf_url else paper.get("url"),
            "snippet": summary,
        }
