"""The model as one research run uses it: :class:`RunLLM`.

It wraps the run's :class:`~sleuth.llm.client.LLMClient` and adds what every LLM
stage needs: the run's token/cost budget (checked before and charged after each
call), the language and date the prompts are written for, token budgets that fail
as :class:`ContextOverflowError` (so stages fall back rather than crash), and one
place to record why a stage fell back to its no-LLM path (``Failure(stage="llm")``,
shown in the report's Gaps).

Every call ends by the run's ``--max-time`` deadline: one in flight when it passes is
cancelled and raises :class:`LLMBudgetError`, so its stage falls back as for a spent
token budget, and ``cut_by`` says so for the report's ``stopped_by``.

When the server is unreachable after every retry, or does not know the model, the
run stops asking it (``usable`` turns False) instead of paying the retries again at
every later call. An authentication error is never swallowed: it is a setting the
user must fix, and ends the run with exit code 2.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import httpx

from sleuth._extras import install_hint, missing_extra
from sleuth._tls import client_tls
from sleuth.errors import (
    ConfigError,
    ContextOverflowError,
    LLMAuthError,
    LLMBudgetError,
    LLMError,
    LLMUnavailableError,
)
from sleuth.llm.config import (
    LLMConfig,
    as_mapping,
    detect_ollama,
    ollama_config,
    ollama_url,
    resolve_config,
)
from sleuth.llm.models_table import model_info
from sleuth.llm.prompts import render_messages
from sleuth.llm.tokens import chunk_budget, count_tokens, message_tokens
from sleuth.models import Failure
from sleuth.progress import Event, ProgressCallback, no_progress

if TYPE_CHECKING:
    from pydantic import BaseModel

    from sleuth.budget import Budget
    from sleuth.llm.client import LLMClient, LLMReply, LLMUsage, ReplyCache

__all__ = ["ModelChoice", "RunLLM", "choose_model", "open_llm_client", "reply_tokens"]

NO_LLM_HINT = "set --model with --base-url (or OPENAI_BASE_URL), or OPENAI_API_KEY, or run Ollama"


def reply_tokens(words: int, window: int, *, share: int = 4) -> int:
    """Tokens to reserve for a reply of about ``words`` words in a ``window``-token context.

    Three tokens a word covers English and CJK text with room to spare; 512 more
    leave room for a short ``<think>`` block. Never more than ``1/share`` of the window,
    so small local contexts still have room for the prompt.
    """
    return max(64, min(words * 3 + 512, window // share))


class RunLLM:
    """An LLMClient with the run's budget, language and failure log; see the module doc.

    ``chat`` has the client's signature, so code written for an ``LLMClient`` works
    with a ``RunLLM`` too.
    """

    def __init__(
        self,
        client: LLMClient,
        *,
        question: str,
        language: str,
        budget: Budget | None = None,
        emit: ProgressCallback = no_progress,
        failures: list[Failure] | None = None,
        today: str | None = None,
    ) -> None:
        self.client = client
        self.question = question
        self.language = language
        self.budget = budget
        self.emit = emit
        self.failures = failures if failures is not None else []
        self.today = today or datetime.date.today().isoformat()
        self.down: str | None = None
        #: The time budget's reason once it cancelled a call in flight (else None).
        self.cut_by: str | None = None
        self._said: set[str] = set()
        # The run's own count: the client may serve other runs too (a batch shares one).
        # The client's class makes it, so that no import of openai happens here.
        self._usage: LLMUsage = type(client.usage)()
        #: Replies received so far, by the stage that asked (plan, select, summarize, ...).
        self.calls_by_stage: dict[str, int] = {}

    # -- facts -----------------------------------------------------------------------
    @property
    def usage(self) -> LLMUsage:
        """This run's model usage so far (the replies it got, cached ones included)."""
        return self._usage

    @property
    def usable(self) -> bool:
        """False once the server proved unreachable or the budget is spent."""
        return self.down is None and self.budget_reason() is None

    def model_for(self, stage: str) -> str:
        """The model ``stage`` uses."""
        return self.client.model_for(stage)

    def window(self, stage: str) -> int:
        """The context window of ``stage``'s model."""
        return self.client.context_window(stage)

    def budget_reason(self) -> str | None:
        """Why no more model calls may be made (--max-time / --max-tokens / --max-cost), or None."""
        if self.budget is None:
            return None
        time_up = self.budget.out_of_time()
        if time_up is not None:
            return time_up
        settings = self.budget.settings
        if settings.max_tokens is not None and self.budget.tokens >= settings.max_tokens:
            return f"token budget reached (--max-tokens {settings.max_tokens})"
        if settings.max_cost is not None and self.budget.cost >= settings.max_cost:
            return f"cost budget reached (--max-cost ${settings.max_cost:g})"
        return None

    # -- calls -----------------------------------------------------------------------
    async def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        stage: str,
        model: str | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.2,
        **extra: Any,
    ) -> LLMReply:
        """One model call, refused when the budget is spent, charged to it when made.

        Cancelled when ``--max-time`` passes while it is in flight (LLMBudgetError).
        ``extra`` (``tools``, ``tool_choice``) goes to ``LLMClient.chat`` unchanged.
        """
        if self.down is not None:
            raise LLMUnavailableError(self.down)
        reason = self.budget_reason()
        if reason is not None:
            raise LLMBudgetError(reason)
        deadline = asyncio.timeout(self.budget.seconds_left() if self.budget else None)
        try:
            async with deadline:
                reply = await self.client.chat(
                    messages,
                    stage=stage,
                    model=model,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    **extra,
                )
        except TimeoutError:
            if not deadline.expired() or self.budget is None:
                raise
            self.cut_by = self.budget.time_reason
            raise LLMBudgetError(self.cut_by) from None
        except LLMAuthError:
            raise
        except LLMUnavailableError as exc:
            self.down = str(exc)
            raise
        except LLMError as exc:
            if exc.status == 404:  # an unknown model fails the same way at every call
                self.down = str(exc)
            raise
        self._usage.record(reply)
        self.calls_by_stage[stage] = self.calls_by_stage.get(stage, 0) + 1
        if self.budget is not None and not reply.cached:
            cost = model_info(reply.model).cost_usd(reply.prompt_tokens, reply.completion_tokens)
            self.budget.charge_tokens(reply.prompt_tokens + reply.completion_tokens, cost)
        return reply

    async def ask(
        self, prompt: str, *, stage: str, max_tokens: int | None = None, **values: object
    ) -> LLMReply:
        """Render prompt ``prompt`` with ``values`` and ask ``stage``'s model."""
        return await self.chat(
            render_messages(prompt, **values), stage=stage, max_tokens=max_tokens
        )

    # -- token budgets ---------------------------------------------------------------
    def tokens(self, text: str, stage: str) -> int:
        """Tokens of ``text`` for ``stage``'s model."""
        return count_tokens(text, self.model_for(stage))

    def overhead(self, prompt: str, stage: str, **values: object) -> int:
        """Prompt tokens of ``prompt`` rendered with ``values`` (the variable part left empty)."""
        return message_tokens(render_messages(prompt, **values), self.model_for(stage))

    def text_budget(self, stage: str, overhead: int, reply: int, *, minimum: int = 256) -> int:
        """Tokens of data that fit one ``stage`` call next to the prompt and the reply.

        Raises ContextOverflowError (an LLMError, so the stage falls back) when the
        model's context cannot hold even ``minimum`` tokens of data.
        """
        try:
            return chunk_budget(self.window(stage), overhead, reply, minimum=minimum)
        except ConfigError as exc:
            raise ContextOverflowError(str(exc)) from None

    # -- telling the user --------------------------------------------------------------
    def fell_back(self, stage: str, error: BaseException, fallback: str) -> None:
        """Record (once per stage and reason) that ``stage`` took its no-LLM path."""
        detail = " ".join(str(error).split()) or type(error).__name__
        kind: Literal["llm", "budget"] = "budget" if isinstance(error, LLMBudgetError) else "llm"
        if not isinstance(error, LLMError | ConfigError):
            detail = f"{type(error).__name__}: {detail}"
        key = f"{stage}|{detail}"
        if key in self._said:
            return
        self._said.add(key)
        reason = f"LLM {stage}: {detail}; {fallback}"
        self.failures.append(Failure(url="", reason=reason, stage=kind))
        self.emit(Event("info", reason, {"stage": stage}))

    def info(self, message: str, **data: Any) -> None:
        """A progress line on stderr."""
        self.emit(Event("info", message, data))


