"""Determinism: do two identical documents-mode runs pick the same sources? (issue 23)

The 994 paragraphs of ``hotpotqa_train_corpus.json`` are written as one text file each
(title, blank line, text) into a folder; each HotpotQA question of the split
(:data:`bench.splits.HOTPOTQA`; ``--questions``: the first N) is researched twice over
it (``--docs``, search ``local``, no model, one store shared by both rounds, as a person
rerunning a question would), and the sources of the two rounds compared question by
question.

    python -m bench.determinism                      # the 50 tune questions, ~1 min
    python -m bench.determinism --split dev --folder build/hotpot-docs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path

from bench.client import hotpot_split
from bench.parts import Context, Figures
from bench.splits import SPLITS, TestSplitRefused, chosen
from bench.world import REPO, data_dir


def write_folder(folder: Path) -> None:
    """One text file per HotpotQA paragraph (kept if the folder is already filled)."""
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        return
    corpus = json.loads(
        (data_dir() / "hotpotqa" / "hotpotqa_train_corpus.json").read_text(encoding="utf-8")
    )
    for n, (title, sentences) in enumerate(corpus.items()):
        (folder / f"{n:04d}.txt").write_text(
            f"{title}\n\n{' '.join(sentences)}\n", encoding="utf-8"
        )


async def rounds(questions: list[str], folder: Path, home: Path) -> list[list[list[str]]]:
    import sleuth

    out = []
    for _ in range(2):
        cited = []
        for question in questions:
            report = await sleuth.research(
                question, docs=folder, search=["local"], home=home, no_llm=True
            )
            cited.append([s.url for s in report.sources])
        out.append(cited)
    return out


def measure(split: str, limit: int | None, folder: Path, final: bool = False) -> str:
    """Both rounds over the split's questions; the Markdown table (differences on stderr)."""
    (split,) = chosen([split], final)
    questions = [q["question"] for q in hotpot_split(split, limit)]
    write_folder(folder)
    with tempfile.TemporaryDirectory() as home:
        first, second = asyncio.run(rounds(questions, folder, Path(home)))
    same = sum(a == b for a, b in zip(first, second, strict=True))
    for n, (a, b) in enumerate(zip(first, second, strict=True)):
        if a != b:
            print(f"question {n}: {a} then {b}", file=sys.stderr)
    return (
        f"| questions | same sources both runs | sources per question |\n|---:|---:|---:|\n"
        f"| {len(questions)} | {same} | {statistics.fmean(map(len, first)):.2f} |"
    )


def part(ctx: Context) -> Figures:
    """The determinism part on ``ctx.split``'s HotpotQA questions (no world: documents)."""
    print("determinism (documents mode, twice)...", file=sys.stderr)
    text = measure(ctx.split, ctx.limit, REPO / "build" / "hotpot-docs", ctx.final)
    head = ctx.heading("Determinism: documents mode twice, no model")
    return Figures(f"{head}\n\n{text}\n", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.determinism",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--split", choices=SPLITS, default="tune")
    parser.add_argument("--questions", type=int, default=None, help="the first N of the split")
    parser.add_argument("--folder", type=Path, default=REPO / "build" / "hotpot-docs")
    args = parser.parse_args(argv)
    try:
        chosen([args.split])
    except TestSplitRefused as refused:
        print(f"python -m bench.determinism: {refused}", file=sys.stderr)
        return 2
    path = data_dir() / "hotpotqa" / "hotpotqa_train.json"
    if not path.is_file():
        print(f"no benchmark data at {data_dir()} (see bench/README.md); nothing to do")
        return 0
    print(measure(args.split, args.questions, args.folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
