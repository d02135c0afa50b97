"""What sleuth knows about models, offline: context window, price and tokenizer.

The facts live in ``sleuth/data/models.toml`` (package data) so they can be updated
without touching code; the matching rules are documented at the top of that file.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files

#: Context window assumed for a model the table does not know. Small on purpose:
#: guessing too low costs extra chunks, guessing too high makes servers reject
#: (or, like Ollama, silently truncate) prompts.
DEFAULT_CONTEXT_WINDOW = 8192

_NOT_KEPT = re.compile(r"[^a-z0-9.]+")


@dataclass(frozen=True)
class ModelInfo:
    """One model's facts; ``known`` is False when the defaults were used."""

    name: str
    context_window: int
    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    encoding: str | None = None
    known: bool = True

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """Estimated price of one call, or None when the price is not in the table."""
        if self.input_usd_per_mtok is None or self.output_usd_per_mtok is None:
            return None
        return (
            prompt_tokens * self.input_usd_per_mtok + completion_tokens * self.output_usd_per_mtok
        ) / 1_000_000


def normalise(name: str) -> str:
    """The key a model name is matched on (see the rules in models.toml)."""
    key = name.strip().lower()
    key = key.removeprefix("ft:")  # fine-tuned OpenAI models: ft:<base>:<org>::<id>
    key = key.rsplit("/", 1)[-1]  # gateway and Hugging Face prefixes: openai/gpt-4o
    key = key.split(":", 1)[0]  # Ollama tags: llama3.1:8b
    key = _NOT_KEPT.sub("", key)
    return key.removeprefix("meta")  # meta-llama-3.1-8b -> llama3.18b


@lru_cache(maxsize=1)
def _table() -> dict[str, ModelInfo]:
    raw = (files("sleuth") / "data" / "models.toml").read_text(encoding="utf-8")
    models = tomllib.loads(raw)["models"]
    table: dict[str, ModelInfo] = {}
    for name, facts in models.items():
        table[normalise(name)] = ModelInfo(
            name=name,
            context_window=int(facts["context_window"]),
            input_usd_per_mtok=facts.get("input_usd_per_mtok"),
            output_usd_per_mtok=facts.get("output_usd_per_mtok"),
            encoding=facts.get("encoding"),
        )
    return table


def model_info(model: str | None) -> ModelInfo:
    """The table entry whose key is the longest prefix of ``model``'s normalised name.

    Unknown (or empty) names get ``DEFAULT_CONTEXT_WINDOW``, no price and
    ``known=False``, so callers can tell the user the window is a guess.
    """
    key = normalise(model or "")
    best: str | None = None
    if key:
        for candidate in _table():
            if key.startswith(candidate) and (best is None or len(candidate) > len(best)):
                best = candidate
    if best is None:
        return ModelInfo(name=model or "", context_window=DEFAULT_CONTEXT_WINDOW, known=False)
    return _table()[best]


def known_models() -> list[str]:
    """The model names in the table, as written there."""
    return [info.name for info in _table().values()]
