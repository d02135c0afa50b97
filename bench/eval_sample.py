"""Write the question set ``sleuth eval --sample hotpotqa`` ships: ``python -m bench.eval_sample``.

Twenty HotpotQA questions of the tune split (0-49; never the test split, 75-99) with
their gold answers (``questions.jsonl``), and the paragraphs of their contexts
(HotpotQA's distractor setting: the two gold paragraphs and eight distractors each) as
``docs.jsonl`` (``{"title", "text"}`` a line), which ``sleuth eval`` writes out as a
folder of Markdown notes on first use. Left out: yes/no answers and answers the
question itself names (a no-model Answer holds them whatever it found), and question 12,
whose gold answer ("6.21 e6hL") is an error of the data set.

The set is package data under ``sleuth/data/eval/hotpotqa/``; rerun this after changing
:data:`PICKED` and commit the result.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # python bench/eval_sample.py
    sys.path.insert(0, str(REPO))

from bench.client import hotpot_questions  # noqa: E402

#: The tune-split questions shipped (HotpotQA order in the benchmark data).
PICKED = (0, 2, 3, 5, 6, 7, 9, 11, 13, 15, 16, 19, 20, 21, 22, 23, 24, 25, 26, 27)
OUT = REPO / "sleuth" / "data" / "eval" / "hotpotqa"


def main() -> int:
    """Write questions.jsonl and docs.jsonl (replacing what is there)."""
    every = hotpot_questions()
    assert all(n < 50 for n in PICKED), "only the tune split (0-49) may ship"
    lines, notes = [], {}
    for n in PICKED:
        q = every[n]
        lines.append(
            json.dumps(
                {
                    "id": q["_id"],
                    "question": " ".join(q["question"].split()),
                    "answer": q["answer"],
                },
                ensure_ascii=False,
            )
        )
        for title, sentences in q["context"]:
            notes[title] = "".join(sentences).strip()
    docs = [json.dumps({"title": t, "text": notes[t]}, ensure_ascii=False) for t in sorted(notes)]
    (OUT / "docs.jsonl").write_text("\n".join(docs) + "\n", encoding="utf-8")
    (OUT / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} questions, {len(notes)} notes in {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
