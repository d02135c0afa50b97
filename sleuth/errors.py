"""The one exception tree that sleuth raises, all of it in this file.

Library exceptions (httpx, openai, pypdf, sqlite3, ...) are translated into these at
the boundary, so callers catch ``SleuthError`` and nothing else::

    SleuthError
    ├── ConfigError              bad input or settings: the CLI exits 2 with a one-line message
    │   ├── ProviderError        unknown search provider, or one that lacks its API key
    │   ├── RunNotFoundError     no stored run has that id (or id prefix)
    │   └── StoreError           the run store's file or disk: full, read-only, unreadable
    │       └── StoreCorruptError  … or damaged
    ├── StoreBusyError           the run store stayed locked by another writer
    ├── ProviderFailure          one search provider could not answer one query (recorded)
    ├── FetchError               one URL could not be fetched (raised by ``fetch_page``)
    │   └── BlockedURLError      the SSRF guard refused a URL
    ├── ExtractError             a document that cannot be read at all (a corrupt PDF)
    ├── WorkspaceError           an agent file tool tried to leave or overfill its workspace
    └── LLMError                 a model call failed; ``status`` and ``retryable`` say how
        ├── LLMAuthError         401/403: the key is refused; the CLI exits 2
        ├── LLMUnavailableError  unreachable, timing out or overloaded after every retry
        ├── ContextOverflowError the prompt is longer than the model's context
        ├── ParseError           the reply held no usable answer, or could not be read
        ├── PromptError          a prompt template was rendered with wrong values
        └── LLMBudgetError       --max-time, --max-tokens or --max-cost is spent

A research in which single searches or pages fail is not an error: the failures are
recorded in ``Report.failures`` and shown in the report's Gaps section. The same holds
for model failures during a research: each stage then takes its no-LLM path and the
reason is recorded (only ``LLMAuthError`` ends the run). Messages never contain an API
key.

This module imports nothing (the CLI's ``--help`` and any ``except`` clause can load it
for free); the modules that raise these errors re-export the ones they own, so
``sleuth.store.StoreError`` and ``sleuth.agent.WorkspaceError`` are these same classes.
"""

from __future__ import annotations

__all__ = [
    "BlockedURLError",
    "ConfigError",
    "ContextOverflowError",
    "ExtractError",
    "FetchError",
    "LLMAuthError",
    "LLMBudgetError",
    "LLMError",
    "LLMUnavailableError",
    "LLMUnreachableError",
    "ParseError",
    "PromptError",
    "ProviderError",
    "ProviderFailure",
    "RunNotFoundError",
    "SleuthError",
    "StoreBusyError",
    "StoreCorruptError",
    "StoreError",
    "WorkspaceError",
]


class SleuthError(Exception):
    """Base class of every error sleuth raises on purpose."""


# ---------------------------------------------------------------- bad input


class ConfigError(SleuthError, ValueError):
    """Invalid input or settings; the message is one line a user can act on."""


class ProviderError(ConfigError):
    """A search provider that is unknown or not configured."""


class RunNotFoundError(ConfigError):
    """No run has that id (or id prefix)."""


# ---------------------------------------------------------------- the run store


class StoreError(ConfigError):
    """The database's file or disk cannot be used: full, read-only, unreadable, damaged."""


class StoreCorruptError(StoreError):
    """The database file is damaged: SQLite finds it malformed, or its rows do not decode."""


class StoreBusyError(SleuthError):
    """The database stayed locked by another writer through every retry."""


# ---------------------------------------------------------------- searches and pages


class ProviderFailure(SleuthError):
    """One provider could not answer one query; ``reason`` is a short line for the user.

    Providers raise it (or let a timeout escape); :func:`sleuth.search.run_searches`
    turns it into a :class:`~sleuth.models.SearchFailure` and tries the next provider.
    The reason must never contain an API key.
    """

    def __init__(self, reason: str, *, unreachable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        #: True when the provider's host could not be reached at all (no DNS answer, no
        #: connection): when every search fails so, the machine is probably offline.
        self.unreachable = unreachable


class FetchError(SleuthError):
    """A single page could not be fetched or extracted."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason


class BlockedURLError(FetchError):
    """The URL points somewhere sleuth refuses to go (SSRF guard, scheme, port)."""


class ExtractError(SleuthError, ValueError):
    """A document that cannot be read at all (a corrupt or encrypted PDF)."""


# ---------------------------------------------------------------- agent mode


class WorkspaceError(SleuthError):
    """A file operation the sandbox refused; the message is meant for the model."""


# ---------------------------------------------------------------- the model
# Everything the openai SDK raises is translated into these at the boundary
# (sleuth.llm.client), so the stages catch LLMError and nothing else.


class LLMError(SleuthError):
    """A model call failed; the message is one line a user can act on.

    ``status`` is the HTTP status when the server answered, ``retryable`` whether
    trying again later could help (rate limits, 5xx, timeouts).
    """

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class LLMAuthError(LLMError):
    """The server refused the credentials (401) or the model for this key (403)."""


class LLMUnavailableError(LLMError):
    """The server could not be reached or kept failing after every retry."""


class LLMUnreachableError(LLMUnavailableError):
    """Nothing answers at the server's address (connection refused, or no such host):
    not retried, since asking again at once meets the same closed door."""


class ContextOverflowError(LLMError):
    """The prompt (plus the reply budget) is longer than the model's context window.

    Never retried: the same request fails the same way. Callers shrink the input
    (smaller chunks, fewer sources) and try again.
    """


class ParseError(LLMError):
    """A reply had no usable answer, or could not be read at all; ``excerpt`` is its start
    (when there is text), for the Gaps section. Never retried.

    Unreadable means: not UTF-8, not JSON, nested too deep, over the byte cap, or not
    shaped like a chat completion.
    """

    def __init__(self, message: str, *, excerpt: str = "") -> None:
        super().__init__(message)
        self.excerpt = excerpt


class PromptError(LLMError, ValueError):
    """A prompt was rendered with a missing or unexpected value, or does not exist.

    A programming error, raised at render time so it never reaches a server.
    """


class LLMBudgetError(LLMError):
    """The run's time, token or cost budget is spent, so the call was not made (or, when
    ``--max-time`` passed while it was in flight, was cancelled).

    Stages treat it like any other model failure: they take their no-LLM path.
    """
