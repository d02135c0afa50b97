"""What fits an agent round's conversation into the model's context window: the
tokens of a request, the page text one tool result may hold, and removing the oldest
tool results when the conversation grows too long.
"""

from __future__ import annotations

import json
from typing import Any

from sleuth.agent.dashboard import DASHBOARD_MAX_CHARS
from sleuth.agent.tools import RESULT_CHARS
from sleuth.agent.workspace import Workspace
from sleuth.llm.prompts import render_messages
from sleuth.llm.tokens import count_tokens

_ELIDED = "<<<RESULT\n(this earlier result was removed to fit the model's context)\nRESULT>>>"


class _ContextFull(Exception):
    """Even with every earlier tool result removed, the conversation does not fit."""


class ContextFitting:
    """The context-window part of :class:`~sleuth.agent.loop.AgentLoop`, which sets the
    attributes below and says how its tools are described (``_protocol_text``)."""

    model: str
    protocol: str
    window: int
    reply_tokens: int
    workspace: Workspace
    _definitions: list[dict[str, Any]]
    _definition_tokens: int | None

    def _protocol_text(self) -> str:
        raise NotImplementedError

    def _tokens(self, messages: list[dict[str, Any]]) -> int:
        """Prompt tokens of a request: messages, the calls in them, the tool definitions."""
        total = 3
        for message in messages:
            content = message.get("content")
            total += 4 + count_tokens(content if isinstance(content, str) else "", self.model)
            for call in message.get("tool_calls") or []:
                fn = call.get("function", {})
                total += count_tokens(f"{fn.get('name', '')}{fn.get('arguments', '')}", self.model)
        if self.protocol == "tools":
            if self._definition_tokens is None:
                self._definition_tokens = count_tokens(json.dumps(self._definitions), self.model)
            total += self._definition_tokens
        return total

    def page_chars(self, goal: str, dashboard: str) -> int:
        """Characters of page text one result may hold: what is left of the context after
        the prompt, the tools and a full dashboard (about 3 characters a token, erring low)."""
        base = self._tokens(
            render_messages(
                "agent_round",
                protocol=self._protocol_text(),
                dashboard_limit=DASHBOARD_MAX_CHARS,
                round=1,
                max_rounds=1,
                elapsed="",
                round_limit="",
                time_left="",
                max_tool_calls=1,
                workspace=self.workspace.label,
                goal=goal,
                dashboard=dashboard,
            )
        )
        left = self.window - self.reply_tokens - 256 - base - DASHBOARD_MAX_CHARS // 4
        return max(1000, min(RESULT_CHARS, left * 3 // 2))

    def _fit(self, messages: list[dict[str, Any]]) -> None:
        """Remove the oldest tool results until the conversation fits the context window.

        The results of the model's latest reply are never removed (the model has not
        seen them yet); when even so it does not fit, the round ends (``_ContextFull``).
        """
        budget = self.window - self.reply_tokens - 256
        latest = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=1)
        while self._tokens(messages) > budget:
            for message in messages[2:latest]:
                content = message.get("content")
                is_result = message["role"] == "tool" or (
                    message["role"] == "user"
                    and isinstance(content, str)
                    and content.startswith("<<<RESULT")
                )
                if is_result and content != _ELIDED:
                    message["content"] = _ELIDED
                    break
            else:
                raise _ContextFull
