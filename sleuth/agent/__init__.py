"""Agent mode: a model researches a goal in rounds, through five tools, in a sandbox.

    import asyncio, sleuth
    result = asyncio.run(sleuth.web_search("What changed in HTTP/3?", max_rounds=5))
    print(result.status, result.result)

See :mod:`sleuth.agent.loop` for the rounds and the exits, :mod:`sleuth.agent.tools`
for the tools and the JSON fallback, :mod:`sleuth.agent.workspace` for the sandbox
and :mod:`sleuth.agent.dashboard` for the dashboard and its completion marker.
"""

from __future__ import annotations

from sleuth.agent.api import web_search
from sleuth.agent.dashboard import DASHBOARD_MAX_CHARS, Dashboard, is_complete
from sleuth.agent.loop import MAX_CONSECUTIVE_FAILURES
from sleuth.agent.result import AgentResult, AgentStatus
from sleuth.agent.workspace import Workspace, WorkspaceError

__all__ = [
    "DASHBOARD_MAX_CHARS",
    "MAX_CONSECUTIVE_FAILURES",
    "AgentResult",
    "AgentStatus",
    "Dashboard",
    "Workspace",
    "WorkspaceError",
    "is_complete",
    "web_search",
]
