"""The LLM layer's part of sleuth's exception tree.

Everything the openai SDK raises is translated into these at the boundary
(:mod:`sleuth.llm.client`), so the pipeline catches ``LLMError`` and nothing else::

    SleuthError
    └── LLMError                 a model call failed; ``status`` and ``retryable`` say how
        ├── LLMAuthError         401/403: the key is missing, wrong or not allowed this model
        ├── LLMUnavailableError  server unreachable, timing out or overloaded after all retries
        ├── ContextOverflowError 400 saying the prompt is longer than the model's context
        ├── ParseError           the reply had no usable answer (no list, no verdict, ...),
        │                        or could not be read (not UTF-8, not JSON, nested too deep,
        │                        over the byte cap, not shaped like a chat completion)
        ├── PromptError          a prompt template was rendered with missing or extra values
        └── LLMBudgetError       --max-time, --max-tokens or --max-cost is spent: the call
                                 in flight is cancelled (--max-time), no further calls are made

Messages never contain the API key.
"""

from __future__ import annotations

from sleuth.errors import SleuthError


class LLMError(SleuthError):
    """A model call failed; the message is one line a user can act on.

    ``status`` is the HTTP status when the server answered, ``retryable`` whether
    trying again later could help (rate limits, 5xx, timeouts).
    """

    def __init__(self, message: str, *, status: int | None = None,
                 retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class LLMAuthError(LLMError):
    """The server refused the credentials (401) or the model for this key (403)."""


class LLMUnavailableError(LLMError):
    """The server could not be reached or kept failing after every retry."""


class ContextOverflowError(LLMError):
    """The prompt (plus the reply budget) is longer than the model's context window.

    Never retried: the same request fails the same way. Callers shrink the input
    (smaller chunks, fewer sources) and try again.
    """


class ParseError(LLMError):
    """A reply had no usable answer, or could not be read at all; ``excerpt`` is its start
    (when there is text), for the Gaps section. Never retried."""

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
