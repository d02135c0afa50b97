"""The benchmark data: where it is, and that it is the data the figures were measured on.

The data lives in ``../shared/data`` beside the checkout (or ``$SLEUTH_BENCH_DATA``).
``bench/data.sha256`` holds one SHA-256 per dataset folder, over every file in it (its
path relative to the folder and the SHA-256 of its bytes, sorted by path), with the file
count. Each benchmark and the trainer check the folders they read before they start, so
a figure in bench/README.md is never compared with one measured on other data.

    python -m bench.data               # check every dataset in the manifest
    python -m bench.data --write NAME  # record NAME's current digest (after a deliberate change)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = Path(__file__).with_name("data.sha256")

__all__ = ["MANIFEST", "DataMismatch", "data_dir", "digest", "verify"]


class DataMismatch(Exception):
    """A dataset folder is not the one the manifest names (its message says how)."""


def data_dir() -> Path:
    """``../shared/data`` beside the checkout (or ``$SLEUTH_BENCH_DATA``)."""
    return Path(os.environ.get("SLEUTH_BENCH_DATA", REPO.parent / "shared" / "data"))


def digest(folder: Path) -> tuple[str, int]:
    """SHA-256 of a folder's files (relative paths and contents, sorted) and their count."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    whole = hashlib.sha256()
    for path in files:
        whole.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        whole.update(hashlib.sha256(path.read_bytes()).hexdigest().encode("ascii") + b"\n")
    return whole.hexdigest(), len(files)


def _manifest() -> dict[str, tuple[str, int]]:
    """``{dataset: (sha256, files)}`` from bench/data.sha256 (``sha256  files  name`` lines)."""
    out: dict[str, tuple[str, int]] = {}
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            sha, count, name = line.split(maxsplit=2)
            out[name] = (sha, int(count))
    return out


def verify(names: Iterable[str], root: Path | None = None) -> None:
    """Raise ``DataMismatch`` unless each dataset under ``root`` matches the manifest."""
    root = data_dir() if root is None else root
    expected = _manifest()
    for name in names:
        if name not in expected:
            raise DataMismatch(
                f"{name} has no checksum in {MANIFEST.name}; record it with "
                f"`python -m bench.data --write {name}`"
            )
        want_sha, want_count = expected[name]
        if not (root / name).is_dir():
            raise DataMismatch(
                f"no {name} data at {root / name} (bench/README.md says where "
                "it comes from; $SLEUTH_BENCH_DATA points elsewhere)"
            )
        sha, count = digest(root / name)
        if sha != want_sha:
            raise DataMismatch(
                f"{root / name} is not the data bench/ was measured on: {count} files, "
                f"sha256 {sha[:16]}…, where {MANIFEST.name} expects {want_count} files, "
                f"sha256 {want_sha[:16]}…. Restore it, or record the new data with "
                f"`python -m bench.data --write {name}` and measure again."
            )


def _write(names: Sequence[str], root: Path) -> None:
    rows = _manifest() if MANIFEST.exists() else {}
    for name in names:
        if not (root / name).is_dir():
            raise SystemExit(f"no {name} data at {root / name}")
        rows[name] = digest(root / name)
    header = "# sha256  files  dataset   (bench/data.py: python -m bench.data --write NAME)\n"
    MANIFEST.write_text(
        header
        + "".join(f"{sha}  {count}  {name}\n" for name, (sha, count) in sorted(rows.items())),
        encoding="utf-8",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Check the datasets (exit 1 naming the first that differs) or record new digests."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", type=Path, default=None, help="default: ../shared/data")
    parser.add_argument("--write", nargs="+", metavar="NAME", default=None)
    args = parser.parse_args(argv)
    root = args.data or data_dir()
    if args.write:
        _write(args.write, root)
        print(f"recorded {', '.join(args.write)} in {MANIFEST}")
        return 0
    try:
        verify(sorted(_manifest()), root)
    except DataMismatch as mismatch:
        print(mismatch, file=sys.stderr)
        return 1
    print(f"every dataset in {MANIFEST.name} matches ({root})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
