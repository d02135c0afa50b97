"""Train the block model of ``sleuth/extraction/model.py`` on WCXB's tune split.

Two steps (scikit-learn is not a dependency of sleuth: ``pip install -e '.[bench]'``):

    python bench/train_extractor.py features   # blocks, features, labels -> WORK/blocks.jsonl
    python bench/train_extractor.py fit        # scikit-learn: -> sleuth/data/block_model.json
    python bench/train_extractor.py fit-plain  # only the ``plain`` ensemble, into that file

The model file holds two ensembles: ``blocks`` reads trafilatura's text (pages that say
they are articles, where sleuth runs trafilatura) and ``plain`` does without it (every
other page); ``fit`` trains both, ``fit-plain`` only the second, keeping the first.

The data is ``../shared/data/wcxb-dev`` (``--data`` or ``$SLEUTH_BENCH_DATA`` for its
parent), checked against ``bench/data.sha256`` before anything is read; ``WORK`` is
``build/train-extractor`` in the checkout (``--work``); ``--out`` writes the model
elsewhere than the shipped file (to compare a retrained model with it).

Only pages of the *tune* split (see ``bench/extraction.py``) are read; the held-out
split stays unseen. A block's label is the share of its words that an in-order
alignment of the whole page's words with the ground truth's words matches (see
``block_labels``).
WCXB is CC BY 4.0 (Murrough Foley, github.com/Murrough-Foley/web-content-extraction-benchmark);
the shipped model is derived from it, with attribution in the model file ("about").
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import json
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.data import DataMismatch, data_dir, digest, verify
from bench.extraction import wcxb_pages

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "train-extractor"
MODEL = ROOT / "sleuth" / "data" / "block_model.json"
_WORD = re.compile(r"\w+")


def block_labels(texts: list[str], truth: str) -> list[float]:
    """Each block's share of words that the ground truth holds *at that place*.

    The page's words (block after block) and the truth's words are aligned in order
    (difflib's longest matching runs, then the same left and right of each), and a
    block's label is the share of its words inside a matched run. Labelling a block by
    whether its words occur anywhere in the truth instead (the earlier way) called a
    menu's "Men" or "Laces" main text on a product page whose description says
    "men" and "laces", and taught the model to keep menus: with aligned labels the
    oracle's choice of blocks scores 0.986 on held-out, not 0.953, and the trained
    model 0.873, not 0.861 (bench/README.md).
    """
    tokens = [_WORD.findall(text.lower()) for text in texts]
    page = [word for words in tokens for word in words]
    matched = [False] * len(page)
    truth_words = _WORD.findall(truth.lower())
    if page and truth_words:
        # autojunk off: frequent words ("the", a repeated "Add to cart") must still align.
        runs = difflib.SequenceMatcher(None, page, truth_words, autojunk=False)
        for start, _, size in runs.get_matching_blocks():
            matched[start : start + size] = [True] * size
    labels, at = [], 0
    for words in tokens:
        labels.append(sum(matched[at : at + len(words)]) / max(1, len(words)))
        at += len(words)
    return labels


def page_rows(job: tuple[str, str | None, str]) -> dict[str, Any]:
    """Features and labels of one page's blocks."""
    from sleuth.extraction.html import _block_inputs

    path, url, truth = job
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as handle:
        html = handle.read()
    got = _block_inputs(html, url, with_trafilatura=True)  # (fit zeroes it for the plain model)
    if got is None:
        return {"X": [], "y": [], "texts": []}
    blocks, matrix = got[0], got[1]
    texts = [b.text for b in blocks]
    labels = block_labels(texts, truth)
    return {"X": matrix.tolist(), "y": labels, "texts": texts}


def build_features(data: Path, work: Path, jobs: int) -> None:
    """Write one JSON line per tune page: id, kind, url, truth, block texts, X, y."""
    pages = [p for p in wcxb_pages(data / "wcxb-dev") if p.split == "tune"]
    work.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(jobs) as pool, (work / "blocks.jsonl").open("w") as out:
        work = [(str(p.path), p.url, p.truth) for p in pages]
        for page, rows in zip(pages, pool.map(page_rows, work, chunksize=4), strict=True):
            rows.update(id=page.id, kind=page.kind, url=page.url, truth=page.truth)
            out.write(json.dumps(rows) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/train_extractor.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("step", choices=("features", "fit", "fit-plain"))
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="the folder holding wcxb-dev (default ../shared/data)",
    )
    parser.add_argument(
        "--work", type=Path, default=WORK, help="where features go (default build/train-extractor)"
    )
    parser.add_argument(
        "--out", type=Path, default=MODEL, help="the model file to write (default: the shipped one)"
    )
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    data = args.data or data_dir()
    try:
        verify(["wcxb-dev"], data)
    except DataMismatch as mismatch:
        print(mismatch, file=sys.stderr)
        return 1
    if args.step == "features":
        build_features(data, args.work, args.jobs)
    elif args.step == "fit-plain":
        from bench._fit_blocks import fit_plain

        fit_plain(args.work / "blocks.jsonl", args.out)
    else:
        from bench._fit_blocks import fit

        sha, files = digest(data / "wcxb-dev")
        fit(
            args.work / "blocks.jsonl",
            args.out,
            trained_on=f"wcxb-dev: {files} files, sha256 {sha} (bench/data.sha256), tune split",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
