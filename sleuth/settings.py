"""The one settings table.

Every field of :class:`Settings` carries its CLI flag, its environment variable(s),
its help text and which commands take it. The CLI builds its options from this table,
``load_settings`` reads the environment from it, and :mod:`sleuth.settings_docs`
renders it for ``--help`` and the docs, so the three can never disagree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sleuth import tuned

# Durations are read and shown by _duration (the store reads them too, without this table).
from sleuth._duration import format_duration as format_duration
from sleuth._duration import parse_duration as parse_duration
from sleuth.errors import ConfigError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


_DOMAIN = re.compile(r"^[a-z0-9_-]+(\.[a-z0-9_-]+)*$")


def normalize_domain(text: str) -> str:
    """``text`` as a domain-list entry: lower-case ASCII (IDNA), no ``*.`` or dots around.

    An IP address is kept as one (IPv6 without brackets). Raises ``ValueError`` for a
    URL or anything else that is not a host name.
    """
    import ipaddress

    entry = text.strip().lower().removeprefix("*.").strip(".")
    try:
        return ipaddress.ip_address(entry.strip("[]")).compressed
    except ValueError:
        pass
    try:
        entry = entry.encode("idna").decode("ascii")
    except UnicodeError:
        raise ValueError(f"{text.strip()!r} is not a domain name") from None
    if not _DOMAIN.match(entry):
        raise ValueError(f"expected a domain such as example.com, not {text.strip()!r}")
    return entry


#: Fields given as a duration (90, 30m, 12h, 7d): their defaults are shown the same way.
DURATION_FIELDS = ("cache_ttl", "max_time")


#: The commands that take the settings options (each may leave some out: ``skip``).
SETTINGS_COMMANDS = ("research", "deep", "batch", "agent", "mcp", "serve")
_DEEP_ONLY = ("agent",)  # options of the research pipeline that agent mode has no use for
_AGENT_ONLY = ("research", "deep", "batch", "serve")


def _meta(
    flag: str,
    env: str | tuple[str, ...] | None,
    *,
    short: str | None = None,
    group: str = "Research",
    common: bool = False,
    skip: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A field's CLI flag, environment variable(s), short flag, ``--help`` group (one of
    :data:`sleuth._options.HELP_GROUPS`), whether a command's short ``--help`` lists it
    (``common``; the rest are under ``--help-all``), and the commands of
    :data:`SETTINGS_COMMANDS` that do not take it (``skip``)."""
    envs = (env,) if isinstance(env, str) else (env or ())
    return {
        "flag": flag,
        "env": list(envs),
        "short": short,
        "group": group,
        "common": common,
        "skip": list(skip),
    }


