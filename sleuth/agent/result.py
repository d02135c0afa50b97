"""``AgentResult``: what an agent search ended with, and how it is shown."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from sleuth._format import duration
from sleuth.models import ValidText

__all__ = ["AgentResult", "AgentStatus", "AgentWork", "clean_text"]

#: Why a search stopped. ``finished``: the agent called all_finished.
#: ``dashboard_complete``: the dashboard carries the completion marker.
#: ``max_rounds`` / ``time_limit`` / ``budget``: --max-rounds, --max-time, or
#: --max-tokens / --max-cost was reached. ``failed``: several rounds in a row failed,
#: or the model server refused the credentials.
AgentStatus = Literal[
    "finished", "dashboard_complete", "max_rounds", "time_limit", "budget", "failed"
]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


def clean_text(text: str) -> str:
    """Model-written text made safe to print: control characters (ANSI escapes) removed."""
    return _CONTROL.sub("", text)


class AgentWork(BaseModel):
    """What an agent search did: its goal, how it ended (once it has), its session, and
    its counters (rounds, tool and model calls, tokens, time, the pages it read, the
    queries it searched). The running search's state and its result both are one."""

    goal: str
    status: str | None = None
    reason: str = ""
    result: str = ""
    session: str = "default"
    rounds: int = 0
    tool_calls: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    elapsed_s: float = 0.0
    pages: list[str] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)
    protocol: str | None = None


class AgentResult(ValidText, AgentWork):
    """A finished (or stopped) agent search.

    ``result`` is the agent's answer when it called ``all_finished`` (else empty);
    ``dashboard`` its memory as it ended; ``workspace`` the folder to resume from
    (None with ``--no-store``, whose workspace is deleted at the end); ``pages`` the
    URLs the agent read; ``report`` the cited report when one was asked for;
    ``result_note`` why ``result.md`` could not be written (else None).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Narrower than while the search runs: a result has ended, one way or another.
    status: AgentStatus
    reason: str
    protocol: Literal["tools", "json"] = "tools"
    dashboard: str
    workspace: str | None
    report: str | None = None
    report_note: str | None = None
    result_note: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens of every model call."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def done(self) -> bool:
        """True when the agent ended the search itself (all_finished or the marker)."""
        return self.status in ("finished", "dashboard_complete")

    @property
    def markdown(self) -> str:
        """The final output as Markdown (same as :meth:`to_markdown`)."""
        return self.to_markdown()

    def summary_line(self) -> str:
        """Rounds, tool calls, tokens, pages and time on one line."""
        return (
            f"{self.rounds} round{'s' if self.rounds != 1 else ''} · {self.tool_calls} "
            f"tool calls · {self.tokens:,} tokens ({self.prompt_tokens:,} prompt + "
            f"{self.completion_tokens:,} completion) · {len(self.pages)} "
            f"page{'s' if len(self.pages) != 1 else ''} read · "
            f"{duration(self.elapsed_s)}"
        )

    def to_markdown(self) -> str:
        """The final output: status, the result and the dashboard (and the report)."""
        lines = [
            f"# Agent search: {clean_text(' '.join(self.goal.split()))}",
            "",
            f"**Status:** {self.status} — {clean_text(self.reason)}  ",
            f"**Work:** {self.summary_line()}  ",
        ]
        if self.workspace:
            lines.append(f"**Workspace:** `{self.workspace}`  ")
        lines += ["", "## Result", ""]
        lines.append(
            clean_text(self.result).strip()
            or "_The agent gave no final result; see the dashboard._"
        )
        if self.result_note:
            lines += ["", f"_{clean_text(self.result_note)}_"]
        lines += [
            "",
            "## Dashboard",
            "",
            "```text",
            clean_text(self.dashboard).replace("```", "ʼʼʼ"),
            "```",
            "",
        ]
        if self.report_note:
            lines += [f"_{clean_text(self.report_note)}_", ""]
        if self.report:
            lines += ["---", "", self.report.rstrip(), ""]
        return "\n".join(lines)
