"""The one settings table.

Every field of :class:`Settings` carries its CLI flag, its environment variable(s)
and its help text. The CLI builds its options from this table, ``load_settings``
reads the environment from it, and ``settings_markdown`` renders the docs table,
so the three can never disagree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sleuth.errors import ConfigError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _meta(
    flag: str, env: str | tuple[str, ...] | None, *, short: str | None = None
) -> dict[str, Any]:
    envs = (env,) if isinstance(env, str) else (env or ())
    return {"flag": flag, "env": list(envs), "short": short}


class Settings(BaseModel):
    """Everything a research run can be told; see ``settings_markdown()`` for the table."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    depth: int = Field(
        2,
        ge=1,
        le=3,
        description="Query breadth: 1 quick, 2 moderate, 3 thorough.",
        json_schema_extra=_meta("--depth", "SLEUTH_DEPTH"),
    )
    max_sources: int = Field(
        5,
        ge=1,
        le=50,
        description="Sources to read and cite.",
        json_schema_extra=_meta("--max-sources", "SLEUTH_MAX_SOURCES"),
    )
    search: list[str] = Field(
        default_factory=lambda: ["duckduckgo"],
        description="Search providers in fallback order, comma-separated.",
        json_schema_extra=_meta("--search", "SLEUTH_SEARCH"),
    )
    searxng_url: str | None = Field(
        None,
        description="Base URL of a SearXNG instance.",
        json_schema_extra=_meta("--searxng-url", "SLEUTH_SEARXNG_URL"),
    )
    results_per_query: int = Field(
        8,
        ge=1,
        le=50,
        description="Hits asked of a provider per query.",
        json_schema_extra=_meta("--results-per-query", "SLEUTH_RESULTS_PER_QUERY"),
    )
    format: Literal["markdown", "json"] = Field(
        "markdown",
        description="Output format.",
        json_schema_extra=_meta("--format", "SLEUTH_FORMAT"),
    )
    output: Path | None = Field(
        None,
        description="Write the report here instead of stdout.",
        json_schema_extra=_meta("--output", None, short="-o"),
    )
    allow_private_urls: bool = Field(
        False,
        description="Let URLs from searches reach loopback, private and link-local addresses.",
        json_schema_extra=_meta("--allow-private-urls", "SLEUTH_ALLOW_PRIVATE_URLS"),
    )
    fetch_engine: Literal["httpx", "playwright"] = Field(
        "httpx",
        description="How pages are fetched; playwright needs the 'browser' extra.",
        json_schema_extra=_meta("--fetch-engine", "SLEUTH_FETCH_ENGINE"),
    )
    timeout: float = Field(
        15.0,
        gt=0,
        le=600,
        description="Seconds allowed for one page, all in.",
        json_schema_extra=_meta("--timeout", "SLEUTH_TIMEOUT"),
    )
    search_timeout: float = Field(
        15.0,
        gt=0,
        le=600,
        description="Seconds allowed for one search.",
        json_schema_extra=_meta("--search-timeout", "SLEUTH_SEARCH_TIMEOUT"),
    )
    max_page_bytes: int = Field(
        5_000_000,
        ge=1024,
        description="Largest body read from one page.",
        json_schema_extra=_meta("--max-page-bytes", "SLEUTH_MAX_PAGE_BYTES"),
    )
    max_redirects: int = Field(
        5,
        ge=0,
        le=20,
        description="Redirect hops followed per page.",
        json_schema_extra=_meta("--max-redirects", "SLEUTH_MAX_REDIRECTS"),
    )
    concurrency: int = Field(
        8,
        ge=1,
        le=64,
        description="Pages fetched at once, in all.",
        json_schema_extra=_meta("--concurrency", "SLEUTH_CONCURRENCY"),
    )
    per_host_concurrency: int = Field(
        2,
        ge=1,
        le=16,
        description="Pages fetched at once from one host.",
        json_schema_extra=_meta("--per-host-concurrency", "SLEUTH_PER_HOST_CONCURRENCY"),
    )
    user_agent: str = Field(
        "",
        description="User-Agent header; empty means sleuth's own.",
        json_schema_extra=_meta("--user-agent", "SLEUTH_USER_AGENT"),
    )
    max_chars: int = Field(
        30_000,
        ge=1000,
        description="Characters of text kept per page.",
        json_schema_extra=_meta("--max-chars", "SLEUTH_MAX_CHARS"),
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

    @field_validator("searxng_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/") if value else value


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
    overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Defaults, then environment variables, then ``overrides`` (None values ignored)."""
    values = _from_env(os.environ if env is None else env)
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return Settings(**values)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc)) from None


def describe_validation_error(exc: ValidationError) -> str:
    """One line naming the first bad option as the user typed it."""
    err = exc.errors()[0]
    name = str(err["loc"][0]) if err["loc"] else "value"
    if name in Settings.model_fields:
        name = field_meta(name)["flag"]
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"invalid value for {name}: {msg}"


def settings_markdown() -> str:
    """The settings table as Markdown, for the README and ``sleuth --help-settings``."""
    rows = ["| option | environment | default | meaning |", "|---|---|---|---|"]
    for name, info in Settings.model_fields.items():
        meta = field_meta(name)
        default = info.get_default(call_default_factory=True)
        if isinstance(default, list):
            default = ",".join(default)
        shown = f"`{default}`" if default not in (None, "") else ""
        envs = ", ".join(f"`{e}`" for e in meta["env"])
        rows.append(f"| `{meta['flag']}` | {envs} | {shown} | {info.description} |")
    return "\n".join(rows)
