"""sleuth: research a question on the web and write a cited report.

    import sleuth
    report = sleuth.research_sync("How does OAuth 2.0 authorization code flow work?")
    print(report.markdown)

Public names are loaded lazily so that ``import sleuth`` (and ``sleuth --help``)
stays fast; the heavy libraries load when a research starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleuth._lazy import lazy_exports
from sleuth._version import __version__

_EXPORTS = {
    "research": "sleuth.pipeline.quick",
    "web_search": "sleuth.agent",
    "AgentResult": "sleuth.agent",
    "research_sync": "sleuth.pipeline.quick",
    "research_many": "sleuth.pipeline.batch",
    "BatchResult": "sleuth.pipeline.batch",
    "extract": "sleuth.extraction",
    "Extracted": "sleuth.extraction",
    "fetch_page": "sleuth.pipeline.pages",
    "Settings": "sleuth.settings",
    "load_settings": "sleuth.settings",
    "Report": "sleuth.models",
    "Source": "sleuth.models",
    "Failure": "sleuth.models",
    "Stats": "sleuth.models",
    "Quality": "sleuth.models",
    "SearchHit": "sleuth.models",
    "Plan": "sleuth.models",
    "Page": "sleuth.models",
    "Event": "sleuth.progress",
    "EventStream": "sleuth.progress",
    "SearchProvider": "sleuth.search.base",
    "register": "sleuth.search.base",
    "SleuthError": "sleuth.errors",
    "ConfigError": "sleuth.errors",
    "ProviderError": "sleuth.errors",
    "FetchError": "sleuth.errors",
    "BlockedURLError": "sleuth.errors",
    "LLMError": "sleuth.errors",
    "LLMAuthError": "sleuth.errors",
    "WorkspaceError": "sleuth.errors",
    "CitationCheck": "sleuth.models",
    "TreeNode": "sleuth.models",
    "Section": "sleuth.models",
    "Answer": "sleuth.models",
    "AnswerSentence": "sleuth.models",
    "TextSpan": "sleuth.models",
    "Claim": "sleuth.models",
    "Support": "sleuth.models",
    "Span": "sleuth.models",
    "Timeline": "sleuth.models",
}

__all__ = [
    "AgentResult",
    "Answer",
    "AnswerSentence",
    "BatchResult",
    "BlockedURLError",
    "CitationCheck",
    "Claim",
    "ConfigError",
    "Event",
    "EventStream",
    "Extracted",
    "Failure",
    "FetchError",
    "LLMAuthError",
    "LLMError",
    "Page",
    "Plan",
    "ProviderError",
    "Quality",
    "Report",
    "SearchHit",
    "SearchProvider",
    "Section",
    "Settings",
    "SleuthError",
    "Source",
    "Span",
    "Stats",
    "Support",
    "TextSpan",
    "Timeline",
    "TreeNode",
    "WorkspaceError",
    "__version__",
    "extract",
    "fetch_page",
    "load_settings",
    "register",
    "research",
    "research_many",
    "research_sync",
    "web_search",
]

if TYPE_CHECKING:
    from sleuth.agent import AgentResult, web_search
    from sleuth.errors import (
        BlockedURLError,
        ConfigError,
        FetchError,
        LLMAuthError,
        LLMError,
        ProviderError,
        SleuthError,
        WorkspaceError,
    )
    from sleuth.extraction import Extracted, extract
    from sleuth.models import (
        Answer,
        AnswerSentence,
        CitationCheck,
        Claim,
        Failure,
        Page,
        Plan,
        Quality,
        Report,
        SearchHit,
        Section,
        Source,
        Span,
        Stats,
        Support,
        TextSpan,
        Timeline,
        TreeNode,
    )
    from sleuth.pipeline.batch import BatchResult, research_many
    from sleuth.pipeline.pages import fetch_page
    from sleuth.pipeline.quick import research, research_sync
    from sleuth.progress import Event, EventStream
    from sleuth.search.base import SearchProvider, register
    from sleuth.settings import Settings, load_settings


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return __all__
