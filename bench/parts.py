"""The parts of ``python -m bench``: one registry, which ``--final`` runs on the test split.

A part is a function ``part(ctx: Context) -> Figures`` in a bench module. Adding one is
one line in :data:`PARTS`::

    Part("answer", "bench.answer:part", about="answer-first reports: ..."),

with, where the part needs options of its own, ``options="bench.answer:options"``: a
function given the ``python -m bench`` argument parser, which adds them (they reach the
part as ``ctx.args``). The part reads its questions from ``ctx.split`` through
:mod:`bench.splits` (never a split of its own), honours ``ctx.limit`` (at most that many
questions per question set: a quick check of the machinery, not figures), and returns
its Markdown (headed ``## ...``, naming the split and what shaped the figures) and the
data behind it, which ``--final`` writes with the run's provenance (:mod:`bench.final`).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from bench.client import WorldProcess

__all__ = ["PARTS", "Context", "Figures", "Part", "by_name"]

T = TypeVar("T")


@dataclass(frozen=True)
class Context:
    """What a part is run with."""

    split: str
    seed: int
    pipelines: tuple[bool, ...]  # False: no model, True: the world's scripted model
    args: argparse.Namespace  # every option of python -m bench
    limit: int | None = None  # at most this many questions per question set
    final: bool = False  # run by --final: the test split is allowed
    hosts: str = "site"  # bench.hosts: each page on its real site's host, or its own
    world: WorldProcess | None = None  # the suite's world, for parts with world=True

    def cut(self, items: Sequence[T]) -> list[T]:
        """``items``, the first ``limit`` of them when a limit is set."""
        return list(items)[: self.limit] if self.limit else list(items)

    def world_args(self) -> list[str]:
        """``bench.world`` options every world of this run is started with."""
        return ["--hosts", self.hosts]

    def heading(self, title: str, *shaped: str) -> str:
        """A part's ``##`` heading naming its split, seed and what else shaped it."""
        bits = [f"{self.split} split", f"seed {self.seed}", *shaped]
        if self.limit:
            bits.append(f"--limit {self.limit}")
        return f"## {title} ({'; '.join(bits)})"


@dataclass
class Figures:
    """What a part measured: its Markdown, the data behind it and what shaped it."""

    markdown: str
    data: Any = None
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Part:
    """One registered part (see the module docstring)."""

    name: str
    target: str  # "module:function" of the part, imported when it runs
    about: str = ""
    #: Runs in the suite's world (started once for all such parts); else it starts its
    #: own worlds, or needs none.
    world: bool = True
    default: bool = True  # in a plain ``python -m bench``
    final: bool = True  # in ``python -m bench --final``
    #: It reads questions or pages of a split; False: it measures the program (start-up,
    #: memory, documents mode) and its figures belong to no split.
    split: bool = True
    options: str | None = None  # "module:function" adding the part's options to the parser

    def load(self) -> Callable[[Context], Figures]:
        """The part's function."""
        return _resolve(self.target)  # type: ignore[no-any-return]

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """Let the part add its options to ``parser``."""
        if self.options:
            _resolve(self.options)(parser)


def _resolve(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


PARTS: tuple[Part, ...] = (
    Part("timing", "bench.timing:part", "wall against critical path, chain and waste"),
    Part("recall", "bench.recall:part", "HotpotQA: every gold page cited"),
    Part("footprint", "bench.footprint:part", "--help start and peak RSS", split=False),
    Part("startup", "bench.startup:part", "process start to first request", split=False),
    Part("docs", "bench.docs_scale:part", "documents mode", world=False, split=False),
    Part("extraction", "bench.extraction:part", "F1 against trafilatura", world=False),
    Part("relevance", "bench.relevance:part", "on-topic citations", world=False, default=False),
    Part("deep", "bench.deep:part", "deep against quick", default=False),
    Part("answer", "bench.answer:part", "the Answer against the whole report", world=False),
    Part("batch", "bench.batch:part", "sleuth batch", world=False, default=False),
    Part("determinism", "bench.determinism:part", "same sources twice", world=False, default=False),
)


def by_name(names: Sequence[str] | None = None, parts: Sequence[Part] = PARTS) -> list[Part]:
    """The registered parts named (all of them when None), in registry order."""
    known = {p.name: p for p in parts}
    if unknown := [n for n in names or () if n not in known]:
        raise ValueError(f"unknown parts: {', '.join(unknown)} (known: {', '.join(known)})")
    return [p for p in parts if names is None or p.name in names]
