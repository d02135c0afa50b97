"""The question as sleuth takes it: control characters out, blank or wordless refused.

No heavy imports: the command line checks the question with it before loading the
settings model or the pipeline, so bad input is refused as fast as ``--help`` answers.
"""

from __future__ import annotations

import unicodedata

from sleuth.errors import ConfigError

__all__ = ["MAX_QUESTION_CHARS", "clean_question"]

MAX_QUESTION_CHARS = 2000


def clean_question(question: str) -> str:
    """The question with control characters removed; ConfigError if nothing usable is left."""
    if not isinstance(question, str):
        raise ConfigError("the question must be text")
    text = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in question)
    text = " ".join(text.split())
    if not text:
        raise ConfigError("the question is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise ConfigError(
            f"the question is {len(text)} characters long; the limit is {MAX_QUESTION_CHARS}"
        )
    if not any(ch.isalnum() for ch in text):
        raise ConfigError("the question has no words in it")
    return text
