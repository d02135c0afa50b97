"""Train the block model of ``sleuth/fetch/_extractors.py`` on WCXB's tune split.

Two steps, so that training needs no dependency the project does not have:

    python bench/train_extractor.py features   # project venv: blocks, features, labels -> .npz
    python bench/train_extractor.py fit        # any Python with scikit-learn: -> _block_model.py

Only pages of the *tune* split (see ``bench/extraction.py``) are read; the held-out
split stays unseen. A block's label is the share of its word trigrams (or, for
blocks under three words, its word sequence) found in the page's ground truth.
WCXB is CC BY 4.0 (Murrough Foley, github.com/Murrough-Foley/web-content-extraction-benchmark);
the shipped model is derived from it, with attribution in the model module.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.extraction import DEFAULT_DATA, wcxb_pages

WORK = Path("/tmp/sleuth-extract-train")
MODEL = Path(__file__).resolve().parents[1] / "sleuth" / "fetch" / "_block_model.py"
_WORD = re.compile(r"\w+")


def _label(tokens: list[str], truth_grams: set[tuple[str, ...]], truth_text: str) -> float:
    if len(tokens) >= 3:
        grams = [tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)]
        return sum(g in truth_grams for g in grams) / len(grams)
    return float(f" {' '.join(tokens)} " in truth_text)


def page_rows(job: tuple[str, str | None, str]) -> dict[str, Any]:
    """Features and labels of one page's blocks."""
    from sleuth.fetch.extract import _block_inputs

    path, url, truth = job
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as handle:
        html = handle.read()
    got = _block_inputs(html, url)
    if got is None:
        return {"X": [], "y": [], "texts": []}
    blocks, matrix = got[0], got[1]
    truth_tokens = _WORD.findall(truth.lower())
    grams = {tuple(truth_tokens[i:i + 3]) for i in range(len(truth_tokens) - 2)}
    truth_text = f" {' '.join(truth_tokens)} "
    texts = [b.text for b in blocks]
    labels = [_label(_WORD.findall(t.lower()), grams, truth_text) for t in texts]
    return {"X": matrix.tolist(), "y": labels, "texts": texts}


def build_features(jobs: int) -> None:
    """Write one JSON line per tune page: id, kind, url, truth, block texts, X, y."""
    pages = [p for p in wcxb_pages(DEFAULT_DATA / "wcxb-dev") if p.split == "tune"]
    WORK.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(jobs) as pool, (WORK / "blocks.jsonl").open("w") as out:
        work = [(str(p.path), p.url, p.truth) for p in pages]
        for page, rows in zip(pages, pool.map(page_rows, work, chunksize=4), strict=True):
            rows.update(id=page.id, kind=page.kind, url=page.url, truth=page.truth)
            out.write(json.dumps(rows) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=("features", "fit"))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    if args.step == "features":
        build_features(args.jobs)
    else:
        from bench._fit_blocks import fit

        fit(WORK / "blocks.jsonl", MODEL)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
