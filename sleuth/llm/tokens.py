"""Offline token counting, context windows and chunking.

Nothing here ever touches the network. tiktoken downloads its encodings on first
use, so it is only called when it is installed *and* the encoding file is already
in its cache, verified against tiktoken's own SHA-256 (a file that fails the check
would make tiktoken download a new copy). Everything else uses
:func:`estimate_tokens`, a documented estimate that errs high.

Budgets are always positive: :func:`chunk_budget` raises instead of returning zero
or less, so chunking can never loop forever (MetaGPT's negative-budget bug).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError
from sleuth.llm.models_table import DEFAULT_CONTEXT_WINDOW, model_info

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "MIN_CHUNK_TOKENS",
    "chunk_budget",
    "chunk_text",
    "context_window",
    "count_tokens",
    "estimate_tokens",
    "message_tokens",
]

#: chunk_text refuses budgets below this: one character may cost several tokens,
#: and chunks this small are useless to a model anyway.
MIN_CHUNK_TOKENS = 32
#: chunk_budget's default floor: below it a page would need hundreds of calls.
MIN_USEFUL_BUDGET = 256
#: Tokens the chat format adds per message (role, separators) and per reply primer.
#: OpenAI documents 3-4; other templates are similar or smaller.
PER_MESSAGE_TOKENS = 4
REPLY_PRIMER_TOKENS = 3

# tiktoken's encoding files, with the SHA-256 tiktoken itself checks (tiktoken_ext).
_ENCODINGS = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

_CJK = (
    r"\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf"
    r"\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff00-\uffef"
    r"\U00020000-\U0003ffff"
)
_PIECE = re.compile(
    rf"(?P<cjk>[{_CJK}])"
    r"|(?P<ascii>[A-Za-z]+)"
    rf"|(?P<word>(?:(?![{_CJK}A-Za-z])[^\W_])+)"
    r"|(?P<space>\s+)"
    r"|(?P<other>.)",
    re.DOTALL,
)
_PLAIN_WORD = re.compile(r"[A-Z]?[a-z]*")
_LATIN_GREEK_CYRILLIC = re.compile(r"[\u00c0-\u024f\u0370-\u052f0-9]+")


def estimate_tokens(text: str) -> int:
    """Token count estimate that errs high for the tokenizers sleuth meets.

    The rules, per piece of text:

    * an ordinary ASCII word (``word``, ``Word``): one token per 4 letters, rounded up
      (BPE vocabularies hold most such words whole, so this is high for English);
    * other letter/digit runs (numbers, ``iPhone``, ``HTTP2``, accented, Greek or
      Cyrillic words): one token per 2 characters;
    * letters of other scripts (Arabic, Hebrew, Devanagari, Thai, ...): one token each;
    * CJK ideographs, kana, hangul and full-width forms: 1.5 tokens each (modern
      vocabularies need about one; cl100k and Llama 2 often need two);
    * each punctuation mark: one token; other symbols (emoji, ...): two;
    * whitespace: a single space is free (BPE attaches it to the next word), any other
      run (newlines, indentation) costs one.
    """
    total = 0.0
    for match in _PIECE.finditer(text):
        kind, piece = match.lastgroup, match.group()
        if kind == "cjk":
            total += 1.5
        elif kind == "ascii":
            per = 4 if _PLAIN_WORD.fullmatch(piece) else 2
            total += math.ceil(len(piece) / per)
        elif kind == "word":
            if _LATIN_GREEK_CYRILLIC.fullmatch(piece):
                total += math.ceil(len(piece) / 2)
            else:
                total += len(piece)
        elif kind == "space":
            total += 0 if piece == " " else 1
        else:
            total += 1 if piece.isascii() else 2
    return math.ceil(total)


def _tiktoken_cache_dir(env: Mapping[str, str]) -> Path | None:
    # Mirrors tiktoken.load.read_file_cached; an empty value disables its cache,
    # which would mean a download on every use.
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in env:
            return Path(env[var]) if env[var] else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def cached_encoding_file(encoding: str, env: Mapping[str, str] | None = None) -> Path | None:
    """tiktoken's cache file for ``encoding`` if present and intact, else None."""
    if encoding not in _ENCODINGS:
        return None
    url, sha256 = _ENCODINGS[encoding]
    cache = _tiktoken_cache_dir(os.environ if env is None else env)
    if cache is None:
        return None
    path = cache / hashlib.sha1(url.encode()).hexdigest()
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return path if hashlib.sha256(data).hexdigest() == sha256 else None


