"""The LLM layer: configuration, the chat client, token budgets, prompts and reply parsers.

Everything a pipeline stage needs to use a model::

    from sleuth.llm import LLMClient, resolve_config, render_messages, expect_list

    config = resolve_config(settings)            # None: no LLM configured
    async with LLMClient(config) as llm:
        reply = await llm.chat(render_messages("plan", ...), stage="plan")
        queries = expect_list(reply.text, what="queries")   # ParseError if none

The openai SDK is imported only by :mod:`sleuth.llm.client`, which this package
loads lazily, so the rest works without the ``llm`` extra installed.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from sleuth.errors import (
    ContextOverflowError,
    LLMAuthError,
    LLMBudgetError,
    LLMError,
    LLMUnavailableError,
    ParseError,
    PromptError,
)
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

_LAZY = {"LLMClient", "LLMReply", "LLMUsage", "ReplyCache"}

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
    from sleuth.llm.client import LLMClient, LLMReply, LLMUsage, ReplyCache


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'sleuth.llm' has no attribute {name!r}")
    value = getattr(import_module("sleuth.llm.client"), name)
    globals()[name] = value
    return value
