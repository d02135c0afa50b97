"""Which model server to use, with which models: ``LLMConfig`` and how it is resolved.

The values come from the settings (the CLI flags, and the ``SLEUTH_*``/``OPENAI_BASE_URL``
variables the settings table reads: :func:`sleuth.settings.load_settings`). The API key
is only ever read from the environment (``OPENAI_API_KEY``), here: a flag would show it
in ``ps`` and shell history, so it is not a setting.

With neither a base URL nor a key there is no LLM; the caller may then look for a
local Ollama (:func:`detect_ollama`) and use :func:`ollama_config`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from sleuth.errors import ConfigError

__all__ = [
    "DEFAULT_OPENAI_MODEL",
    "OLLAMA_URL",
    "STAGE_MODELS",
    "LLMConfig",
    "detect_ollama",
    "ollama_config",
    "ollama_url",
    "resolve_config",
]

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
OLLAMA_URL = "http://127.0.0.1:11434"
#: Ollama's context when OLLAMA_CONTEXT_LENGTH is unset (4096 in recent releases; some
#: older ones used 2048). Longer prompts are cut silently, so sleuth must not exceed it.
OLLAMA_DEFAULT_CONTEXT = 4096

#: Which per-stage model field each pipeline stage uses (others use ``model``).
STAGE_MODELS: dict[str, str] = {
    "plan": "plan_model",
    "refine": "plan_model",
    "select": "plan_model",
    "subquestions": "plan_model",
    "learn": "plan_model",
    "summarize": "summary_model",
    "merge": "summary_model",
    "verify": "summary_model",
    "report": "report_model",
    "outline": "report_model",
    "section": "report_model",
    "frame": "report_model",
}

# The settings keys read, and the LLMConfig field each sets. Only these: Settings has
# other fields (its ``timeout`` is the page timeout) that must not leak in.
_SETTINGS_KEYS = {
    "base_url": "base_url",
    "model": "model",
    "plan_model": "plan_model",
    "summary_model": "summary_model",
    "report_model": "report_model",
    "context_window": "context_window",
    "llm_concurrency": "max_concurrency",
    "llm_timeout": "timeout",
    "llm_retries": "max_retries",
}


class LLMConfig(BaseModel):
    """How to reach the model server and which models to ask."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible API root, e.g. http://127.0.0.1:11434/v1; "
        "None means api.openai.com.",
    )
    api_key: SecretStr | None = Field(
        default=None, description="Bearer key; None for keyless servers."
    )
    model: str | None = Field(default=None, description="Default model; None: ask the server.")
    plan_model: str | None = Field(default=None, description="Model for plan, refine and select.")
    summary_model: str | None = Field(
        default=None, description="Model for summarize, merge and verify."
    )
    report_model: str | None = Field(default=None, description="Model for the report.")
    context_window: int | None = Field(
        default=None, ge=512, description="Context window; overrides the models table."
    )
    max_concurrency: int = Field(
        default=8, ge=1, le=64, description="Model calls in flight at once."
    )
    timeout: float = Field(
        default=180.0, gt=0, le=3600, description="Seconds allowed for one call."
    )
    max_retries: int = Field(
        default=4, ge=0, le=10, description="Retries after a retryable failure."
    )
    backoff_base: float = Field(default=1.0, ge=0, le=60, description="First retry delay, seconds.")
    backoff_cap: float = Field(
        default=30.0, ge=0, le=600, description="Longest computed retry delay, seconds."
    )
    retry_after_cap: float = Field(
        default=60.0, ge=0, le=3600, description="Longest Retry-After wait honoured, seconds."
    )

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("model", "plan_model", "summary_model", "report_model")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    def model_for(self, stage: str) -> str | None:
        """The model a pipeline stage uses: its per-stage override, else ``model``."""
        field = STAGE_MODELS.get(stage)
        override = getattr(self, field) if field else None
        return override or self.model


def as_mapping(settings: Mapping[str, Any] | BaseModel | None) -> dict[str, Any]:
    """``settings`` (the settings table, or any mapping of its fields) as a dict."""
    if settings is None:
        return {}
    if isinstance(settings, BaseModel):
        return settings.model_dump()
    return dict(settings)