def _tiktoken_installed() -> bool:
    try:
        return find_spec("tiktoken") is not None
    except (ImportError, ValueError):
        return False


@lru_cache(maxsize=4)
def _tiktoken_encoder(encoding: str) -> Callable[[str], list[int]] | None:
    """tiktoken's encoder when it can load without the network, else None."""
    if not _tiktoken_installed() or cached_encoding_file(encoding) is None:
        return None
    try:
        # Imported by name: an optional dependency, untyped for mypy's purposes.
        enc: Any = import_module("tiktoken").get_encoding(encoding)
    except Exception:  # a broken install must not break counting
        return None
    # encode_ordinary: page text may contain "<|endoftext|>", which encode() rejects.
    encode: Callable[[str], list[int]] = enc.encode_ordinary
    return encode


def count_tokens(text: str, model: str | None = None) -> int:
    """Tokens in ``text`` for ``model``.

    Exact (tiktoken) for OpenAI models whose encoding is cached locally; otherwise
    :func:`estimate_tokens`. Other vendors' tokenizers differ from tiktoken's, so
    they always get the estimate, which errs high.
    """
    if not text:
        return 0
    encoding = model_info(model).encoding if model else None
    encoder = _tiktoken_encoder(encoding) if encoding else None
    if encoder is None:
        return estimate_tokens(text)
    return len(encoder(text))


def message_tokens(messages: Iterable[Mapping[str, Any]], model: str | None = None) -> int:
    """Prompt tokens of a chat request: every message's content plus format overhead."""
    total = REPLY_PRIMER_TOKENS
    for message in messages:
        content = message.get("content")
        total += PER_MESSAGE_TOKENS + count_tokens(
            content if isinstance(content, str) else "", model
        )
    return total


def context_window(model: str | None, override: int | None = None) -> int:
    """The model's context window in tokens: ``override`` if given, else the table's.

    Unknown models get ``DEFAULT_CONTEXT_WINDOW`` (8192), a conservative guess;
    ``model_info(model).known`` tells whether it was one.
    """
    if override is not None:
        if override <= 0:
            raise ConfigError(f"context window must be positive, not {override}")
        return override
    return model_info(model).context_window


