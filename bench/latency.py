"""Seeded latencies that look like the internet's, for the benchmark world.

Every delay is a pure function of the seed and what is asked (the query, the page's
path, the reply's length), so two runs of the same suite meet the same world; a
global ``scale`` shrinks all of them at once (the HotpotQA recall part uses it).

* search: uniform between 300 and 900 ms per query;
* page: log-normal with median 400 ms and 10% of pages over 3 s; 3% never finish
  (the server holds the request until the client gives up);
* model: time to first token (0.5 s) + completion tokens / throughput (100 tokens/s).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = ["Latency", "tokens"]

#: z of the 90th percentile of a standard normal distribution.
_Z90 = 1.2815515655446004


def tokens(text: str) -> int:
    """Tokens of ``text`` as a BPE tokenizer counts English prose: about 4 characters each."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


@dataclass(frozen=True)
class Latency:
    """The world's delays in seconds; see the module docstring."""

    seed: int = 8
    scale: float = 1.0
    search_min: float = 0.3
    search_max: float = 0.9
    page_median: float = 0.4
    #: The page latency that 10% of pages exceed.
    page_p90: float = 3.0
    #: Share of pages that never finish.
    page_hang: float = 0.03
    ttft: float = 0.5
    tokens_per_s: float = 100.0

    def _rng(self, *key: object) -> random.Random:
        # A str seed is hashed with SHA-512 by random.Random: stable across processes.
        return random.Random("|".join(map(str, (self.seed, *key))))

    def search(self, query: str) -> float:
        """Seconds before a search for ``query`` answers."""
        return self.scale * self._rng("search", query).uniform(self.search_min, self.search_max)

    def page(self, path: str) -> float | None:
        """Seconds before the page at ``path`` answers; None: it never does."""
        rng = self._rng("page", path)
        if rng.random() < self.page_hang:
            return None
        sigma = math.log(self.page_p90 / self.page_median) / _Z90
        return self.scale * self.page_median * math.exp(sigma * rng.gauss(0.0, 1.0))

    def llm(self, completion_tokens: int) -> float:
        """Seconds a model takes to send a reply of ``completion_tokens`` tokens."""
        return self.scale * (self.ttft + completion_tokens / self.tokens_per_s)
