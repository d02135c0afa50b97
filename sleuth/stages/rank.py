"""Stage 3, rank: merge duplicate hits, score them, prefer sources from several sites.

A candidate's score is::

    2 × frequency  +  quality score  +  2 / best rank

where frequency is the number of distinct queries whose results held the URL
(after canonicalisation), the quality score comes from the tier table
(``sleuth/data/quality.toml``, extendable by the user), and best rank is its
highest position in any provider's answer. A candidate then loses
:data:`SAME_SITE` for each better one of its own registered domain, so the report hears
from several sites when they have as much to say; but a site's further pages stay in
the ranking, and when they are the ones on topic (an encyclopedia's pages on each of a
question's names) the relevance gate keeps them over other sites' off-topic pages.

Local documents (``file://`` URLs from ``--docs``) are each their own "site" for
that rule, and rank as PRIMARY, score 4: they are the material the user chose to
research, just below the best web sources (5).
"""

from __future__ import annotations

import ipaddress
import os
import stat
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path

from sleuth import tuned
from sleuth.errors import ConfigError
from sleuth.models import Candidate, Quality, SearchHit
from sleuth.urls import canonicalize, host_of, registered_domain

DEFAULT_SCORE = 2
#: What a candidate loses for each better-scored candidate of its own site: a second
#: page of a site ranks below a first page of another unless it scores this much more.
SAME_SITE = tuned.SAME_SITE
#: Tier and score of a local document (see the module docstring).
LOCAL_TIER = (Quality.PRIMARY, 4)


@dataclass(frozen=True)
class QualityRule:
    """One row of the tier table; a URL matches when any of its keys match."""

    tier: Quality
    score: int
    domains: frozenset[str] = field(default_factory=frozenset)
    hosts: frozenset[str] = field(default_factory=frozenset)
    suffixes: frozenset[str] = field(default_factory=frozenset)
    labels: frozenset[str] = field(default_factory=frozenset)

    def matches(self, host: str, domain: str, suffix: str) -> bool:
        """Whether a parsed URL falls under this rule (exact parts, never substrings)."""
        if domain in self.domains or suffix in self.suffixes:
            return True
        if any(host == h or host.endswith("." + h) for h in self.hosts):
            return True
        first = host.split(".", 1)[0]
        return bool(self.labels) and first in self.labels and host != domain


def _parse_rules(text: str, origin: str) -> list[QualityRule]:
    try:
        raw = tomllib.loads(text).get("rule", [])
        return [
            QualityRule(
                tier=Quality(str(item["tier"]).upper()),
                score=int(item["score"]),
                **{
                    key: frozenset(str(v).lower() for v in item.get(key, []))
                    for key in ("domains", "hosts", "suffixes", "labels")
                },
            )
            for item in raw
        ]
    except (tomllib.TOMLDecodeError, KeyError, ValueError, TypeError) as exc:
        raise ConfigError(f"quality rules {origin}: {exc}") from None


@cache
def builtin_rules() -> tuple[QualityRule, ...]:
    """The tier table that ships with sleuth."""
    text = files("sleuth").joinpath("data/quality.toml").read_text(encoding="utf-8")
    return tuple(_parse_rules(text, "(built-in)"))


#: Largest quality-rules file read (the built-in table is about 10 KB).
MAX_RULES_BYTES = 1 << 20


def _read_rules(path: Path) -> str:
    """The text of a rules file: a regular file of at most MAX_RULES_BYTES, opened so that
    a FIFO or a device in its place is refused at once, never read (it is read where the
    run starts, on its event loop: a FIFO would hang it, /dev/zero never end)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ConfigError(f"cannot read quality rules {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"cannot read quality rules {path}: not a regular file")
        data = handle.read(MAX_RULES_BYTES + 1)
    if len(data) > MAX_RULES_BYTES:
        raise ConfigError(f"quality rules {path}: larger than {MAX_RULES_BYTES >> 20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"quality rules {path}: not UTF-8 text (byte {exc.start})") from None


def load_rules(extra: Path | None = None) -> tuple[QualityRule, ...]:
    """The user's rules (checked first), then the built-in table."""
    if extra is None:
        return builtin_rules()
    return (*_parse_rules(_read_rules(extra), str(extra)), *builtin_rules())


def _suffix(host: str, domain: str) -> str:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return ""
    except ValueError:
        return domain.split(".", 1)[1] if "." in domain else ""


def classify(url: str, rules: tuple[QualityRule, ...] | None = None) -> tuple[Quality, int]:
    """The tier and score of a URL under ``rules`` (default: the built-in table)."""
    if _is_local(url):
        return LOCAL_TIER
    host = host_of(url)
    domain = registered_domain(url)
    suffix = _suffix(host, domain)
    for rule in rules if rules is not None else builtin_rules():
        if rule.matches(host, domain, suffix):
            return rule.tier, rule.score
    return Quality.UNVERIFIED, DEFAULT_SCORE


def _is_local(url: str) -> bool:
    return url.strip()[:7].lower() == "file://"


def diversity_key(url: str) -> str:
    """What "one source per site" counts: the registered domain, or a local file itself."""
    return canonicalize(url) if _is_local(url) else registered_domain(url)


@dataclass
class _Group:
    url: str
    title: str
    snippet: str
    best_rank: int
    queries: list[str]
    providers: list[str]


def _merge(hits: list[SearchHit]) -> dict[str, _Group]:
    groups: dict[str, _Group] = {}
    for hit in hits:
        key = canonicalize(hit.url)
        group = groups.get(key)
        if group is None:
            groups[key] = _Group(
                hit.url, hit.title, hit.snippet, hit.rank, [hit.query], [hit.provider]
            )
            continue
        group.best_rank = min(group.best_rank, hit.rank)
        if hit.query not in group.queries:
            group.queries.append(hit.query)
        if hit.provider not in group.providers:
            group.providers.append(hit.provider)
        if len(hit.snippet) > len(group.snippet):
            group.snippet = hit.snippet
        if not group.title.strip():
            group.title = hit.title
    return groups


def rank(hits: list[SearchHit], rules: tuple[QualityRule, ...] | None = None) -> list[Candidate]:
    """Merge, score and diversify hits; best candidate first, each site's later pages
    lowered by :data:`SAME_SITE` per better page of the same site."""
    scored: list[Candidate] = []
    for key, group in _merge(hits).items():
        tier, quality = classify(group.url, rules)
        frequency = len(group.queries)
        score = 2.0 * frequency + quality + 2.0 / group.best_rank
        scored.append(
            Candidate(
                url=group.url,
                canonical_url=key,
                domain=diversity_key(group.url),
                title=group.title or group.url,
                snippet=group.snippet,
                quality=tier,
                quality_score=quality,
                frequency=frequency,
                score=round(score, 3),
                queries=group.queries,
                providers=group.providers,
            )
        )
    scored.sort(key=lambda c: (-c.score, c.canonical_url))
    seen: Counter[str] = Counter()
    for n, candidate in enumerate(scored):
        lowered = candidate.score - SAME_SITE * seen[candidate.domain]
        seen[candidate.domain] += 1
        scored[n] = candidate.model_copy(update={"score": round(lowered, 3)})
    scored.sort(key=lambda c: (-c.score, c.canonical_url))
    return scored