def chunk_budget(
    context_window: int,
    prompt_overhead_tokens: int,
    reply_tokens: int,
    *,
    margin: int | None = None,
    minimum: int = MIN_USEFUL_BUDGET,
) -> int:
    """Tokens of page text that fit one call: window − prompt − reply − safety margin.

    ``margin`` defaults to 5% of the window (at least 32), for the difference between
    our count and the server's tokenizer. Never returns less than ``minimum``
    (itself at least ``MIN_CHUNK_TOKENS``): raises :class:`~sleuth.errors.ConfigError`
    (a ``ValueError``) when the window is too small, instead of a budget of zero or
    less that would never finish chunking.
    """
    if context_window <= 0:
        raise ValueError(f"context window must be positive, not {context_window}")
    if prompt_overhead_tokens < 0 or reply_tokens < 0:
        raise ValueError("prompt and reply token counts cannot be negative")
    if margin is None:
        margin = max(32, context_window // 20)
    minimum = max(minimum, MIN_CHUNK_TOKENS)
    budget = context_window - prompt_overhead_tokens - reply_tokens - max(margin, 0)
    if budget < minimum:
        raise ConfigError(
            f"the model's context window ({context_window} tokens) is too small for the "
            f"prompt ({prompt_overhead_tokens}) plus the reply ({reply_tokens}) plus at least "
            f"{minimum} tokens of text; use a model with a larger context, or set "
            f"--context-window if the server allows more"
        )
    return budget


# Split levels, coarse to fine: paragraphs, lines, sentences, words.
_LEVELS = (
    (re.compile(r"\n[ \t\r\f\v]*\n\s*"), "\n\n"),
    (re.compile(r"\n\s*"), "\n"),
    (re.compile(r"(?<=[.!?…])\s+|(?<=[。！？])"), " "),
    (re.compile(r"\s+"), " "),
)
_SEPARATOR_TOKENS = 1  # what a join costs at most: one whitespace token
#: Characters per token that a cut looks ahead at most (estimate: 4 at most; a longer
#: real token only makes a hard-cut chunk shorter than it could be, never too long).
_MAX_TOKEN_CHARS = 8


def chunk_text(text: str, budget_tokens: int, *, model: str | None = None) -> list[str]:
    """Split ``text`` into chunks of at most ``budget_tokens`` tokens each.

    Splits at paragraph breaks first, then lines, sentences and words, and packs the
    pieces greedily, so chunks end at the coarsest boundary that fits. Only a single
    "word" longer than the budget (a huge URL, CJK text without punctuation) is cut
    between characters. Whitespace between pieces may be normalised, never words:
    ``" ".join(chunks).split() == text.split()`` unless such a cut was needed.
    Empty or blank text gives ``[]``.
    """
    if budget_tokens < MIN_CHUNK_TOKENS:
        raise ValueError(
            f"chunk budget must be at least {MIN_CHUNK_TOKENS} tokens, not {budget_tokens}"
        )

    def count(piece: str) -> int:
        return count_tokens(piece, model)

    text = text.strip()
    if not text:
        return []
    return _split(text, 0, budget_tokens, count)


def _split(text: str, level: int, budget: int, count: Callable[[str], int]) -> list[str]:
    if count(text) <= budget:
        return [text]
    if level == len(_LEVELS):
        return _hard_split(text, budget, count)
    pattern, joiner = _LEVELS[level]
    pieces = [p.strip() for p in pattern.split(text) if p and p.strip()]
    if len(pieces) <= 1:
        return _split(text, level + 1, budget, count)
    fitted: list[str] = []
    for piece in pieces:
        fitted.extend(_split(piece, level + 1, budget, count))
    return _pack(fitted, joiner, budget, count)


def _pack(pieces: list[str], joiner: str, budget: int, count: Callable[[str], int]) -> list[str]:
    """Greedy packing of pieces (each within budget) joined by ``joiner``."""
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for piece in pieces:
        cost = count(piece)
        if current and used + _SEPARATOR_TOKENS + cost > budget:
            chunks.extend(_verified(current, joiner, budget, count))
            current, used = [], 0
        used += cost + (_SEPARATOR_TOKENS if current else 0)
        current.append(piece)
    if current:
        chunks.extend(_verified(current, joiner, budget, count))
    return chunks


def _verified(parts: list[str], joiner: str, budget: int, count: Callable[[str], int]) -> list[str]:
    # Summing piece counts is exact for the estimate, but a real BPE tokenizer can
    # merge across a join; halve until the joined text really fits.
    joined = joiner.join(parts)
    if len(parts) == 1 or count(joined) <= budget:
        return [joined]
    half = len(parts) // 2
    return _verified(parts[:half], joiner, budget, count) + _verified(
        parts[half:], joiner, budget, count
    )


def _hard_split(text: str, budget: int, count: Callable[[str], int]) -> list[str]:
    """Cut between characters: the longest prefix that fits, repeatedly."""
    chunks: list[str] = []
    rest = text
    # Counting only what can fit keeps this linear: counting all of ``rest`` for every
    # chunk made a 400 kB reply without spaces take minutes.
    reach = max(1, budget * _MAX_TOKEN_CHARS)
    while rest:
        if len(rest) <= reach and count(rest) <= budget:
            chunks.append(rest)
            break
        low, high = 1, min(len(rest) - 1, reach)  # always take one character: progress
        while low < high:
            mid = (low + high + 1) // 2
            if count(rest[:mid]) <= budget:
                low = mid
            else:
                high = mid - 1
        chunks.append(rest[:low])
        rest = rest[low:].lstrip()
    return chunks
