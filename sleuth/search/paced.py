"""The base of the specialised providers: one service's API, at the pace it publishes.

A :class:`PacedProvider` reads every setting it needs in one place (its API's base URL,
the search timeout, ``--lang``), sends each request in its turn (:mod:`sleuth.search.pacing`),
reads at most :attr:`PacedProvider.max_bytes` of an answer, honours a 429 (or a 503)
with ``Retry-After`` by waiting and asking once more when the wait fits the search's
time, and otherwise fails with what the service said, in words. The question and its
keyword query make the same service query: it is asked once per run.
"""

from __future__ import annotations

import asyncio
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from sleuth.models import SearchHit
from sleuth.search.base import ProviderFailure, SearchProvider, clean_text
from sleuth.search.jsonapi import mask_key_params, seconds
from sleuth.search.pacing import PACER, Limit, retry_after
from sleuth.terms import keywords, parse

__all__ = ["SNIPPET_CHARS", "PacedProvider", "Reply", "parse_xml", "query_terms"]

#: Part of the search's time kept for the request itself: a turn must start before.
_REQUEST_SHARE = 0.2
#: The wait asked for by a 429 that gives no ``Retry-After``, in intervals of the limit.
_DEFAULT_HOLD_INTERVALS = 2.0
_DEFAULT_HOLD_S = 5.0
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_ENTITY_DECLARATION = re.compile(rb"<!ENTITY", re.IGNORECASE)
_DETAIL_CHARS = 200
#: The longest snippet kept: an abstract's first few sentences (they are shown to a model).
SNIPPET_CHARS = 1000


def query_terms(query: str, most: int = 8) -> list[str]:
    """The words of ``query`` a search API should get: its key words in order (question
    and function words dropped, possessives cut), without repeats, at most ``most``."""
    out: list[str] = []
    seen: set[str] = set()
    for word in keywords(parse(query).tokens):
        word = _POSSESSIVE.sub("", word).strip(".")
        # "I" is kept by keywords() as a capitalised word (a name's); it is never one.
        if word and word != "I" and word.lower() not in seen:
            seen.add(word.lower())
            out.append(word)
    return out[:most]


def parse_xml(body: bytes) -> ET.Element:
    """An XML answer's root element; ``ProviderFailure`` for one that is not XML or that
    declares entities (nothing these APIs send: refused, so none is ever expanded)."""
    if _ENTITY_DECLARATION.search(body):
        raise ProviderFailure("invalid response (XML with entity declarations)")
    try:
        return ET.fromstring(body)
    except ET.ParseError:
        raise ProviderFailure("invalid response (not XML)") from None


@dataclass(frozen=True)
class Reply:
    """One HTTP answer, its body read (at most the provider's ``max_bytes``)."""

    status: int
    headers: httpx.Headers
    body: bytes

    def json(self) -> Any:
        """The body as JSON; ``ProviderFailure`` when it is not."""
        try:
            return json.loads(self.body)
        except ValueError:
            raise ProviderFailure("invalid response (not JSON)") from None

    def text(self) -> str:
        """The body as text (undecodable bytes replaced)."""
        return self.body.decode("utf-8", "replace")