# -- choosing and opening the model ----------------------------------------------------------
@dataclass(frozen=True)
class ModelChoice:
    """Which model every mode uses, and why: ``source`` is ``"no_llm"`` (``--no-llm``),
    ``"settings"`` (configured: a base URL or an API key), ``"ollama"`` (none configured,
    a local Ollama answered at ``url``) or ``"none"`` (nothing found at ``url`` either)."""

    config: LLMConfig | None
    source: Literal["no_llm", "settings", "ollama", "none"]
    url: str | None = None
    #: The model Ollama serves (``--model``, else the first one it has pulled).
    model: str | None = None

    @property
    def explicit(self) -> bool:
        """Whether the user configured the model (a missing SDK is then an error)."""
        return self.source == "settings"


async def choose_model(
    settings: Mapping[str, Any] | BaseModel, env: Mapping[str, str] | None = None
) -> ModelChoice:
    """The model configuration for ``settings`` (the settings table, or a mapping of its
    model fields): the one function every mode asks.

    ``--no-llm`` wins; then the settings (:func:`resolve_config`: ``--base-url``,
    ``--model``, ... and ``OPENAI_API_KEY``); with nothing configured, a local Ollama
    (``OLLAMA_HOST`` or its default port) that has a model pulled, with the settings'
    per-stage models, concurrency, timeout and ``--context-window`` (else Ollama's own
    context, ``OLLAMA_CONTEXT_LENGTH`` or its default). Says nothing: callers tell the
    user what it means for them.
    """
    env = os.environ if env is None else env
    values = as_mapping(settings)
    if values.get("no_llm"):
        return ModelChoice(None, "no_llm")
    config = resolve_config(values, env)
    if config is not None:
        return ModelChoice(config, "settings")
    url = ollama_url(env)
    async with httpx.AsyncClient(trust_env=False, **client_tls(trust_env=False)) as http:
        found = await detect_ollama(http, url)
    if found is None:
        return ModelChoice(None, "none", url)
    overrides: dict[str, Any] = {
        "plan_model": values.get("plan_model"),
        "summary_model": values.get("summary_model"),
        "report_model": values.get("report_model"),
        "max_concurrency": values["llm_concurrency"],
        "timeout": values["llm_timeout"],
    }
    if values.get("context_window") is not None:
        overrides["context_window"] = values["context_window"]
    model = values.get("model") or found
    return ModelChoice(ollama_config(model, url=url, env=env, **overrides), "ollama", url, model)