def resolve_config(
    settings: Mapping[str, Any] | BaseModel | None = None, env: Mapping[str, str] | None = None
) -> LLMConfig | None:
    """The LLM configuration from settings values and the API key, or None.

    ``settings`` is a mapping (or a pydantic model such as ``Settings``) that may hold
    ``model``, ``plan_model``, ``summary_model``, ``report_model``, ``context_window``,
    ``llm_concurrency``, ``llm_timeout``, ``llm_retries``, ``base_url`` and ``no_llm``;
    None values and unknown keys are ignored. ``env`` gives ``OPENAI_API_KEY`` (default:
    the environment); the other variables come through the settings. Returns None when
    ``no_llm`` is true, or when neither a base URL nor an API key is known (no server to
    talk to). With only a key, the model defaults to ``DEFAULT_OPENAI_MODEL``. Bad values
    raise ConfigError.
    """
    values = as_mapping(settings)
    env = os.environ if env is None else env
    if values.get("no_llm"):
        return None
    fields: dict[str, Any] = {}
    for key, name in _SETTINGS_KEYS.items():
        if values.get(key) is not None:
            fields[name] = values[key]
    key = env.get("OPENAI_API_KEY", "").strip()
    if key:
        fields["api_key"] = key
    if not fields.get("base_url") and not key:
        return None
    if not fields.get("base_url") and not fields.get("model"):
        fields["model"] = DEFAULT_OPENAI_MODEL
    try:
        return LLMConfig(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(part) for part in err["loc"]) or "LLM setting"
        raise ConfigError(
            f"invalid {where}: {str(err['msg']).removeprefix('Value error, ')}"
        ) from None


def ollama_url(env: Mapping[str, str] | None = None) -> str:
    """Where Ollama listens: ``OLLAMA_HOST`` read as Ollama reads it, or the default.

    ``OLLAMA_HOST`` may lack the scheme or the port: without a scheme the port
    defaults to 11434, with one to 80/443. A bind-everything address (``0.0.0.0``)
    is reached on loopback.
    """
    raw = (os.environ if env is None else env).get("OLLAMA_HOST", "").strip()
    if not raw:
        return OLLAMA_URL
    scheme, sep, rest = raw.partition("://")
    if not sep:
        scheme, rest, default_port = "http", raw, "11434"
    else:
        default_port = {"http": "80", "https": "443"}.get(scheme, "11434")
    rest = rest.split("/", 1)[0]
    if rest.startswith("["):  # IPv6 literal: [::1]:11434
        host, _, tail = rest.partition("]")
        host, port = host + "]", tail.removeprefix(":")
    else:
        host, _, port = rest.partition(":")
    if host in ("", "0.0.0.0", "[::]"):
        host = "127.0.0.1"
    return f"{scheme}://{host}:{port or default_port}"


def ollama_config(
    model: str, *, url: str = OLLAMA_URL, env: Mapping[str, str] | None = None, **overrides: Any
) -> LLMConfig:
    """A config for a local Ollama: its OpenAI-compatible API, keyless, with its context.

    The context window is ``OLLAMA_CONTEXT_LENGTH`` (or ``OLLAMA_DEFAULT_CONTEXT``)
    unless ``overrides`` give one, because Ollama serves every model with that
    context whatever the model could do, and cuts longer prompts silently.
    """
    env = os.environ if env is None else env
    raw = env.get("OLLAMA_CONTEXT_LENGTH", "").strip()
    context = int(raw) if raw.isdigit() and int(raw) >= 512 else OLLAMA_DEFAULT_CONTEXT
    fields: dict[str, Any] = {"context_window": context, **overrides}
    return LLMConfig(base_url=f"{url.rstrip('/')}/v1", model=model, **fields)


async def detect_ollama(
    client: httpx.AsyncClient,
    url: str = OLLAMA_URL,
    *,
    timeout: float = 0.5,  # noqa: ASYNC109 (an httpx request timeout)
) -> str | None:
    """The first model a local Ollama has pulled, or None. Never raises.

    Asks ``<url>/api/tags`` with a short timeout, so a machine without Ollama costs
    at most ``timeout`` seconds (a refused connection costs almost nothing).
    """
    try:
        response = await client.get(f"{url.rstrip('/')}/api/tags", timeout=timeout)
        if response.status_code != 200:
            return None
        models = response.json().get("models")
        for entry in models if isinstance(models, list) else []:
            name = entry.get("name") or entry.get("model") if isinstance(entry, dict) else None
            if isinstance(name, str) and name.strip():
                return name.strip()
    except Exception:  # autodetection is best effort: any failure means "no Ollama"
        return None
    return None
