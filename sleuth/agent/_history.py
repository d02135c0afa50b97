"""An agent search's history.jsonl: how values are clipped into it, and the state
:func:`replay` rebuilds from it (so a killed process can be resumed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import Field

from sleuth.agent.result import AgentWork
from sleuth.errors import ConfigError

#: Characters of a tool result or argument kept in history.jsonl.
HISTORY_CHARS = 2000


class RunState(AgentWork):
    """One search as it runs, kept in step with ``history.jsonl``: what it did so far
    (:class:`~sleuth.agent.result.AgentWork`), the limits it started with, the round a
    killed process left open, and the failed rounds in a row."""

    limits: dict[str, Any] = Field(default_factory=dict)
    interrupted: int | None = None
    interrupted_s: float = 0.0
    consecutive_failures: int = 0


def _tally(state: RunState, record: dict[str, Any]) -> None:
    kind = record.get("type")
    if kind == "llm":
        state.llm_calls += 1
        state.prompt_tokens += int(record.get("prompt_tokens") or 0)
        state.completion_tokens += int(record.get("completion_tokens") or 0)
    elif kind == "tool":
        state.tool_calls += 1
        if record.get("ok") and record.get("url") and record["url"] not in state.pages:
            state.pages.append(record["url"])
        if record.get("ok") and record.get("query"):
            state.queries.append(record["query"])
    elif kind == "protocol":
        state.protocol = record.get("protocol")
    elif kind == "finish":
        state.status = record.get("status")
        state.reason = record.get("reason", "")
        state.result = record.get("result", "")


def replay(records: Iterable[dict[str, Any]]) -> RunState:
    """The state a search's history describes; ConfigError when it has no start record.

    A round that was cut off (the process was killed) counts when it did anything
    (a model call or a tool call): ``interrupted`` names it. One that did nothing is
    not counted, and will be run again under the same number.
    """
    records = list(records)
    start = next((r for r in records if r.get("type") == "start"), None)
    if start is None or not isinstance(start.get("goal"), str):
        raise ConfigError(
            "this folder's history.jsonl has no start record: not an agent "
            "workspace, or it was never started"
        )
    state = RunState(
        goal=start["goal"],
        session=str(start.get("session", "default")),
        limits=dict(start.get("limits") or {}),
    )
    open_round: int | None = None
    open_t = last_t = float(start.get("t", 0.0))
    active = False
    for record in records:
        last_t = float(record.get("t", last_t))
        kind = record.get("type")
        _tally(state, record)
        if kind == "round_start":
            open_round, open_t, active = int(record["round"]), last_t, False
        elif kind in ("llm", "tool"):
            active = True
        elif kind == "round_end":
            state.rounds = max(state.rounds, int(record["round"]))
            state.elapsed_s += float(record.get("elapsed_s") or 0.0)
            failed = bool(record.get("failed"))
            state.consecutive_failures = state.consecutive_failures + 1 if failed else 0
            open_round = None
    if open_round is not None and active:
        state.interrupted = open_round
        state.rounds = max(state.rounds, open_round)
        state.interrupted_s = max(0.0, last_t - open_t)
        state.elapsed_s += state.interrupted_s
    return state


def _clip(value: Any, limit: int = HISTORY_CHARS) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + f"…[{len(value) - limit} more]"
    if isinstance(value, dict):
        return {str(k)[:100]: _clip(v, limit) for k, v in list(value.items())[:20]}
    if isinstance(value, list):
        return [_clip(v, limit) for v in value[:20]]
    return value
