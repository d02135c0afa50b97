"""The one exception tree that sleuth raises.

Library exceptions (httpx, openai, pypdf, ...) are translated into these at the
boundary, so callers catch ``SleuthError`` and nothing else::

    SleuthError
    ├── ConfigError              bad input or settings: the CLI exits 2 with a one-line message
    │   ├── ProviderError        unknown search provider, or one that lacks its API key
    │   └── StoreError           the run store's file or disk: full, read-only, unreadable
    │       └── StoreCorruptError  … or damaged (both in ``sleuth.store.db``)
    ├── FetchError               one URL could not be fetched (raised by ``fetch_page``)
    │   └── BlockedURLError      the SSRF guard refused a URL
    ├── WorkspaceError           an agent file tool tried to leave or overfill its workspace
    └── LLMError                 a model call failed (defined in ``sleuth.llm.errors``)
        ├── LLMAuthError         401/403: the key is refused; the CLI exits 2
        ├── LLMUnavailableError  unreachable, timing out or overloaded after every retry
        ├── ContextOverflowError the prompt is longer than the model's context
        ├── ParseError           the reply held no usable answer, or could not be read
        ├── PromptError          a prompt template was rendered with wrong values
        └── LLMBudgetError       --max-time, --max-tokens or --max-cost is spent

A research in which single searches or pages fail is not an error: the failures are
recorded in ``Report.failures`` and shown in the report's Gaps section. The same holds
for model failures during a research: each stage then takes its no-LLM path and the
reason is recorded (only ``LLMAuthError`` ends the run). The LLM errors can be
imported from here too (``from sleuth.errors import LLMError``); they load lazily.
"""

from __future__ import annotations


class SleuthError(Exception):
    """Base class of every error sleuth raises on purpose."""


class ConfigError(SleuthError, ValueError):
    """Invalid input or settings; the message is one line a user can act on."""


class ProviderError(ConfigError):
    """A search provider that is unknown or not configured."""


class FetchError(SleuthError):
    """A single page could not be fetched or extracted."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason


class BlockedURLError(FetchError):
    """The URL points somewhere sleuth refuses to go (SSRF guard, scheme, port)."""


_LLM_ERRORS = frozenset({"LLMError", "LLMAuthError", "LLMUnavailableError",
                         "ContextOverflowError", "ParseError", "PromptError", "LLMBudgetError"})


def __getattr__(name: str) -> type[SleuthError]:
    # Lazy: the LLM layer imports httpx, which the CLI's --help should not pay for.
    if name in _LLM_ERRORS:
        from sleuth.llm import errors

        error: type[SleuthError] = getattr(errors, name)
        return error
    raise AttributeError(f"module 'sleuth.errors' has no attribute {name!r}")
