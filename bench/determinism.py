"""Determinism: do two identical documents-mode runs pick the same sources? (issue 23)

The 994 paragraphs of ``hotpotqa_train_corpus.json`` are written as one text file each
(title, blank line, text) into a folder; each of the first ``--questions`` HotpotQA
questions is researched twice over it (``--docs``, search ``local``, no model, one
store shared by both rounds, as a person rerunning a question would), and the sources
of the two rounds compared question by question.

    python -m bench.determinism                      # 100 questions, ~2 min on 2 cores
    python -m bench.determinism --questions 30 --folder build/hotpot-docs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path

from bench.client import hotpot_questions
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.determinism",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--folder", type=Path, default=REPO / "build" / "hotpot-docs")
    args = parser.parse_args(argv)
    path = data_dir() / "hotpotqa" / "hotpotqa_train.json"
    if not path.is_file():
        print(f"no benchmark data at {data_dir()} (see bench/README.md); nothing to do")
        return 0
    questions = [q["question"] for q in hotpot_questions(args.questions)]
    write_folder(args.folder)
    with tempfile.TemporaryDirectory() as home:
        first, second = asyncio.run(rounds(questions, args.folder, Path(home)))
    same = sum(a == b for a, b in zip(first, second, strict=True))
    print(
        f"| questions | same sources both runs | sources per question |\n|---:|---:|---:|\n"
        f"| {len(questions)} | {same} | {statistics.fmean(map(len, first)):.2f} |"
    )
    for n, (a, b) in enumerate(zip(first, second, strict=True)):
        if a != b:
            print(f"question {n}: {a} then {b}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
