"""Every error the openai SDK (or a reply) can raise, as the sleuth error a user can act on.

:func:`translate` maps them onto the tree in :mod:`sleuth.errors`: what is worth a retry
(timeouts, dropped connections, 408/409/429, 5xx) is marked ``retryable``; a closed door
(connection refused, a name that does not resolve) is told as such; a reply that cannot be
parsed is a ParseError, never retried, since the same request gets the same reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import openai

from sleuth.errors import (
    ContextOverflowError,
    LLMAuthError,
    LLMError,
    LLMUnavailableError,
    LLMUnreachableError,
    ParseError,
)
from sleuth.llm._wire import UNPARSABLE, Misshapen, ReplyRefused, cause

__all__ = ["translate"]

_RETRYABLE_STATUS = frozenset({408, 409, 429})
_CONTEXT_OVERFLOW = re.compile(
    r"context[ _-]?(?:length|window|size)|maximum context|too many tokens|"
    r"prompt is too long|input is too long|maximum (?:input|prompt) length|"
    r"reduce the length of the (?:messages|prompt)|exceeds? (?:the )?(?:available )?context",
    re.IGNORECASE,
)


def _server_message(exc: openai.APIStatusError) -> str:
    """The server's own error message, without the SDK's "Error code: N - " wrapping."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(message, str) and message.strip():
            return message
    return re.sub(r"^Error code: \d+ - ", "", exc.message or str(exc))


def translate(
    exc: BaseException, *, where: str, timeout: float, scrub: Callable[[str], str]
) -> LLMError:
    """The sleuth error for an SDK error (see the tree in sleuth.errors).

    A reply that cannot be parsed, or was refused unread (over the byte cap), is a
    ParseError: never retried, since the same request gets the same reply.
    """
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return LLMUnavailableError(
            f"the LLM server at {where} did not answer within {timeout:g} s",
            retryable=True,
        )
    if isinstance(exc, Misshapen):  # a streamed chunk; a whole reply is read in _reply
        return ParseError(
            f"the LLM server at {where} sent a reply that is not a chat completion: {exc}"
        )
    refused = cause(exc, ReplyRefused)
    if refused is not None:
        return ParseError(f"the LLM server at {where} sent a reply sleuth did not use: {refused}")
    if isinstance(exc, UNPARSABLE):
        what = (
            "JSON nested too deep to parse"
            if isinstance(exc, RecursionError)
            else "bytes that are not UTF-8"
            if isinstance(exc, UnicodeDecodeError)
            else f"a body that is not valid JSON ({scrub(exc.msg)})"
            if isinstance(exc, json.JSONDecodeError)
            else type(exc).__name__
        )
        return ParseError(f"the LLM server at {where} sent a reply sleuth cannot read: {what}")
    if isinstance(exc, openai.APIConnectionError):
        closed = _closed_door(exc)
        if closed is not None:
            return LLMUnreachableError(
                f"cannot reach the LLM server at {where}: {closed}; is it running, "
                "and is --base-url right?"
            )
        return LLMUnavailableError(
            f"could not connect to the LLM server at {where}", retryable=True
        )
    if not isinstance(exc, openai.APIStatusError):
        return LLMError(f"LLM call failed: {scrub(str(exc))}")
    status = exc.status_code
    detail = scrub(_server_message(exc))
    if status in (401, 403):
        return LLMAuthError(
            f"the LLM server at {where} refused the request ({status}): "
            f"{detail}; check OPENAI_API_KEY and the model name",
            status=status,
        )
    if status in (400, 413, 422) and _CONTEXT_OVERFLOW.search(detail):
        return ContextOverflowError(
            f"the prompt is too long for the model ({status}): {detail}", status=status
        )
    if status == 404:
        return LLMError(
            f"the LLM server at {where} does not know this model or API (404): {detail}",
            status=status,
        )
    if status == 429:
        return LLMUnavailableError(
            f"rate limited by the LLM server at {where} (429): {detail}",
            status=status,
            retryable=True,
        )
    if status >= 500 or status in _RETRYABLE_STATUS:
        return LLMUnavailableError(
            f"the LLM server at {where} failed ({status}): {detail}",
            status=status,
            retryable=True,
        )
    return LLMError(
        f"the LLM server at {where} rejected the request ({status}): {detail}", status=status
    )


def _closed_door(exc: BaseException) -> str | None:
    """Why nothing can answer at the address, when that is why ``exc`` happened: the
    connection was refused, or the host name does not resolve. None for the rest (a reset,
    a dropped connection, a TLS failure), which a retry may get past."""
    import errno
    import socket

    seen: BaseException | None = exc
    for _ in range(10):  # the cause chain: openai's error, httpx's, httpcore's, the OSError
        if seen is None:
            return None
        if isinstance(seen, ConnectionRefusedError) or (
            isinstance(seen, OSError) and seen.errno == errno.ECONNREFUSED
        ):
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return "the host name does not resolve"
        seen = seen.__cause__ or seen.__context__
    return None
