"""The bar the Answer is held to: ``python -m bench.answer_baseline``.

Issue 36 asks that the no-model report's ``## Answer`` alone hold the gold answer "at
least as often as today's whole no-model report does", today being when the issue was
filed. That report is sleuth as of commit :data:`BEFORE_ANSWER` (main just before the
Answer was merged). This bench exports that commit from git (the bench runs in a clone),
researches each question of a split over HotpotQA's notes with it, in quick and in deep
mode, no model, in a child process whose ``sleuth`` is the exported one, and counts the
reports that hold the gold answer, exactly as :mod:`bench.answer` counts today's whole
report (:func:`bench.answer.reader_view`, :func:`bench.answer.holds`).

The test split runs only with ``--final`` (counts only; nothing is chosen on it).

    python -m bench.answer_baseline --split dev
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # python bench/answer_baseline.py
    sys.path.insert(0, str(REPO))

from bench.answer import gold_aliases, holds, normalise, reader_view, write_notes  # noqa: E402
from bench.data import verify  # noqa: E402

__all__ = ["BEFORE_ANSWER", "measure"]

#: Main just before the Answer branch was merged (e6fb16f's first parent).
BEFORE_ANSWER = "68fb955"

# Run by the child process: the exported sleuth writes each report's Markdown.
_CHILD = """
import asyncio, json, sys
from pathlib import Path
import sleuth
assert sleuth.__file__.startswith(sys.argv[1]), sleuth.__file__
questions = json.loads(Path(sys.argv[2]).read_text())
folder, home, out = Path(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5])
async def main():
    gate = asyncio.Semaphore(2)
    async def one(n, question, mode):
        async with gate:
            report = await sleuth.research(
                question, docs=folder, home=home, no_llm=True, mode=mode
            )
        (out / f"{mode}-{n:03d}.md").write_text(report.markdown, "utf-8")
    for mode in ("quick", "deep"):
        await asyncio.gather(*(one(int(n), q, mode) for n, q in questions.items()))
asyncio.run(main())
"""


def _export(commit: str, into: Path) -> Path:
    """``commit``'s tree under ``into`` (git archive), for its ``sleuth`` package."""
    archive = into / "tree.tar"
    with archive.open("wb") as sink:
        subprocess.run(["git", "archive", commit], cwd=REPO, stdout=sink, check=True)
    root = into / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return root


def measure(split: str, *, final: bool = False, commit: str = BEFORE_ANSWER) -> dict[str, str]:
    """{mode: "held/scored"}: how often ``commit``'s whole no-model report holds the gold
    answer on ``split``'s HotpotQA questions."""
    from bench.client import hotpot_questions
    from bench.splits import HOTPOTQA, refuse_test

    every = hotpot_questions()
    numbers = list(HOTPOTQA[refuse_test(split, final)])
    with tempfile.TemporaryDirectory(prefix="sleuth-baseline-") as tmp:
        base = Path(tmp)
        tree = _export(commit, base)
        write_notes(base / "notes")
        (base / "reports").mkdir()
        asked = {str(n): every[n]["question"] for n in numbers}
        (base / "questions.json").write_text(json.dumps(asked), "utf-8")
        subprocess.run(
            [sys.executable, "-c", _CHILD, str(tree), str(base / "questions.json"),
             str(base / "notes"), str(base / "home"), str(base / "reports")],
            env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "HOME": str(base)},
            cwd=base,  # not the checkout: "python -c" puts the working folder first
            check=True,
        )  # fmt: skip
        out = {}
        for mode in ("quick", "deep"):
            held = scored = 0
            for path in sorted((base / "reports").glob(f"{mode}-*.md")):
                q = every[int(re.findall(r"\d+", path.stem)[0])]
                aliases = gold_aliases(q["answer"])
                if normalise(q["answer"]) in ("yes", "no") or holds(q["question"], aliases):
                    continue
                scored += 1
                held += holds(reader_view(path.read_text("utf-8")), aliases)
            out[mode] = f"{held}/{scored}"
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Print the counts for the split."""
    parser = argparse.ArgumentParser(prog="python -m bench.answer_baseline", description=__doc__)
    parser.add_argument("--split", choices=("tune", "dev", "test"), default="tune")
    parser.add_argument("--final", action="store_true", help="allow the test split")
    parser.add_argument("--commit", default=BEFORE_ANSWER)
    args = parser.parse_args(argv)
    from bench.splits import TestSplitRefused, refuse_test

    try:
        refuse_test(args.split, args.final)
    except TestSplitRefused as exc:
        print(f"bench.answer_baseline: {exc}", file=sys.stderr)
        return 2
    verify(["hotpotqa"])
    for mode, count in measure(args.split, final=args.final, commit=args.commit).items():
        print(f"{mode} {args.split}: whole no-model report at {args.commit} holds gold {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
