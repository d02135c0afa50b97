"""Documents mode on a large folder: ``python -m bench --only docs``.

(Or ``python -m bench.docs_scale``.) Generates ``--files`` small Markdown notes (default
50,000, in folders of 100, dated an hour back as a folder of old notes would be) in a
temporary directory, indexes them once into a fresh store (timed: the first index),
then times what every later run pays before its first documents search: bringing the
index up to date (:func:`sleuth.store.index_folder`) on the unchanged folder,
``--repeat`` times (median and range); and one FTS5 search, for scale. Finally one file
is edited in place, one added and one removed, and the next update must see all three
(it is timed too: with files modified just before it, every file is compared).

Needs no benchmark data.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # python bench/docs_scale.py
    sys.path.insert(0, str(REPO))

from bench.parts import Context, Figures  # noqa: E402
from sleuth.extraction.documents import DocumentExtractor  # noqa: E402
from sleuth.store import Store, index_folder, search_docs  # noqa: E402

__all__ = ["DocsScale", "generate", "measure", "part", "table"]

PER_FOLDER = 100
WORDS = [
    "granite",
    "basalt",
    "quartz",
    "feldspar",
    "mica",
    "obsidian",
    "pumice",
    "shale",
    "slate",
    "marble",
    "limestone",
    "sandstone",
    "gneiss",
    "schist",
    "chalk",
    "flint",
    "jasper",
    "agate",
    "onyx",
    "opal",
]


@dataclass
class DocsScale:
    files: int
    first_index: float
    unchanged: list[float]
    unchanged_cpu: list[float]
    search: float
    after_edit: float
    seen: str

    @property
    def unchanged_median(self) -> float:
        return statistics.median(self.unchanged)


def generate(root: Path, files: int) -> None:
    """``files`` small notes under ``root``, ``PER_FOLDER`` to a folder."""
    for n in range(files):
        folder = root / f"f{n // PER_FOLDER:04d}"
        if n % PER_FOLDER == 0:
            folder.mkdir(parents=True)
        words = " ".join(WORDS[(n * 7 + i) % len(WORDS)] for i in range(12))
        (folder / f"note{n:06d}.md").write_text(
            f"# Note {n}\n\nAbout {words} number {n}.\n", "utf-8"
        )
    hour = 3600 * 1_000_000_000
    for path in [root, *root.rglob("*")]:
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - hour))


def _timed_index(
    store: Store, folder: Path, read: DocumentExtractor
) -> tuple[float, object, float]:
    """Wall seconds, the report, and CPU seconds (this process: load-independent)."""
    start, cpu = time.perf_counter(), time.process_time()
    report = index_folder(store, folder, read)
    return time.perf_counter() - start, report, time.process_time() - cpu


def measure(files: int, repeat: int = 5) -> DocsScale:
    """Generate, index once, then time ``repeat`` updates of the unchanged folder and one
    update after an edit, an addition and a removal."""
    read = DocumentExtractor(None)
    with tempfile.TemporaryDirectory(prefix="sleuth-docs-scale-") as tmp:
        folder, home = Path(tmp) / "notes", Path(tmp) / "home"
        generate(folder, files)
        store = Store(home)
        try:
            first = _timed_index(store, folder, read)[0]
            runs = [_timed_index(store, folder, read) for _ in range(repeat)]
            start = time.perf_counter()
            search_docs(store, "basalt quartz number 4242", 8, folder)
            search = time.perf_counter() - start
            edited = folder / "f0003" / "note000300.md"
            edited.write_text(edited.read_text("utf-8") + "\nEdited: a zircon crystal.\n", "utf-8")
            (folder / "f0004" / "added.md").write_text("# Added\n\nA new olivine note.\n", "utf-8")
            (folder / "f0005" / "note000500.md").unlink()
            after, report, _ = _timed_index(store, folder, read)
            found = {
                h.path.rsplit("/", 1)[-1] for h in search_docs(store, "zircon olivine", 8, folder)
            }
            gone = all(
                not h.path.endswith("note000500.md")
                for h in search_docs(store, "number 500", 50, folder)
            )
            seen = (
                f"edited {'yes' if 'note000300.md' in found else 'NO'}, "
                f"added {'yes' if 'added.md' in found else 'NO'}, "
                f"removed {'yes' if gone else 'NO'} ({report})"
            )
        finally:
            store.close()
    return DocsScale(files, first, [r[0] for r in runs], [r[2] for r in runs], search, after, seen)


def table(result: DocsScale) -> str:
    r = result
    return "\n".join(
        [
            "| documents folder | value | target |",
            "|---|---:|---:|",
            f"| files | {r.files:,} | |",
            f"| first index | {r.first_index:.1f} s | |",
            f"| update of the unchanged folder, per run (median of {len(r.unchanged)}) | "
            f"{r.unchanged_median:.3f} s ({min(r.unchanged):.3f}–{max(r.unchanged):.3f}) "
            f"| ≤ 0.2 s |",
            f"| the same, CPU time (median) | {statistics.median(r.unchanged_cpu):.3f} s | |",
            f"| one FTS5 search | {r.search * 1000:.0f} ms | |",
            f"| update after 1 edit, 1 addition, 1 removal | {r.after_edit:.3f} s | |",
            f"| seen after that update | {r.seen.split(' (')[0]} | all yes |",
        ]
    )


def part(ctx: Context) -> Figures:
    """The documents-mode part (no split: the program, on generated notes; a run with
    ``--limit`` checks it on 1,000 files at most)."""
    files = min(ctx.args.docs_files, 1_000) if ctx.limit else ctx.args.docs_files
    print(f"documents mode at {files} files...", file=sys.stderr)
    docs = measure(files)
    head = f"## Documents mode, {files:,} files (no split: the program)"
    return Figures(f"{head}\n\n{table(docs)}\n", vars(docs), {"files": files})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.docs_scale", description=__doc__)
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(table(measure(args.files, args.repeat)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
