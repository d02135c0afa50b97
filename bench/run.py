"""The whole benchmark suite: ``python -m bench`` (or ``python bench/run.py``).

The parts are registered in :mod:`bench.parts` (one line each); by default the suite
runs timing, recall, footprint, start-up, documents mode and an extraction sample, on
the **tune** split (:mod:`bench.splits`); ``--only`` names parts (relevance, deep,
batch and determinism run only when named), ``--split dev`` judges a change.

``python -m bench --final`` runs every part on the **test** split, the only way the test
split runs, and writes its figures with their provenance (split, seed, date, commit,
command: :mod:`bench.final`) to ``bench/figures/``; ``--limit N`` (at most N questions per
question set) checks the machinery in minutes and marks the files as not figures.

Parts, each printed as a Markdown table (bench/README.md says what every column means):

* ``timing`` (:mod:`bench.timing`): depth-2, 5-source runs of the split's timing
  questions (:mod:`bench.topics`), no-LLM and LLM, at real latencies: wall time against
  the run's critical path, the chain and the waste (:mod:`bench.chain`), model calls and
  tokens, fetches; then the extraction time of every page they fetched, sleuth's
  against trafilatura's, with its defaults and in ``fast`` mode (:mod:`bench.pagetime`).
* ``recall`` (:mod:`bench.recall`): the split's HotpotQA questions whose report cites
  every gold page.
* ``footprint`` (:mod:`bench.footprint`), ``startup`` (:mod:`bench.startup`), ``docs``
  (:mod:`bench.docs_scale`): the program's start, memory and documents mode.
* ``extraction`` (:mod:`bench.extraction`): F1 against trafilatura on the split's pages.
* ``relevance`` (:mod:`bench.relevance`), ``deep`` (:mod:`bench.deep`), ``batch``
  (:mod:`bench.batch`), ``determinism`` (:mod:`bench.determinism`).

Every world (:mod:`bench.world`) puts each page on its real site's host
(:mod:`bench.hosts`), so sleuth's per-host politeness binds; ``--hosts page`` gives
every page a host of its own (the world before 2026-11-28).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # python bench/run.py
    sys.path.insert(0, str(REPO))

from bench.client import world  # noqa: E402
from bench.data import DataMismatch, verify  # noqa: E402
from bench.final import FIGURES, provenance, write  # noqa: E402
from bench.hosts import HOST_MODES  # noqa: E402
from bench.parts import PARTS, Context, Figures, Part, by_name  # noqa: E402
from bench.splits import SPLITS  # noqa: E402
from bench.world import data_dir  # noqa: E402

_DATA = ("hotpotqa", "aeb", "wcxb-dev", "readability", "postlight")


def _part_options(parser: argparse.ArgumentParser) -> None:
    """The options of the built-in parts (a new part may add its own: bench/parts.py)."""
    parser.add_argument("--pipeline", choices=("both", "llm", "no-llm"), default="both")
    parser.add_argument(
        "--page-repeat",
        type=int,
        default=2,
        help="timing: times each fetched page is extracted (quickest kept); 0 skips it",
    )
    parser.add_argument("--recall-jobs", type=int, default=5)
    parser.add_argument("--recall-scale", type=float, default=1.0)
    parser.add_argument(
        "--extraction",
        choices=("sample", "full", "none"),
        default="sample",
        help="sample: --extraction-sample WCXB pages of the split, its AEB and Readability "
        "pages; full: all of them (--final); none: skip",
    )
    parser.add_argument("--extraction-sample", type=int, default=150)
    parser.add_argument("--relevance-scale", type=float, default=0.25)
    parser.add_argument("--relevance-jobs", type=int, default=5)
    parser.add_argument("--deep-scale", type=float, default=0.25)
    parser.add_argument("--deep-jobs", type=int, default=4)
    parser.add_argument(
        "--deep-timing", type=int, default=3, help="deep: the split's first N timing questions"
    )
    parser.add_argument("--startup-repeat", type=int, default=7)
    parser.add_argument("--docs-files", type=int, default=50_000)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    names = [p.name for p in PARTS]
    parser.add_argument("--seed", type=int, default=8, help="the world's latency seed")
    parser.add_argument(
        "--split",
        choices=SPLITS,
        default="tune",
        help="whose questions and pages (bench/splits.py; test: only with --final)",
    )
    parser.add_argument(
        "--final",
        action="store_true",
        help="every part on the test split; writes the figures with their provenance",
    )
    parser.add_argument(
        "--limit", type=int, default=None, help="at most N questions per question set (a check)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"write the figures here as JSON and Markdown (--final: {FIGURES})",
    )
    parser.add_argument("--only", action="append", choices=names, help="run only these parts")
    parser.add_argument("--skip", action="append", choices=names, default=[], help="leave out")
    parser.add_argument(
        "--hosts", choices=HOST_MODES, default="site", help="bench.world --hosts (bench/hosts.py)"
    )
    parser.add_argument(
        "--kinds", default=None, help="the suite world's page sets (bench.world --kinds)"
    )
    _part_options(parser)
    parser.add_argument("--json", type=Path, default=None, help="also write the record here")
    for part in PARTS:
        part.add_options(parser)
    return parser.parse_args(argv)


def chosen_parts(args: argparse.Namespace) -> list[Part]:
    """The parts this run runs: ``--only``'s, else --final's or the default ones, less
    ``--skip`` (and ``--extraction none``)."""
    if args.only:
        parts = by_name(args.only)
    else:
        parts = [p for p in PARTS if (p.final if args.final else p.default)]
    skip = set(args.skip) | ({"extraction"} if args.extraction == "none" else set())
    return [p for p in parts if p.name not in skip]


def _run_part(part: Part, ctx: Context) -> tuple[Figures, float, str]:
    """One part: its figures, wall seconds and the error it ended with ("" if none)."""
    began = time.monotonic()
    try:
        figures = part.load()(ctx)
        error = ""
    except Exception as exc:  # one part's failure is recorded; the others still run
        error = f"{type(exc).__name__}: {exc}"
        figures = Figures(f"## {part.name}\n\nFAILED: {error}\n")
        print(f"{part.name} failed: {error}", file=sys.stderr)
    return figures, time.monotonic() - began, error


def _with_data(parts: list[Part]) -> list[Part] | None:
    """The parts that can run on the data there is (without it, only docs); None when the
    data is not what ``bench/data.sha256`` says (the reason printed)."""
    if not (data_dir() / "hotpotqa").is_dir():
        print(f"no benchmark data at {data_dir()} (see bench/README.md): only docs runs")
        return [p for p in parts if p.name == "docs"]
    try:  # what the world serves (bench/world.py), as far as it is there
        verify([name for name in _DATA if (data_dir() / name).is_dir()])
    except DataMismatch as mismatch:
        print(mismatch, file=sys.stderr)
        return None
    return parts


def _entry(figures: Figures, part: Part, split: str, wall: float, error: str) -> dict[str, Any]:
    """A part's entry in the run's record."""
    return {
        "split": split if part.split else "none (the program)",
        "markdown": figures.markdown,
        "data": figures.data,
        "settings": figures.settings,
        "wall_s": wall,
        "error": error,
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.split == "test" and not args.final:
        print(
            "python -m bench: the test split runs only through --final (bench/splits.py)",
            file=sys.stderr,
        )
        return 2
    split = "test" if args.final else args.split
    parts = _with_data(chosen_parts(args))
    if parts is None:
        return 1
    record: dict[str, Any] = {
        "provenance": provenance(
            argv,
            split=split,
            seed=args.seed,
            final=args.final,
            limit=args.limit,
            hosts=args.hosts,
        ),
        "parts": {},
    }
    out = args.out or (FIGURES if args.final else None)
    stem: str | None = None
    pipelines = {"both": (False, True), "llm": (True,), "no-llm": (False,)}[args.pipeline]
    ctx = Context(split, args.seed, pipelines, args, args.limit, args.final, args.hosts)
    began = time.monotonic()
    failed = False
    with ExitStack() as stack:
        w = None
        if any(p.world for p in parts):
            kinds = ["--kinds", args.kinds] if args.kinds else []
            w = stack.enter_context(world(args.seed, args=[*ctx.world_args(), *kinds]))
        # The parts in the suite's world first, then those with worlds of their own.
        for part in sorted(parts, key=lambda p: not p.world):
            here = Context(**{**vars(ctx), "world": w if part.world else None})
            figures, wall, error = _run_part(part, here)
            failed |= bool(error)
            print(f"\n{figures.markdown.rstrip()}\n", flush=True)
            record["parts"][part.name] = _entry(figures, part, split, wall, error)
            record["load_end"] = round(os.getloadavg()[0], 2)
            if out is not None:  # after every part: a late failure loses nothing
                json_path, md_path = write(out, record, stem)
                stem = json_path.stem
    record["total_s"] = time.monotonic() - began
    print(f"suite: {record['total_s']:.0f} s")
    if out is not None:
        json_path, md_path = write(out, record, stem)
        print(f"figures: {json_path} and {md_path}", file=sys.stderr)
    if args.json is not None:
        args.json.write_text(json.dumps(record, indent=1, default=str), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