def _announce(choice: ModelChoice, emit: ProgressCallback) -> None:
    """Say on stderr (``info`` events) which model a research uses, or that none runs."""
    if choice.source == "no_llm":
        emit(Event("info", "--no-llm: the no-LLM pipeline runs (quoted passages, no model)"))
    elif choice.source == "none":
        emit(
            Event(
                "info",
                f"no model configured ({NO_LLM_HINT}): the no-LLM pipeline runs "
                "(quoted passages, no model)",
                {"llm": None},
            )
        )
    elif choice.source == "ollama":
        emit(
            Event(
                "info",
                f"no model configured; Ollama answers at {choice.url}: using its "
                f"model {choice.model!r}",
                {"llm": "ollama", "url": choice.url, "model": choice.model},
            )
        )


def _describe(client: LLMClient) -> str:
    config = client.config
    stages = {stage: client.model_for(stage) for stage in ("plan", "summarize", "report")}
    default = client.model_for("")
    extra = ", ".join(f"{stage}: {m}" for stage, m in stages.items() if m != default)
    return (
        f"LLM: model {default!r} at {client.server}"
        + (f" ({extra})" if extra else "")
        + (f", {config.context_window}-token context" if config.context_window else "")
    )


@asynccontextmanager
async def open_llm_client(
    settings: Mapping[str, Any] | BaseModel,
    *,
    emit: ProgressCallback = no_progress,
    failures: list[Failure] | None = None,
    cache: ReplyCache | None = None,
    env: Mapping[str, str] | None = None,
    on_chosen: Callable[[], Awaitable[None] | None] | None = None,
) -> AsyncIterator[LLMClient | None]:
    """The model's client for research, or None for the no-LLM pipeline; closed on exit.

    ``cache`` is handed to ``LLMClient(cache=...)`` (the run store's reply cache).
    ``on_chosen`` is called once a model is chosen, before the client's module (and the
    OpenAI SDK, about 0.3 s of CPU) is imported, in a thread: what it starts (the
    question's search) runs while the SDK loads. When it returns an awaitable, the import
    starts once that is done (the search's request is out: the import thread would take
    the interpreter's lock from the search on its way).
    A configured server that cannot be reached, or lists no model, means the
    no-LLM pipeline, with the reason in ``failures`` (the report's Gaps); a refused key
    raises :class:`~sleuth.errors.LLMAuthError`. Wrap the client in a :class:`RunLLM`
    for each run that uses it.
    """
    failures = failures if failures is not None else []
    choice = await choose_model(settings, env)
    _announce(choice, emit)
    config, explicit = choice.config, choice.explicit
    if config is None:
        yield None
        return
    started = on_chosen() if on_chosen is not None else None
    if started is not None:
        await started
    try:
        await asyncio.to_thread(importlib.import_module, "sleuth.llm.client")
        from sleuth.llm.client import LLMClient
    except ImportError:
        if explicit:
            raise missing_extra("llm", "openai", "a configured model") from None
        emit(
            Event(
                "info",
                f"the openai package is missing ({install_hint('llm')}): the no-LLM pipeline runs",
            )
        )
        yield None
        return
    async with LLMClient(config, progress=emit, cache=cache) as client:
        usable: LLMClient | None = client
        try:
            await client.resolve_model()
            emit(Event("info", _describe(client), {"llm": client.server}))
        except LLMAuthError:
            raise
        except (LLMError, ConfigError) as exc:
            reason = f"LLM unavailable: {exc}; the no-LLM pipeline ran"
            failures.append(Failure(url="", reason=reason, stage="llm"))
            emit(Event("info", reason))
            usable = None
        yield usable
