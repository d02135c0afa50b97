"""Rounds, limits and exits of an agent search.

Each round is a fresh conversation: a system prompt and one task message carrying
the goal, the dashboard, the round number and the time used and left. The model
acts through tools until it replies without a tool call (the round ends), runs
out of tool calls or time for the round, or ends the search.

The search ends — these are the exits, all of them, and each is tested:

* ``finished``: the model called ``all_finished(result)`` (the whole search ends,
  not just the round; calls after it in the same reply are not run);
* ``dashboard_complete``: after a reply's tool calls, the dashboard carries the
  completion marker (:func:`sleuth.agent.dashboard.is_complete`);
* ``max_rounds``: ``--max-rounds`` rounds have run;
* ``time_limit``: ``--max-time`` (total, across resumes) is used up;
* ``budget``: ``--max-tokens`` or ``--max-cost`` is spent;
* ``failed``: :data:`MAX_CONSECUTIVE_FAILURES` rounds in a row failed, or the
  server refused the credentials.

A round fails when the model call fails (after the client's retries), a tool
crashes, the model makes no tool call at all, or the round runs out of time
without having updated the dashboard. The failure is noted in the dashboard and
the next round starts.

Everything is written to ``history.jsonl`` as it happens, so a killed process can
be resumed (:func:`replay` rebuilds the counters from it).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sleuth._format import duration
from sleuth.agent._context import ContextFitting, _ContextFull
from sleuth.agent._history import HISTORY_CHARS as HISTORY_CHARS  # re-exported
from sleuth.agent._history import RunState, _clip, _tally, replay
from sleuth.agent.dashboard import DASHBOARD_MAX_CHARS, Dashboard
from sleuth.agent.result import clean_text
from sleuth.agent.tools import (
    NATIVE_PROTOCOL,
    Action,
    Toolbox,
    ToolCrash,
    ToolResult,
    json_protocol,
    parse_json_action,
    tool_definitions,
    wrap_result,
)
from sleuth.agent.workspace import DASHBOARD, Workspace
from sleuth.errors import (
    ConfigError,
    ContextOverflowError,
    LLMAuthError,
    LLMError,
    LLMUnreachableError,
)
from sleuth.llm.client import LLMClient, LLMReply
from sleuth.llm.prompts import render_messages
from sleuth.progress import Event, ProgressCallback
from sleuth.settings import Settings

__all__ = ["MAX_CONSECUTIVE_FAILURES", "AgentLoop", "RunState", "replay"]

MAX_CONSECUTIVE_FAILURES = 3
_NEXT_JSON = "\nReply with your next action: exactly one JSON object."
_FAILED_OUTCOMES = frozenset({"error", "no_action"})


@dataclass
class _Round:
    number: int
    limit_s: float
    calls: int = 0
    outcome: str = "ended"
    detail: str = ""
    result: str = ""
    dashboard_updated: bool = False
    fatal: bool = False


def _short_args(name: str, raw: Any) -> str:
    try:
        args = json.loads(raw) if isinstance(raw, str) else dict(raw or {})
    except (ValueError, TypeError):
        return str(raw)[:80]
    if not isinstance(args, dict):
        return ""
    key = {"search": "query", "browse": "url", "file": "path"}.get(name)
    if name == "file":
        return f"{args.get('operation', '?')} {args.get('path', '')}"
    if key:
        return str(args.get(key, ""))[:120]
    return ""


def _tools_unsupported(exc: LLMError) -> bool:
    """Whether a failed first request with ``tools`` suggests the model lacks function calling."""
    if isinstance(exc, ContextOverflowError | LLMAuthError) or exc.retryable:
        return False
    return exc.status in (400, 404, 422, 501) or "tool" in str(exc).lower()


class AgentLoop(ContextFitting):
    """Runs rounds until an exit; see the module docstring for the exits."""

    def __init__(
        self,
        *,
        state: RunState,
        settings: Settings,
        workspace: Workspace,
        dashboard: Dashboard,
        toolbox: Toolbox,
        llm: LLMClient,
        model: str,
        context_window: int,
        emit: ProgressCallback,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = state
        self.settings = settings
        self.workspace = workspace
        self.dashboard = dashboard
        self.toolbox = toolbox
        self.llm = llm
        self.model = model
        self.window = context_window
        self.emit = emit
        self.clock = clock
        self.reply_tokens = min(4096, max(512, context_window // 4))
        chosen = settings.agent_protocol
        self.protocol = state.protocol or ("json" if chosen == "json" else "tools")
        self._may_fall_back = chosen == "auto" and state.protocol is None
        self._t0 = clock()
        self._elapsed0 = state.elapsed_s
        self._definitions = tool_definitions()
        self._definition_tokens: int | None = None

    # -- time and budgets ----------------------------------------------------------------
    def elapsed(self) -> float:
        """Seconds of work so far, earlier processes included."""
        return self._elapsed0 + (self.clock() - self._t0)

    def time_left(self) -> float | None:
        """Seconds left under ``--max-time``; None without a total limit."""
        if self.settings.max_time is None:
            return None
        return max(0.0, self.settings.max_time - self.elapsed())

    def _budget_spent(self) -> str | None:
        s = self.settings
        tokens = self.state.prompt_tokens + self.state.completion_tokens
        if s.max_tokens is not None and tokens >= s.max_tokens:
            return f"the token budget is spent (--max-tokens {s.max_tokens:,}; used {tokens:,})"
        cost = self.llm.usage.cost_usd
        if s.max_cost is not None and cost is not None and cost >= s.max_cost:
            return f"the cost budget is spent (--max-cost ${s.max_cost:g})"
        return None

    def _record(self, kind: str, **fields: Any) -> None:
        record = {"type": kind, "t": round(time.time(), 3), **fields}
        self.workspace.append_history(record)
        _tally(self.state, record)

    def _save_dashboard(self) -> None:
        self.workspace.write_text(DASHBOARD, self.dashboard.text)

    # -- the loop --------------------------------------------------------------------------
    async def run(self) -> tuple[str, str, str]:
        """Run rounds until an exit; returns (status, reason, result)."""
        if self.state.interrupted is not None:
            n = self.state.interrupted
            self.dashboard.note(f"round {n} was interrupted (the process stopped); resumed")
            self._save_dashboard()
            self._record(
                "round_end",
                round=n,
                outcome="interrupted",
                failed=False,
                elapsed_s=round(self.state.interrupted_s, 3),
                detail="the process stopped during this round",
            )
            self.state.interrupted = None
        while True:
            stop = self._stop_before_round()
            if stop is not None:
                return stop
            rnd = await self._round(self.state.rounds + 1)
            stop = self._stop_after_round(rnd)
            if stop is not None:
                return stop

    def _stop_before_round(self) -> tuple[str, str, str] | None:
        s, state = self.settings, self.state
        if self.dashboard.complete:
            return "dashboard_complete", "the dashboard says the search is complete", ""
        if state.consecutive_failures >= MAX_CONSECUTIVE_FAILURES:
            return (
                "failed",
                f"{state.consecutive_failures} rounds in a row failed; see the "
                "notes in the dashboard",
                "",
            )
        if state.rounds >= s.max_rounds:
            return "max_rounds", f"reached the limit of {s.max_rounds} rounds", ""
        left = self.time_left()
        if left is not None and left <= 0:
            limit = duration(s.max_time or 0)
            return "time_limit", f"the total time limit ({limit}) is used up", ""
        spent = self._budget_spent()
        if spent:
            return "budget", spent, ""
        return None

    def _stop_after_round(self, rnd: _Round) -> tuple[str, str, str] | None:
        n = rnd.number
        if rnd.outcome == "finished":
            return "finished", f"the agent called all_finished in round {n}", rnd.result
        if rnd.outcome == "dashboard_complete":
            return (
                "dashboard_complete",
                f"the dashboard says the search is complete (round {n})",
                "",
            )
        if rnd.fatal:
            return "failed", rnd.detail, ""
        if rnd.outcome == "time_limit":
            limit = duration(self.settings.max_time or 0)
            return "time_limit", f"the total time limit ({limit}) was reached in round {n}", ""
        if rnd.outcome == "budget":
            return "budget", rnd.detail, ""
        return None

    async def _round(self, n: int) -> _Round:
        round_s = self.settings.round_minutes * 60
        left = self.time_left()
        rnd = _Round(n, round_s if left is None else min(round_s, left))
        self._record("round_start", round=n, limit_s=round(rnd.limit_s, 3))
        self.emit(
            Event(
                "round",
                f"round {n}/{self.settings.max_rounds} · {duration(self.elapsed())} used",
                {
                    "round": n,
                    "max_rounds": self.settings.max_rounds,
                    "elapsed_s": round(self.elapsed(), 3),
                },
            )
        )
        started = self.clock()
        deadline = asyncio.timeout(rnd.limit_s)
        try:
            async with deadline:
                await self._converse(rnd)
        except TimeoutError:
            if not deadline.expired():
                rnd.outcome, rnd.detail = "error", "a timeout inside the round"
            elif rnd.limit_s < round_s:
                rnd.outcome, rnd.detail = "time_limit", "the total time limit was reached"
            else:
                rnd.outcome = "timeout"
                rnd.detail = f"the round hit its {duration(rnd.limit_s)} limit"
        except ConfigError:
            raise
        except (LLMAuthError, LLMUnreachableError) as exc:
            # A refused key, or no server at the address: the next round would meet the same.
            rnd.outcome, rnd.detail, rnd.fatal = "error", str(exc), True
        except (LLMError, ToolCrash) as exc:
            rnd.outcome, rnd.detail = "error", str(exc)
        except _ContextFull:
            rnd.outcome = "ended" if rnd.calls else "error"
            rnd.detail = "the conversation filled the model's context window"
        self._end_round(rnd, self.clock() - started)
        return rnd

    def _end_round(self, rnd: _Round, seconds: float) -> None:
        failed = rnd.outcome in _FAILED_OUTCOMES or (
            rnd.outcome == "timeout" and not rnd.dashboard_updated
        )
        if rnd.outcome in ("error", "timeout", "no_action"):
            what = "failed" if failed else "ended early"
            self.dashboard.note(f"round {rnd.number} {what}: {rnd.detail}")
            self._save_dashboard()
        self.state.rounds = rnd.number
        self.state.elapsed_s += seconds
        self.state.consecutive_failures = self.state.consecutive_failures + 1 if failed else 0
        self._record(
            "round_end",
            round=rnd.number,
            outcome=rnd.outcome,
            failed=failed,
            elapsed_s=round(seconds, 3),
            calls=rnd.calls,
            detail=_clip(rnd.detail, 500),
        )
        self.emit(
            Event(
                "round_failed" if failed else "round",
                f"round {rnd.number} {rnd.outcome}"
                + (f": {clean_text(rnd.detail)[:160]}" if rnd.detail else "")
                + f" · {duration(self.elapsed())} used",
                {"round": rnd.number, "outcome": rnd.outcome, "failed": failed},
            )
        )

    # -- one round's conversation -----------------------------------------------------------
    def _messages(self, n: int, limit_s: float) -> list[dict[str, Any]]:
        left = self.time_left()
        return render_messages(
            "agent_round",
            protocol=self._protocol_text(),
            dashboard_limit=DASHBOARD_MAX_CHARS,
            round=n,
            max_rounds=self.settings.max_rounds,
            elapsed=duration(self.elapsed()),
            round_limit=duration(limit_s),
            time_left="no overall limit" if left is None else duration(left),
            max_tool_calls=self.settings.max_tool_calls,
            workspace=self.workspace.label,
            goal=self.state.goal,
            dashboard=self.dashboard.text,
        )

    def _protocol_text(self) -> str:
        return NATIVE_PROTOCOL if self.protocol == "tools" else json_protocol()

    async def _converse(self, rnd: _Round) -> None:
        messages: list[dict[str, Any]] = list(self._messages(rnd.number, rnd.limit_s))
        while True:
            spent = self._budget_spent()
            if spent:
                rnd.outcome, rnd.detail = "budget", spent
                return
            self._fit(messages)
            reply = await self._ask(messages, rnd)
            actions = self._actions(reply, messages)
            if actions is None:
                rnd.outcome = "ended" if rnd.calls else "no_action"
                said = " ".join(reply.answer.split())[:200]
                rnd.detail = (
                    "the model replied without a tool call"
                    if rnd.calls
                    else "the model made no tool call"
                ) + (f": {said}" if said else "")
                return
            for call_id, name, raw in actions:
                await self._call(rnd, messages, call_id, name, raw)
            if rnd.outcome == "finished":
                return
            if self.dashboard.complete:
                rnd.outcome = "dashboard_complete"
                return
            if rnd.calls >= self.settings.max_tool_calls:
                rnd.outcome = "tool_limit"
                rnd.detail = f"used its {self.settings.max_tool_calls} tool calls"
                return

    async def _ask(self, messages: list[dict[str, Any]], rnd: _Round) -> LLMReply:
        tools = self._definitions if self.protocol == "tools" else None
        try:
            reply = await self.llm.chat(
                messages, stage="agent", model=self.model, tools=tools, max_tokens=self.reply_tokens
            )
        except LLMError as exc:
            if not (tools and self._may_fall_back and _tools_unsupported(exc)):
                raise
            self._fall_back(str(exc))
            messages[0] = {
                "role": "system",
                "content": self._messages(rnd.number, rnd.limit_s)[0]["content"],
            }
            reply = await self.llm.chat(
                messages, stage="agent", model=self.model, max_tokens=self.reply_tokens
            )
        if tools:
            self._may_fall_back = False  # function calling works: never switch mid-run
        calls = [
            {"id": c.id, "name": c.name, "arguments": _clip(c.arguments, 500)}
            for c in reply.tool_calls
        ]
        self._record(
            "llm",
            round=rnd.number,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            estimated=reply.estimated,
            text=_clip(reply.answer, 500),
            tool_calls=calls,
        )
        return reply

    def _fall_back(self, why: str) -> None:
        self.protocol, self._may_fall_back = "json", False
        self._record("protocol", protocol="json", reason=_clip(why, 300))
        self.emit(
            Event(
                "info",
                "the model server refused function calling; using JSON actions in text instead",
                {"protocol": "json"},
            )
        )

    def _actions(
        self, reply: LLMReply, messages: list[dict[str, Any]]
    ) -> list[tuple[str | None, str, Any]] | None:
        """The reply's tool calls (appending the assistant message), or None: no action."""
        if reply.tool_calls:
            messages.append(
                {
                    "role": "assistant",
                    "content": reply.text or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in reply.tool_calls
                    ],
                }
            )
            return [(c.id, c.name, c.arguments) for c in reply.tool_calls]
        action = parse_json_action(reply.answer)
        if action is None:
            return None
        messages.append({"role": "assistant", "content": reply.text})
        return [(None, action.name, action)]

    async def _call(
        self, rnd: _Round, messages: list[dict[str, Any]], call_id: str | None, name: str, raw: Any
    ) -> None:
        limit = self.settings.max_tool_calls
        if rnd.outcome == "finished" or rnd.calls >= limit:
            why = (
                "the search is finished"
                if rnd.outcome == "finished"
                else f"this round's limit of {limit} tool calls is reached"
            )
            self._answer(messages, call_id, wrap_result(name, False, f"not run: {why}"))
            return
        rnd.calls += 1
        if isinstance(raw, Action) and raw.error:
            name, result = (
                "(invalid)",
                ToolResult(ok=False, body=f"ERROR: {raw.error}", summary=raw.error),
            )
            raw = None  # the reply itself is in the "llm" record
        else:
            args = raw.arguments if isinstance(raw, Action) else raw
            self.emit(
                Event(
                    "tool",
                    f"round {rnd.number} · {name} {clean_text(_short_args(name, args))}".rstrip(),
                    {"round": rnd.number, "tool": name},
                )
            )
            result = await self.toolbox.call(name, args)
            raw = args
        if not result.ok:
            self.emit(
                Event(
                    "tool_failed",
                    f"{name}: {clean_text(result.summary)[:200]}",
                    {"round": rnd.number, "tool": name},
                )
            )
        if result.extra.get("dashboard"):
            rnd.dashboard_updated = True
        if result.finished is not None:
            rnd.outcome, rnd.result = "finished", result.finished
        extra = {k: v for k, v in result.extra.items() if k in ("url", "query")}
        self._record(
            "tool",
            round=rnd.number,
            tool=name[:60],
            arguments=_clip(raw),
            ok=result.ok,
            result=_clip(result.body),
            **extra,
        )
        text = wrap_result(name, result.ok, result.body, self.toolbox.page_chars + 500)
        left = limit - rnd.calls
        if left <= 3 and result.finished is None:
            text += f"\n({left} tool call{'s' if left != 1 else ''} left in this round" + (
                ": update the dashboard before they run out.)" if left else ".)"
            )
        self._answer(messages, call_id, text)

    def _answer(self, messages: list[dict[str, Any]], call_id: str | None, text: str) -> None:
        if call_id is not None:
            messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
        else:
            messages.append({"role": "user", "content": text + _NEXT_JSON})
