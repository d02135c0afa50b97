"""The Answer's sentence choice, replayed: ``python -m bench.answer_replay``.

``python -m bench.answer`` researches every question (minutes a split). The sentence
choice only needs what the research handed it: the question, the sources, their stored
texts and (deep) the sub-questions with their source ids. ``--capture`` runs the research
once per question (quick and deep, no model, HotpotQA's notes as ``--docs``) and keeps
those inputs in a pickle; a replay then runs only :func:`sleuth.stages.answer.best_answer`
(quick) or :func:`sleuth.stages.answer.tree_answers` (deep) on them, in seconds, and counts
how often the Answer holds the gold answer, beside how often any candidate sentence does
(the most a choice can reach). The splits are bench/answer.py's (tune 0-49, dev 50-74).

    python -m bench.answer_replay --split tune --capture /tmp/answer-tune.pkl
    python -m bench.answer_replay --split tune --replay /tmp/answer-tune.pkl [--misses]
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.answer import SPLITS, gold_aliases, holds, normalise, write_notes  # noqa: E402

__all__ = ["Captured", "capture", "replay"]


@dataclass
class Captured:
    """What the sentence choice was handed for one question in one mode."""

    number: int
    mode: str
    question: str
    answer: str
    sources: list[Any]
    texts: dict[int, str]
    groups: list[tuple[str, list[int]]]


def capture(split: str, jobs: int) -> list[Captured]:
    """Research the split's questions (quick and deep) and keep the answer's inputs."""
    import sleuth
    import sleuth.stages.answer as answer_module
    from bench.client import hotpot_questions

    every = hotpot_questions()
    seen: dict[tuple[str, str], Captured] = {}
    original_best, original_tree = answer_module.best_answer, answer_module.tree_answers
    mode_now = {"mode": "quick"}

    def best(question: str, sources: Any, texts: Any, **kw: Any) -> Any:
        if mode_now["mode"] == "quick" and not kw:
            # The answer stage's call holds every source; a page scored ahead holds one.
            key = ("quick", " ".join(question.split()))
            if key not in seen or len(sources) >= len(seen[key].sources):
                seen[key] = Captured(0, "quick", question, "", list(sources), dict(texts), [])
        return original_best(question, sources, texts, **kw)

    def tree(topic: str, sources: Any, texts: Any, groups: Any) -> Any:
        groups = [(q, list(ids)) for q, ids in groups]
        seen[("deep", " ".join(topic.split()))] = Captured(
            0, "deep", topic, "", list(sources), dict(texts), groups
        )
        return original_tree(topic, sources, texts, groups)

    answer_module.best_answer = best  # type: ignore[assignment]
    answer_module.tree_answers = tree  # type: ignore[assignment]
    out = []
    with tempfile.TemporaryDirectory(prefix="sleuth-replay-") as tmp:
        folder, home = Path(tmp) / "notes", Path(tmp) / "home"
        write_notes(folder)
        for mode in ("quick", "deep"):
            mode_now["mode"] = mode

            async def run(mode: str = mode) -> None:
                gate = asyncio.Semaphore(jobs)

                async def one(q: dict[str, Any]) -> None:
                    async with gate:
                        await sleuth.research(
                            q["question"], docs=folder, home=home, no_llm=True, mode=mode
                        )

                await asyncio.gather(*(one(every[n]) for n in SPLITS[split]))

            asyncio.run(run())
            for n in SPLITS[split]:
                got = seen.get((mode, " ".join(every[n]["question"].split())))
                if got is not None:
                    got.number, got.answer = n, every[n]["answer"]
                    out.append(got)
            print(f"  captured {mode} {split}", file=sys.stderr, flush=True)
    answer_module.best_answer, answer_module.tree_answers = original_best, original_tree
    return out


def _scored(item: Captured) -> bool:
    aliases = gold_aliases(item.answer)
    return normalise(item.answer) not in ("yes", "no") and not holds(item.question, aliases)


def choose(item: Captured) -> list[Any]:
    """The Answer's sentences for ``item`` with the code as it is now."""
    from sleuth.stages.answer import best_answer, tree_answers

    if item.mode == "quick":
        return best_answer(item.question, item.sources, item.texts)
    overall, _ = tree_answers(item.question, item.sources, item.texts, item.groups)
    return overall


def replay(items: Sequence[Captured], misses: bool = False) -> dict[str, tuple[int, int, int]]:
    """{mode: (Answer holds gold, some candidate holds it, scored)}; ``misses`` prints the
    questions whose gold a candidate holds and the Answer does not."""
    from sleuth.stages.answer import candidates_of
    from sleuth.stages.write import answer_lines

    out: dict[str, tuple[int, int, int]] = {}
    for item in items:
        if not _scored(item):
            continue
        aliases = gold_aliases(item.answer)
        said = "\n".join(answer_lines(choose(item)))
        hit = holds(said, aliases)
        reachable = any(holds(c.text, aliases) for c in candidates_of(item.sources, item.texts))
        a, r, s = out.get(item.mode, (0, 0, 0))
        out[item.mode] = (a + hit, r + reachable, s + 1)
        if misses and reachable and not hit:
            print(f"\n[{item.mode} {item.number}] {item.question} -> {item.answer}")
            print(said)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.answer_replay", description=__doc__)
    parser.add_argument("--split", choices=sorted(SPLITS), default="tune")
    parser.add_argument("--capture", type=Path, help="research the split and keep the inputs")
    parser.add_argument("--replay", type=Path, help="choose again from kept inputs")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--misses", action="store_true")
    args = parser.parse_args(argv)
    if args.capture:
        items = capture(args.split, args.jobs)
        args.capture.write_bytes(pickle.dumps(items))
    else:
        items = pickle.loads(args.replay.read_bytes())
    for mode, (hit, reachable, scored) in replay(items, args.misses).items():
        print(f"{mode} {args.split}: Answer {hit}/{scored}, a candidate {reachable}/{scored}")
    return 0


if __name__ == "__main__":
    # Run as the importable module, so that the pickle names a class a replay can load.
    from bench.answer_replay import main as _main

    raise SystemExit(_main())
