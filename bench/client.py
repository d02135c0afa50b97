"""The benchmark world seen from the runner: its process, and what a report cites.

:class:`WorldProcess` starts ``python -m bench.world`` (:mod:`bench.world`) in a
subprocess, so the world's CPU never competes with sleuth's, and talks to its control
endpoints; :func:`cited_urls` reads which sources a report cites.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx

from bench.splits import HOTPOTQA
from bench.world import MODEL, REPO, data_dir

__all__ = [
    "WorldProcess",
    "cited_ids",
    "cited_urls",
    "gold_shares",
    "hotpot_questions",
    "hotpot_split",
    "world",
]


# -- the world, in its own process ---------------------------------------------------------
class WorldProcess:
    """``python -m bench.world`` in a subprocess; stopped by closing its stdin."""

    def __init__(self, seed: int, scale: float = 1.0, args: Sequence[str] = ()) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.world",
                "--seed",
                str(seed),
                "--scale",
                str(scale),
                *args,
            ],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the benchmark world did not start")
        info = json.loads(line)
        self.base_url: str = info["base_url"]
        self.llm_url: str = info["llm_url"]
        self.http = httpx.Client(base_url=self.base_url, trust_env=False, timeout=30)
        self.pages: list[dict[str, Any]] = self.http.get("/_bench/pages").json()
        self.sizes: dict[str, int] = {p["url"]: int(p["size"]) for p in self.pages}

    def log(self, clear: bool = True) -> list[dict[str, Any]]:
        """The world's request log (emptied by default)."""
        return list(self.http.get("/_bench/log", params={"clear": "1"} if clear else {}).json())

    def body(self, url: str) -> bytes:
        """A page's bytes, at once (no latency)."""
        return self.http.get("/_bench/body", params={"url": url}).content

    def scale(self, value: float) -> None:
        self.http.post("/_bench/scale", params={"value": str(value)})

    def close(self) -> None:
        self.http.close()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def options(self, llm: bool, **extra: Any) -> dict[str, Any]:
        """research() keywords for a depth-2, 5-source run against this world (``extra``
        overrides them)."""
        opts: dict[str, Any] = {
            "search": "searxng",
            "searxng_url": self.base_url,
            "allow_private_urls": True,
            "no_store": True,
            "depth": 2,
            "max_sources": 5,
        }
        if llm:
            opts.update(base_url=self.llm_url, model=MODEL, context_window=32768)
        else:
            opts["no_llm"] = True
        return {**opts, **extra}

    def cli_args(self, llm: bool) -> list[str]:
        args = [
            "--search",
            "searxng",
            "--searxng-url",
            self.base_url,
            "--allow-private-urls",
            "--no-store",
            "--depth",
            "2",
            "--max-sources",
            "5",
            "--format",
            "json",
        ]
        if llm:
            return [
                *args,
                "--base-url",
                self.llm_url,
                "--model",
                MODEL,
                "--context-window",
                "32768",
            ]
        return [*args, "--no-llm"]


@contextmanager
def world(seed: int, scale: float = 1.0, args: Sequence[str] = ()) -> Iterator[WorldProcess]:
    """A :class:`WorldProcess` for the ``with`` block (``args``: more ``bench.world`` options)."""
    process = WorldProcess(seed, scale, args)
    try:
        yield process
    finally:
        process.close()


# -- what a report cites --------------------------------------------------------------------
def cited_ids(markdown: str) -> set[int]:
    """The source numbers cited as ``[n]`` in the report before its Sources section."""
    body = re.split(r"^## (?:Sources|来源)\b", markdown, maxsplit=1, flags=re.MULTILINE)[0]
    return {int(n) for n in re.findall(r"\[(\d+)\]", body)}


def cited_urls(report: Any) -> list[str]:
    ids = cited_ids(report.markdown)
    return [s.url for s in report.sources if s.id in ids]


def hotpot_questions(n: int | None = None) -> list[dict[str, Any]]:
    """The HotpotQA questions of the benchmark data (the first ``n``; all when None)."""
    data = json.loads((data_dir() / "hotpotqa" / "hotpotqa_train.json").read_text("utf-8"))
    return list(data[:n])


def hotpot_split(split: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The HotpotQA questions of ``split`` (:data:`bench.splits.HOTPOTQA`), the first
    ``limit`` of them when given. Callers check the split (:func:`bench.splits.chosen`)."""
    every = hotpot_questions()
    chosen = [every[i] for i in HOTPOTQA[split] if i < len(every)]
    return chosen[:limit] if limit else chosen


def gold_shares(
    w: WorldProcess,
    questions: Sequence[dict[str, Any]],
    options: Callable[[], dict[str, Any]],
    jobs: int,
) -> tuple[list[float], float]:
    """Research each HotpotQA question against ``w`` with ``options()``, ``jobs`` at once:
    the share of its gold evidence pages each report cites, and the wall time of all."""
    import sleuth

    by_title = {p["key"]: p["url"] for p in w.pages if p["kind"] == "hotpotqa"}

    async def one(q: dict[str, Any], gate: asyncio.Semaphore) -> float:
        async with gate:
            report = await sleuth.research(q["question"], **options())
        gold = {by_title[t] for t, _ in q["supporting_facts"]}
        return len(gold & set(cited_urls(report))) / len(gold)

    async def every() -> list[float]:
        gate = asyncio.Semaphore(jobs)
        return list(await asyncio.gather(*(one(q, gate) for q in questions)))

    start = time.monotonic()
    shares = asyncio.run(every())
    return shares, time.monotonic() - start
