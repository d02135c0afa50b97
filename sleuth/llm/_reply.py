"""What a model call returns and what it cost: replies, tool calls, usage tallies, the cache key.

:mod:`sleuth.llm.client` makes the calls; these records are what it hands back and counts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from sleuth.llm.models_table import model_info
from sleuth.llm.parse import strip_think

Message = Mapping[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One function call a model asked for (OpenAI tool calling).

    ``arguments`` is the raw text the model sent, meant to be a JSON object; it is
    not parsed here because a model's broken JSON is the caller's to report.
    """

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class LLMReply:
    """One model answer and what it cost.

    ``estimated`` is True when the server reported no usage and the token counts are
    sleuth's own estimate; ``cached`` when the reply came from a :class:`ReplyCache`.
    ``tool_calls`` holds the function calls of a reply to a request made with ``tools``.
    """

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    cached: bool = False
    estimated: bool = False
    stage: str = ""
    tool_calls: tuple[ToolCall, ...] = ()

    @property
    def answer(self) -> str:
        """The text without ``<think>`` reasoning blocks."""
        return strip_think(self.text)

    @property
    def truncated(self) -> bool:
        """True when the model stopped at ``max_tokens`` rather than on its own."""
        return self.finish_reason == "length"


@dataclass
class ModelUsage:
    """Calls and tokens of one model (or one stage); cost None when the price is unknown."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_calls: int = 0
    cost_usd: float | None = None

    def add(self, reply: LLMReply) -> None:
        """Count one reply that reached the server."""
        self.calls += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.estimated_calls += reply.estimated
        cost = model_info(reply.model).cost_usd(reply.prompt_tokens, reply.completion_tokens)
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost


@dataclass
class LLMUsage:
    """Running totals of a session's model calls, for the run's stats.

    ``calls`` counts replies received from servers; ``cached_calls`` replies served
    from the cache (no tokens, no cost); ``retries`` attempts repeated after a
    retryable failure; ``failures`` calls that finally raised.
    """

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_calls: int = 0
    retries: int = 0
    failures: int = 0
    by_model: dict[str, ModelUsage] = field(default_factory=dict)
    by_stage: dict[str, ModelUsage] = field(default_factory=dict)

    def record(self, reply: LLMReply) -> None:
        """Add one reply to the totals."""
        if reply.cached:
            self.cached_calls += 1
            return
        self.calls += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.estimated_calls += reply.estimated
        self.by_model.setdefault(reply.model, ModelUsage()).add(reply)
        self.by_stage.setdefault(reply.stage or "other", ModelUsage()).add(reply)

    @property
    def cost_usd(self) -> float | None:
        """Estimated cost of the models whose price is known; None if none is."""
        known = [m.cost_usd for m in self.by_model.values() if m.cost_usd is not None]
        return sum(known) if known else None

    @property
    def cost_complete(self) -> bool:
        """True when every model used has a known price (so ``cost_usd`` is the total)."""
        return all(m.cost_usd is not None for m in self.by_model.values())

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for JSON output and the run store."""
        data = asdict(self)
        data["cost_usd"] = self.cost_usd
        data["cost_complete"] = self.cost_complete
        return data


class ReplyCache(Protocol):
    """Where replies can be kept between runs (the run store implements it)."""

    def get(self, key: str) -> LLMReply | None:
        """The reply stored under ``key``, or None."""

    def put(self, key: str, reply: LLMReply) -> None:
        """Store a reply under ``key``."""


def cache_key(
    model: str, messages: Sequence[Message], max_tokens: int | None, temperature: float
) -> str:
    """A stable key for one request: SHA-256 of its canonical JSON."""
    payload = {
        "model": model,
        "messages": [dict(m) for m in messages],
        "max_tokens": max_tokens,
        "temperature": temperature,
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