class Settings(BaseModel):
    """Everything a research run can be told; the docs' CLI reference lists every field."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    depth: int = Field(
        2,
        ge=1,
        le=3,
        description="Query breadth: 1 quick, 2 moderate, 3 thorough.",
        json_schema_extra=_meta("--depth", "SLEUTH_DEPTH", common=True, skip=_DEEP_ONLY),
    )
    max_sources: int = Field(
        5,
        ge=1,
        description="Sources to read and cite (at most 50; deep mode: default 20, at most 60).",
        json_schema_extra=_meta(
            "--max-sources", "SLEUTH_MAX_SOURCES", common=True, skip=_DEEP_ONLY
        ),
    )
    mode: Literal["quick", "deep"] = Field(
        "quick",
        description="quick: one pass of searches and one report; deep: a tree of "
        "sub-questions and follow-ups, and a long report written section by "
        "section (same as 'sleuth deep').",
        json_schema_extra=_meta("--mode", "SLEUTH_MODE", common=True, skip=("deep", "agent")),
    )
    breadth: int = Field(
        4,
        ge=1,
        le=8,
        description="Deep mode: sub-questions explored at the first level (later levels "
        "explore fewer follow-ups).",
        json_schema_extra=_meta("--breadth", "SLEUTH_BREADTH", common=True, skip=_DEEP_ONLY),
    )
    levels: int = Field(
        2,
        ge=1,
        le=4,
        description="Deep mode: levels of the question tree (1: the sub-questions only; "
        "each further level explores the follow-ups the one before left open).",
        json_schema_extra=_meta("--levels", "SLEUTH_LEVELS", common=True, skip=_DEEP_ONLY),
    )
    search: list[str] = Field(
        default_factory=lambda: ["duckduckgo"],
        description="Search providers, comma-separated: web search engines in fallback "
        "order; arxiv, pubmed, semanticscholar, wikipedia, github, local and library are "
        "searched alongside them; auto adds those the question's field calls for.",
        json_schema_extra=_meta("--search", "SLEUTH_SEARCH", group="Search", common=True),
    )
    searxng_url: str | None = Field(
        None,
        description="Base URL of a SearXNG instance.",
        json_schema_extra=_meta("--searxng-url", "SLEUTH_SEARXNG_URL", group="Search", common=True),
    )
    # The specialised providers' APIs (each one's own published rate limit applies).
    arxiv_url: str = Field(
        "https://export.arxiv.org/api/query",
        description="arXiv's search API (provider 'arxiv').",
        json_schema_extra=_meta("--arxiv-url", "SLEUTH_ARXIV_URL", group="Search"),
    )
    pubmed_url: str = Field(
        "https://eutils.ncbi.nlm.nih.gov/entrez/eutils",
        description="NCBI's E-utilities (provider 'pubmed'; NCBI_API_KEY raises its rate limit).",
        json_schema_extra=_meta("--pubmed-url", "SLEUTH_PUBMED_URL", group="Search"),
    )
    semantic_scholar_url: str = Field(
        "https://api.semanticscholar.org/graph/v1",
        description="Semantic Scholar's Graph API (provider 'semanticscholar'; "
        "SEMANTIC_SCHOLAR_API_KEY optional).",
        json_schema_extra=_meta(
            "--semantic-scholar-url", "SLEUTH_SEMANTIC_SCHOLAR_URL", group="Search"
        ),
    )
    wikipedia_url: str = Field(
        "https://{lang}.wikipedia.org/w/api.php",
        description="MediaWiki API searched by provider 'wikipedia'; {lang} becomes the "
        "language of --lang, else of the question.",
        json_schema_extra=_meta("--wikipedia-url", "SLEUTH_WIKIPEDIA_URL", group="Search"),
    )
    github_url: str = Field(
        "https://api.github.com",
        description="GitHub's REST API (provider 'github'; GITHUB_TOKEN adds code search).",
        json_schema_extra=_meta("--github-url", "SLEUTH_GITHUB_URL", group="Search"),
    )
    results_per_query: int = Field(
        8,
        ge=1,
        le=50,
        description="Hits asked of a provider per query.",
        json_schema_extra=_meta("--results-per-query", "SLEUTH_RESULTS_PER_QUERY", group="Search"),
    )
    format: Literal["markdown", "json", "html"] = Field(
        "markdown",
        description="Output format: markdown, json, or html (one self-contained file).",
        json_schema_extra=_meta(
            "--format", "SLEUTH_FORMAT", group="Output", common=True, skip=("mcp", "serve")
        ),
    )
    output: Path | None = Field(
        None,
        description="Write the report here instead of stdout.",
        json_schema_extra=_meta(
            "--output",
            None,
            short="-o",
            group="Output",
            common=True,
            skip=("batch", "mcp", "serve"),
        ),
    )
    allow_private_urls: bool = Field(
        False,
        description="Let URLs from searches reach loopback, private and link-local addresses.",
        json_schema_extra=_meta(
            "--allow-private-urls", "SLEUTH_ALLOW_PRIVATE_URLS", group="Fetching"
        ),
    )
    fetch_engine: Literal["httpx", "playwright"] = Field(
        "httpx",
        description="How pages are fetched; playwright needs the 'browser' extra.",
        json_schema_extra=_meta("--fetch-engine", "SLEUTH_FETCH_ENGINE", group="Fetching"),
    )
    timeout: float = Field(
        15.0,
        gt=0,
        le=600,
        description="Seconds allowed for downloading one page, redirects included.",
        json_schema_extra=_meta("--timeout", "SLEUTH_TIMEOUT", group="Fetching"),
    )
    top_wait: float = Field(
        tuned.TOP_WAIT_S,
        ge=0,
        le=600,
        description="Once enough pages are read, seconds from the start of fetching that the "
        "best-ranked page still on its way is waited for (0: not waited for "
        "beyond the others).",
        json_schema_extra=_meta("--top-wait", "SLEUTH_TOP_WAIT", group="Fetching", skip=_DEEP_ONLY),
    )
    search_timeout: float = Field(
        15.0,
        gt=0,
        le=600,
        description="Seconds allowed for one search.",
        json_schema_extra=_meta("--search-timeout", "SLEUTH_SEARCH_TIMEOUT", group="Search"),
    )
    max_page_bytes: int = Field(
        5_000_000,
        ge=1024,
        description="Largest body read from one page.",
        json_schema_extra=_meta("--max-page-bytes", "SLEUTH_MAX_PAGE_BYTES", group="Fetching"),
    )
    max_redirects: int = Field(
        5,
        ge=0,
        le=20,
        description="Redirect hops followed per page.",
        json_schema_extra=_meta("--max-redirects", "SLEUTH_MAX_REDIRECTS", group="Fetching"),
    )
    concurrency: int = Field(
        8,
        ge=1,
        le=64,
        description="Pages fetched at once, in all.",
        json_schema_extra=_meta("--concurrency", "SLEUTH_CONCURRENCY", group="Fetching"),
    )
    per_host_concurrency: int = Field(
        2,
        ge=1,
        le=16,
        description="Pages fetched at once from one host.",
        json_schema_extra=_meta(
            "--per-host-concurrency", "SLEUTH_PER_HOST_CONCURRENCY", group="Fetching"
        ),
    )
    user_agent: str = Field(
        "",
        description="User-Agent header; empty means sleuth's own.",
        json_schema_extra=_meta("--user-agent", "SLEUTH_USER_AGENT", group="Fetching"),
    )
    host_delay: float = Field(
        0.2,
        ge=0,
        le=60,
        description="Seconds between the starts of two requests to one host (0: no wait).",
        json_schema_extra=_meta("--host-delay", "SLEUTH_HOST_DELAY", group="Fetching"),
    )
    max_pages_per_host: int = Field(
        20,
        ge=1,
        le=10_000,
        description="Pages requested from one host per run; more are skipped.",
        json_schema_extra=_meta(
            "--max-pages-per-host", "SLEUTH_MAX_PAGES_PER_HOST", group="Fetching"
        ),
    )
    respect_robots: bool = Field(
        False,
        description="Skip pages a site's robots.txt disallows for sleuth's User-Agent (off: "
        "sleuth reads pages a person asked about, as a browser does, not a crawl).",
        json_schema_extra=_meta("--respect-robots", "SLEUTH_RESPECT_ROBOTS", group="Fetching"),
    )
    allow_domains: list[str] = Field(
        default_factory=list,
        description="Fetch pages only from these domains and their subdomains, "
        "comma-separated; their private addresses are allowed too.",
        json_schema_extra=_meta("--allow-domains", "SLEUTH_ALLOW_DOMAINS", group="Fetching"),
    )
    deny_domains: list[str] = Field(
        default_factory=list,
        description="Never fetch pages from these domains or their subdomains, comma-separated.",
        json_schema_extra=_meta("--deny-domains", "SLEUTH_DENY_DOMAINS", group="Fetching"),
    )
    max_chars: int = Field(
        30_000,
        ge=1000,
        description="Characters of text kept per page.",
        json_schema_extra=_meta("--max-chars", "SLEUTH_MAX_CHARS", group="Fetching"),
    )
    extract_timeout: float = Field(
        10.0,
        gt=0,
        le=600,
        description="Seconds allowed for extracting one page's text; a page that takes "
        "longer is a gap ('too complex to extract').",
        json_schema_extra=_meta("--extract-timeout", "SLEUTH_EXTRACT_TIMEOUT", group="Fetching"),
    )
    extract_memory_mb: int = Field(
        300,
        ge=10,
        le=100_000,
        description="Memory (MB) one page's extraction may take beyond an idle worker's "
        "(enforced on Linux); a page that needs more is a gap.",
        json_schema_extra=_meta(
            "--extract-memory-mb", "SLEUTH_EXTRACT_MEMORY_MB", group="Fetching"
        ),
    )
    extract_workers: int = Field(
        2,
        ge=0,
        le=64,
        description="Worker processes that extract page text (0: in this process, "
        "without the time and memory limits).",
        json_schema_extra=_meta("--extract-workers", "SLEUTH_EXTRACT_WORKERS", group="Fetching"),
    )
    fetch_order: Literal["auto", "fastest", "rank"] = Field(
        "auto",
        description="Which pages read become sources: 'fastest' (the first read, after a "
        "short wait for the best-ranked), 'rank' (the best-ranked that can be "
        "read, waiting for each until it is read or fails: the same sources "
        "every run), 'auto' (rank in a batch, fastest for one question).",
        json_schema_extra=_meta(
            "--fetch-order", "SLEUTH_FETCH_ORDER", group="Fetching", skip=_DEEP_ONLY
        ),
    )
    quality_rules: Path | None = Field(
        None,
        description="TOML file of source-quality rules checked before the built-in ones.",
        json_schema_extra=_meta("--quality-rules", "SLEUTH_QUALITY_RULES"),
    )
    passages: int = Field(
        3,
        ge=1,
        le=20,
        description="Passages quoted per source.",
        json_schema_extra=_meta("--passages", "SLEUTH_PASSAGES"),
    )

    # --- models (any OpenAI-compatible endpoint) ---
    model: str | None = Field(
        None,
        description="Model for every LLM stage (none: the server's first model, or no LLM).",
        json_schema_extra=_meta("--model", "SLEUTH_MODEL", group="Model", common=True),
    )
    plan_model: str | None = Field(
        None,
        description="Model for planning queries and choosing results.",
        json_schema_extra=_meta("--plan-model", "SLEUTH_PLAN_MODEL", group="Model"),
    )
    summary_model: str | None = Field(
        None,
        description="Model for reading pages and checking claims.",
        json_schema_extra=_meta("--summary-model", "SLEUTH_SUMMARY_MODEL", group="Model"),
    )
    report_model: str | None = Field(
        None,
        description="Model that writes the report.",
        json_schema_extra=_meta("--report-model", "SLEUTH_REPORT_MODEL", group="Model"),
    )
    base_url: str | None = Field(
        None,
        description="OpenAI-compatible API root, e.g. http://127.0.0.1:11434/v1.",
        json_schema_extra=_meta(
            "--base-url", ("SLEUTH_BASE_URL", "OPENAI_BASE_URL"), group="Model", common=True
        ),
    )
    context_window: int | None = Field(
        None,
        ge=512,
        description="Model context in tokens; overrides sleuth's table.",
        json_schema_extra=_meta("--context-window", "SLEUTH_CONTEXT_WINDOW", group="Model"),
    )
    read_tokens: int = Field(
        2500,
        ge=0,
        description="Tokens of a page the model reads: a longer page is read as its passages "
        "most relevant to the question; 0 reads every page whole.",
        json_schema_extra=_meta("--read-tokens", "SLEUTH_READ_TOKENS", group="Model"),
    )
    summaries: Literal["auto", "always"] = Field(
        "auto",
        description="Per-page model summaries: auto (only when the sources' best passages do "
        "not fit the report model's context; else the writer reads the passages) or always.",
        json_schema_extra=_meta("--summaries", "SLEUTH_SUMMARIES", group="Model"),
    )
    select: Literal["auto", "model"] = Field(
        "auto",
        description="Which search results are read first: auto (the relevance judgement, "
        "asking the model only when the best results score close) or model (always asked).",
        json_schema_extra=_meta("--select", "SLEUTH_SELECT", group="Model"),
    )
    llm_concurrency: int = Field(
        8,
        ge=1,
        le=64,
        description="Model calls in flight at once.",
        json_schema_extra=_meta("--llm-concurrency", "SLEUTH_LLM_CONCURRENCY", group="Model"),
    )
    llm_timeout: float = Field(
        180.0,
        gt=0,
        le=3600,
        description="Seconds allowed for one model call, its whole reply and any retries included.",
        json_schema_extra=_meta("--llm-timeout", "SLEUTH_LLM_TIMEOUT", group="Model"),
    )
    no_llm: bool = Field(
        False,
        description="Never use a model, even when one is configured or Ollama is running.",
        json_schema_extra=_meta("--no-llm", "SLEUTH_NO_LLM", group="Model", common=True),
    )
    verify: Literal["lexical", "llm"] = Field(
        "lexical",
        description="How cited sentences are checked against their sources: lexical (their "
        "figures and key terms must be there) or llm (the summary model judges).",
        json_schema_extra=_meta("--verify", "SLEUTH_VERIFY", group="Model"),
    )
    words: int = Field(
        1000,
        ge=100,
        le=10000,
        description="Approximate length of an LLM-written report (deep mode: default 3000).",
        json_schema_extra=_meta("--words", "SLEUTH_WORDS", group="Model"),
    )
    lang: str | None = Field(
        None,
        description="Language of queries and report (en, zh, or a name); default: the question's.",
        json_schema_extra=_meta("--lang", "SLEUTH_LANG"),
    )
    # --- the run store ---
    home: Path | None = Field(
        None,
        description="Folder of the run store and caches; default: the user cache folder.",
        json_schema_extra=_meta("--home", "SLEUTH_HOME", group="Store", common=True),
    )
    no_store: bool = Field(
        False,
        description="Keep nothing on disk: no cache, no run record.",
        json_schema_extra=_meta("--no-store", "SLEUTH_NO_STORE", group="Store"),
    )
    refresh: bool = Field(
        False,
        description="Ignore cached searches and pages (still store the new ones).",
        json_schema_extra=_meta("--refresh", "SLEUTH_REFRESH", group="Store"),
    )
    cache_ttl: float = Field(
        86400.0,
        ge=0,
        description="How long cached searches and pages stay fresh (90, 30m, 12h, 7d).",
        json_schema_extra=_meta("--cache-ttl", "SLEUTH_CACHE_TTL", group="Store"),
    )
    docs: Path | None = Field(
        None,
        description="Research this folder of documents (search provider 'local').",
        json_schema_extra=_meta("--docs", "SLEUTH_DOCS", common=True, skip=_DEEP_ONLY),
    )
    library: bool = Field(
        False,
        description="Search the library (the pages past runs read) alongside the web, "
        "in documents mode too; it is on by default when the store holds pages, except "
        "in documents mode.",
        json_schema_extra=_meta("--library", "SLEUTH_LIBRARY", group="Store", skip=_DEEP_ONLY),
    )
    no_library: bool = Field(
        False,
        description="Do not search the library of pages past runs read.",
        json_schema_extra=_meta(
            "--no-library", "SLEUTH_NO_LIBRARY", group="Store", skip=_DEEP_ONLY
        ),
    )
    # --- budgets: when one is reached, gathering stops and the report is written ---
    max_time: float | None = Field(
        None,
        gt=0,
        description="Seconds the whole run may take, model calls included (90, 5m).",
        json_schema_extra=_meta("--max-time", "SLEUTH_MAX_TIME", group="Budgets", common=True),
    )
    max_fetches: int | None = Field(
        None,
        ge=1,
        description="Pages fetched at most.",
        json_schema_extra=_meta("--max-fetches", "SLEUTH_MAX_FETCHES", group="Budgets"),
    )
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="Model tokens (prompt + completion) at most.",
        json_schema_extra=_meta("--max-tokens", "SLEUTH_MAX_TOKENS", group="Budgets"),
    )
    max_cost: float | None = Field(
        None,
        gt=0,
        description="Estimated model cost in USD at most.",
        json_schema_extra=_meta("--max-cost", "SLEUTH_MAX_COST", group="Budgets", common=True),
    )
    # --- agent mode (sleuth agent); --max-time, --max-tokens, --max-cost apply too ---
    round_minutes: float = Field(
        30.0,
        gt=0,
        le=1440,
        description="Agent mode: minutes one round may take.",
        json_schema_extra=_meta(
            "--round-minutes",
            "SLEUTH_ROUND_MINUTES",
            group="Agent mode",
            common=True,
            skip=_AGENT_ONLY,
        ),
    )
    max_rounds: int = Field(
        20,
        ge=1,
        le=1000,
        description="Agent mode: rounds at most.",
        json_schema_extra=_meta(
            "--max-rounds", "SLEUTH_MAX_ROUNDS", group="Agent mode", common=True, skip=_AGENT_ONLY
        ),
    )
    max_tool_calls: int = Field(
        30,
        ge=1,
        le=1000,
        description="Agent mode: tool calls per round at most.",
        json_schema_extra=_meta(
            "--max-tool-calls", "SLEUTH_MAX_TOOL_CALLS", group="Agent mode", skip=_AGENT_ONLY
        ),
    )
    agent_protocol: Literal["auto", "tools", "json"] = Field(
        "auto",
        description="Agent mode: function calling, JSON actions in text, or auto (tools, "
        "else JSON).",
        json_schema_extra=_meta(
            "--agent-protocol", "SLEUTH_AGENT_PROTOCOL", group="Agent mode", skip=_AGENT_ONLY
        ),
    )

    @field_validator("search", mode="before")
    @classmethod
    def _split_search(cls, value: object) -> object:
        if isinstance(value, str):
            value = [part.strip().lower() for part in value.split(",")]
        if isinstance(value, list):
            value = [v for v in value if v]
            if not value:
                raise ValueError("name at least one search provider")
        return value

    @field_validator("allow_domains", "deny_domains", mode="before")
    @classmethod
    def _split_domains(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple):
            return [normalize_domain(str(v)) for v in value if str(v).strip()]
        return value

    @field_validator(*DURATION_FIELDS, mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return parse_duration(value)
            except ConfigError as exc:
                raise ValueError(str(exc).removeprefix("invalid duration ")) from None
        return value

    @field_validator("read_tokens")
    @classmethod
    def _read_tokens(cls, value: int) -> int:
        # A passage is up to 600 characters: a smaller budget could hold none of them.
        if 0 < value < 256:
            raise ValueError("must be 0 (read pages whole) or at least 256")
        return value

    @model_validator(mode="after")
    def _max_sources(self) -> Settings:
        # 60 sources are for deep mode's tree; one pass of searches reads 50 at most. One
        # rule for both, so that every value over the limit reads the same.
        if self.mode == "quick" and self.max_sources > QUICK_MAX_SOURCES:
            raise ValueError(
                f"max_sources: must be at most {QUICK_MAX_SOURCES} "
                f"({DEEP_MAX_SOURCES} with --mode deep)"
            )
        if self.max_sources > DEEP_MAX_SOURCES:
            raise ValueError(f"max_sources: must be at most {DEEP_MAX_SOURCES}")
        return self

    @model_validator(mode="after")
    def _library(self) -> Settings:
        if self.library and self.no_library:
            raise ValueError("library: not with --no-library")
        if self.library and self.no_store:
            raise ValueError("library: it is in the store, which --no-store leaves out")
        if "library" in self.search and self.no_store:
            raise ValueError("search: the library is in the store, which --no-store leaves out")
        return self

    @field_validator(
        "searxng_url",
        "base_url",
        "arxiv_url",
        "pubmed_url",
        "semantic_scholar_url",
        "wikipedia_url",
        "github_url",
    )
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/") if value else value

    @field_validator("output", "quality_rules", "home", "docs", mode="before")
    @classmethod
    def _non_empty_path(cls, value: object) -> object:
        # Path("") is ".": an empty value (an unset shell variable) must not mean "here".
        if isinstance(value, str) and not value.strip():
            raise ValueError("the path is empty")
        return value


#: The most sources one quick research reads, and one deep research.
QUICK_MAX_SOURCES = 50
DEEP_MAX_SOURCES = 60
#: What deep mode changes when the user did not set it: more sources, a longer report.
DEEP_DEFAULTS: dict[str, Any] = {"max_sources": 20, "words": 3000}


def mode_defaults(settings: Settings) -> Settings:
    """``settings`` with deep mode's defaults (:data:`DEEP_DEFAULTS`) for what the user
    did not set; quick settings unchanged."""
    if settings.mode != "deep":
        return settings
    unset = {k: v for k, v in DEEP_DEFAULTS.items() if k not in settings.model_fields_set}
    return settings.model_copy(update=unset) if unset else settings


def field_meta(name: str) -> dict[str, Any]:
    """The flag/env/short metadata of one settings field."""
    extra = Settings.model_fields[name].json_schema_extra
    assert isinstance(extra, dict)
    return extra


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, info in Settings.model_fields.items():
        for var in field_meta(name)["env"]:
            raw = env.get(var)
            if raw is None:
                continue
            if info.annotation is bool:
                low = raw.strip().lower()
                if low not in _TRUE | _FALSE:
                    raise ConfigError(f"{var}={raw!r}: expected 1/0, true/false, yes/no")
                values[name] = low in _TRUE
            else:
                values[name] = raw
            break
    return values


def load_settings(
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    keywords: bool = False,
) -> Settings:
    """Defaults, then environment variables, then ``overrides`` (None values ignored).

    A bad value is a :class:`ConfigError` naming its flag (``--depth``), or its keyword
    (``depth``) with ``keywords``."""
    values = _from_env(os.environ if env is None else env)
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return Settings(**values)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, keywords=keywords)) from None


def with_options(settings: Settings | None, options: Mapping[str, Any]) -> Settings:
    """``options`` (settings fields) applied over ``settings``, or over the environment when
    ``settings`` is None: how every entry point (research, agent, the web page) takes
    keyword options. What ``settings`` had set stays set; its defaults stay defaults, so
    that what a run records and what documents mode implies read the same either way.

    A bad value is a :class:`ConfigError` naming the keyword (``depth``), not the flag:
    the caller wrote Python (or JSON), not a command line."""
    if settings is None:
        return load_settings(options, keywords=True)
    if not options:
        return settings
    merged = {**settings.model_dump(exclude_unset=True), **options}
    return load_settings(merged, env={}, keywords=True)


#: pydantic's bound checks, worded as every other limit is ("must be at most 3").
_BOUNDS = {
    "less_than_equal": ("le", "must be at most {}"),
    "less_than": ("lt", "must be less than {}"),
    "greater_than_equal": ("ge", "must be at least {}"),
    "greater_than": ("gt", "must be more than {}"),
}


def describe_validation_error(exc: ValidationError, *, keywords: bool = False) -> str:
    """One line naming the first bad option as the user gave it: its flag (``--depth``),
    or with ``keywords`` its keyword argument (``depth``)."""
    err = exc.errors()[0]
    msg = str(err["msg"]).removeprefix("Value error, ")
    bound = _BOUNDS.get(str(err["type"]))
    if bound is not None and bound[0] in (err.get("ctx") or {}):
        limit = err["ctx"][bound[0]]
        msg = bound[1].format(f"{limit:g}" if isinstance(limit, float) else limit)
    name = str(err["loc"][0]) if err["loc"] else ""
    if not name:  # a rule over several options (a model validator) names its field first
        name, sep, rest = msg.partition(": ")
        if not sep or name not in Settings.model_fields:
            return f"invalid options: {msg}"
        msg = rest
    if name in Settings.model_fields:
        if not keywords:
            name = field_meta(name)["flag"]
        else:
            msg = msg.replace("--mode deep", "mode='deep'")
    return f"invalid value for {name}: {msg}"