class PacedProvider(SearchProvider):
    """A specialised service's search API, paced by its published limits.

    Subclasses set ``name``, ``service`` (its name in words), ``url_setting`` (the
    settings field holding the API's base URL) and ``limits``, and implement
    :meth:`find`. They are searched alongside the web search engines.
    """

    service: ClassVar[str]
    url_setting: ClassVar[str]
    #: The published limit without an optional key, and with one (same when no key).
    limits: ClassVar[tuple[Limit, Limit]]
    alongside = True
    #: The largest answer read (search answers are a few hundred kilobytes at most).
    max_bytes: ClassVar[int] = 4_000_000

    def __init__(
        self, settings: object, client: httpx.AsyncClient, env: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(settings, client, env)
        # Every setting these providers read is read here, from their SearchConfig.
        self.base_url = str(getattr(self.settings, self.url_setting)).rstrip("/")
        self.timeout = float(self.settings.search_timeout)
        self.lang = self.settings.lang
        self.pacer = PACER
        self._memo: dict[tuple[str, int], list[SearchHit] | ProviderFailure] = {}
        self._asking: dict[tuple[str, int], asyncio.Lock] = {}

    # -- what subclasses provide ---------------------------------------------------------

    def service_query(self, query: str) -> str:
        """What is sent to the service for ``query`` ("" sends nothing): its key words."""
        return " ".join(query_terms(query))

    async def find(self, asked: str, limit: int, deadline: float) -> list[SearchHit]:
        """The service's hits for the service query ``asked`` (see :meth:`get`)."""
        raise NotImplementedError

    def error_detail(self, reply: Reply) -> str:
        """What the service said went wrong, from an error answer's body ("" if nothing)."""
        try:
            data = json.loads(reply.body)
        except ValueError:
            text = reply.text().strip()
            is_text = reply.headers.get("content-type", "").startswith("text/plain")
            return text.splitlines()[0] if is_text and text else ""
        if isinstance(data, Mapping):
            for key in ("message", "error", "ERROR"):
                value = data.get(key)
                if isinstance(value, Mapping):
                    value = value.get("info") or value.get("message")
                if isinstance(value, str) and value.strip():
                    return value
        return ""

    def hold_for(self, reply: Reply) -> float | None:
        """Seconds the service asks to be left alone after ``reply`` (None: it does not)."""
        if reply.status == 429 or (reply.status == 503 and "retry-after" in reply.headers):
            wait = retry_after(reply.headers.get("retry-after"))
            if wait is None:
                wait = max(_DEFAULT_HOLD_S, self.limit().interval * _DEFAULT_HOLD_INTERVALS)
            return wait
        return None

    # -- the machinery -------------------------------------------------------------------

    def hit(
        self, query: str, rank: int, *, title: object, url: object, snippet: object = ""
    ) -> SearchHit | None:
        """A hit whose snippet (an abstract, an extract) is cut to :data:`SNIPPET_CHARS`."""
        text = clean_text(snippet)
        if len(text) > SNIPPET_CHARS:
            text = text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"
        return super().hit(query, rank, title=title, url=url, snippet=text)

    def pace_key(self, kind: str = "") -> str:
        """The pacing key of this provider's API (``kind``: a part with its own limit).
        Keyed by the API's URL too, so that two servers never share turns."""
        return f"{self.name}{kind}:{self.base_url}"

    def limit(self) -> Limit:
        """The limit that applies: the keyed one when an optional key is set."""
        return self.limits[1] if self.keys else self.limits[0]

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """The hits for ``query``; a service query already asked this run is not asked again
        (its answer, or its failure, is given again)."""
        asked = self.service_query(query)
        if not asked:
            return []
        key = (asked, limit)
        async with self._asking.setdefault(key, asyncio.Lock()):
            if key not in self._memo:
                deadline = self.pacer.clock() + self.timeout * (1 - _REQUEST_SHARE)
                try:
                    self._memo[key] = await self.find(asked, limit, deadline)
                except ProviderFailure as exc:
                    self._memo[key] = exc
        found = self._memo[key]
        if isinstance(found, ProviderFailure):
            raise ProviderFailure(found.reason, unreachable=found.unreachable)
        return found

    async def get(
        self,
        url: str,
        params: Mapping[str, str | int],
        *,
        deadline: float,
        headers: Mapping[str, str] | None = None,
        pace: str | None = None,
        limit: Limit | None = None,
    ) -> Reply:
        """GET ``url`` in its turn (pacing key ``pace``, default :meth:`pace_key`) and
        return a 2xx answer; a rate-limited answer is asked again once after the wait it
        asks for, when that fits before ``deadline``. ``ProviderFailure`` otherwise."""
        key, rule = pace or self.pace_key(), limit or self.limit()
        for attempt in (1, 2):
            async with self.pacer.turn(key, rule, deadline=deadline):
                reply = await self._send(url, params, headers)
            wait = self.hold_for(reply)
            if wait is None:
                break
            self.pacer.hold_off(key, wait)
            if attempt == 2 or self.pacer.clock() + wait > deadline:
                raise ProviderFailure(self.rate_reason(reply, wait))
        if not 200 <= reply.status < 300:
            raise ProviderFailure(self.status_reason(reply))
        return reply

    def rate_reason(self, reply: Reply, wait: float) -> str:
        """The failure reason for a rate-limited answer."""
        return (
            f"rate limited (HTTP {reply.status}): {self.service} asks to wait "
            f"{seconds(round(wait))}"
        )

    def status_reason(self, reply: Reply) -> str:
        """The failure reason for any other non-2xx answer, with the service's own words."""
        words = f"HTTP {reply.status} {httpx.codes.get_reason_phrase(reply.status)}".strip()
        if reply.status in (401, 403) and self.keys:
            words += f" (is {' / '.join(self.keys)} valid?)"
        return self.with_detail(words, self.error_detail(reply))

    def with_detail(self, words: str, detail: str) -> str:
        """``words``, then what the service said (one line, cut short, keys masked)."""
        said = clean_text(mask_key_params(self.redact(detail)))[:_DETAIL_CHARS]
        return f"{words}: {self.service} says “{said}”" if said else words

    async def _send(
        self, url: str, params: Mapping[str, str | int], headers: Mapping[str, str] | None
    ) -> Reply:
        # A key in a header or a parameter never follows a redirect to another host.
        follow = not self.keys
        try:
            async with self.client.stream(
                "GET", url, params=params, headers=headers, follow_redirects=follow
            ) as response:
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise ProviderFailure(
                            f"the answer is larger than {self.max_bytes // 1_000_000} MB"
                        )
                    chunks.append(chunk)
                return Reply(response.status_code, response.headers, b"".join(chunks))
        except httpx.TimeoutException:
            raise ProviderFailure(f"timed out after {seconds(self.timeout)}") from None
        except httpx.HTTPError as exc:
            detail = mask_key_params(self.redact(str(exc))) or type(exc).__name__
            raise ProviderFailure(
                f"request failed: {detail}", unreachable=isinstance(exc, httpx.ConnectError)
            ) from None
