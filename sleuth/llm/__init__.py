"""The LLM layer: configuration, the chat client, token budgets, prompts and reply parsers.

Everything a pipeline stage needs to use a model::

    from sleuth.llm import LLMClient, resolve_config, render_messages, expect_list

    config = resolve_config(settings)            # None: no LLM configured
    async with LLMClient(config) as llm:
        reply = await llm.chat(render_messages("plan", ...), stage="plan")
        queries = expect_list(reply.text, what="queries")   # ParseError if none

Every name is loaded lazily: importing the package (or :mod:`sleuth.errors`) loads
neither httpx, pydantic nor the openai SDK. The SDK is imported only by
:mod:`sleuth.llm.client`, so the rest works without the ``llm`` extra installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleuth._lazy import lazy_exports

# Every name loads on first use: ``import sleuth.llm`` (and so any submodule import)
# costs nothing until a model is really wanted; httpx, pydantic and the openai SDK
# come with the module that needs them.
_EXPORTS = {
    "LLMClient": "sleuth.llm.client",
    "LLMReply": "sleuth.llm.client",
    "LLMUsage": "sleuth.llm.client",
    "ReplyCache": "sleuth.llm.client",
    "LLMConfig": "sleuth.llm.config",
    "detect_ollama": "sleuth.llm.config",
    "ollama_config": "sleuth.llm.config",
    "ollama_url": "sleuth.llm.config",
    "resolve_config": "sleuth.llm.config",
    "ContextOverflowError": "sleuth.errors",
    "LLMAuthError": "sleuth.errors",
    "LLMBudgetError": "sleuth.errors",
    "LLMError": "sleuth.errors",
    "LLMUnavailableError": "sleuth.errors",
    "ParseError": "sleuth.errors",
    "PromptError": "sleuth.errors",
    "expect_indices": "sleuth.llm.parse",
    "expect_list": "sleuth.llm.parse",
    "expect_verdict": "sleuth.llm.parse",
    "is_empty_answer": "sleuth.llm.parse",
    "is_not_relevant": "sleuth.llm.parse",
    "parse_indices": "sleuth.llm.parse",
    "parse_list": "sleuth.llm.parse",
    "parse_verdict": "sleuth.llm.parse",
    "strip_think": "sleuth.llm.parse",
    "render": "sleuth.llm.prompts",
    "render_messages": "sleuth.llm.prompts",
    "chunk_budget": "sleuth.llm.tokens",
    "chunk_text": "sleuth.llm.tokens",
    "context_window": "sleuth.llm.tokens",
    "count_tokens": "sleuth.llm.tokens",
}

__all__ = [
    "ContextOverflowError",
    "LLMAuthError",
    "LLMBudgetError",
    "LLMClient",
    "LLMConfig",
    "LLMError",
    "LLMReply",
    "LLMUnavailableError",
    "LLMUsage",
    "ParseError",
    "PromptError",
    "ReplyCache",
    "chunk_budget",
    "chunk_text",
    "context_window",
    "count_tokens",
    "detect_ollama",
    "expect_indices",
    "expect_list",
    "expect_verdict",
    "is_empty_answer",
    "is_not_relevant",
    "ollama_config",
    "ollama_url",
    "parse_indices",
    "parse_list",
    "parse_verdict",
    "render",
    "render_messages",
    "resolve_config",
    "strip_think",
]

if TYPE_CHECKING:
    from sleuth.errors import (
        ContextOverflowError,
        LLMAuthError,
        LLMBudgetError,
        LLMError,
        LLMUnavailableError,
        ParseError,
        PromptError,
    )
    from sleuth.llm.client import LLMClient, LLMReply, LLMUsage, ReplyCache
    from sleuth.llm.config import (
        LLMConfig,
        detect_ollama,
        ollama_config,
        ollama_url,
        resolve_config,
    )
    from sleuth.llm.parse import (
        expect_indices,
        expect_list,
        expect_verdict,
        is_empty_answer,
        is_not_relevant,
        parse_indices,
        parse_list,
        parse_verdict,
        strip_think,
    )
    from sleuth.llm.prompts import render, render_messages
    from sleuth.llm.tokens import chunk_budget, chunk_text, context_window, count_tokens


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return [*__all__, "client", "config", "models_table", "parse", "prompts", "run", "tokens"]
