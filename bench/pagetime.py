"""Per-page extraction time: sleuth's extractor next to trafilatura, page by page.

sleuth's runs do not report how long each page's extraction took, so it is measured
from outside, on the pages a benchmark run fetched: each page's HTML (decoded once as
UTF-8, so decoding is not timed) goes through ``sleuth.extract(html, url)`` (the public
extractor, with its default element cut), through ``trafilatura.extract(html)``
(library defaults) and through ``trafilatura.extract(html, fast=True)`` (without its
readability and justext fallbacks, the way sleuth runs it), in a fresh process of its
own, one page at a time, after one untimed warm-up of each. Each page is timed
``--repeat`` times (default 2) and the quickest kept: the 2-core boxes this runs on are
shared, and the quickest is the page's own cost. The order of the extractors rotates
from page to page.

    python -m bench.pagetime DIR        # DIR/index.json: [{"file", "url", "size"}, ...]

prints one JSON object per page;

    python -m bench.pagetime --sample   # a fixed sample of ../shared/data's pages

times a fixed sample of the benchmark data's pages outside the extraction test split
(:mod:`bench.splits`): every 30th WCXB dev page, every 6th AEB and Readability page,
every 8th Postlight fixture, and WCXB's 12 largest, and prints the table.
:func:`measure` does it for a runner and :func:`table` makes the Markdown table
(median, p95 and max per extractor, and sleuth / trafilatura with its defaults and in
``fast`` mode).

    python -m bench.pagetime --sample --stages

says where sleuth's time goes instead: the CPU milliseconds of each step of
``sleuth.extract`` (parse, hidden text, trafilatura, title and date, the block walk,
features, the model) on the middle half of the sample's pages (by trafilatura's
time, the pages that set the median), each page's quickest of ``--repeat`` runs, in
this process.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PageTime", "measure", "table"]

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class PageTime:
    """One page's extraction seconds with each extractor (the quickest of the repeats)."""

    url: str
    size: int
    sleuth: float
    trafilatura: float
    sleuth_chars: int = 0
    trafilatura_chars: int = 0
    trafilatura_fast: float = math.nan  # trafilatura.extract(html, fast=True)
    trafilatura_fast_chars: int = 0


def _extractors() -> dict[str, Callable[[str, str], str]]:
    import trafilatura

    import sleuth

    return {
        "sleuth": lambda html, url: sleuth.extract(html, url).text,
        "trafilatura": lambda html, url: trafilatura.extract(html) or "",
        "trafilatura_fast": lambda html, url: trafilatura.extract(html, fast=True) or "",
    }


def _time_one(
    run: Callable[[str, str], str],
    html: str,
    url: str,
    repeat: int,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[float, int]:
    best, chars = math.inf, 0
    for _ in range(max(1, repeat)):
        start = clock()
        try:
            chars = len(run(html, url))
        except Exception:  # a crash is timed like a result: the run would have paid it
            chars = -1
        best = min(best, clock() - start)
    return best, chars


def _time_folder(folder: Path, repeat: int, cpu: bool = False) -> None:
    clock = time.process_time if cpu else time.perf_counter
    index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    runners = _extractors()
    pages = [(row, (folder / row["file"]).read_bytes().decode("utf-8", "replace")) for row in index]
    if pages:  # warm-up: imports, the block model, trafilatura's first-use setup
        for run in runners.values():
            _time_one(run, pages[0][1], pages[0][0]["url"], 1)
    names = list(runners)
    for n, (row, html) in enumerate(pages):
        order = names[n % len(names) :] + names[: n % len(names)]
        got = {name: _time_one(runners[name], html, row["url"], repeat, clock) for name in order}
        out: dict[str, object] = {"url": row["url"], "size": row["size"]}
        for name in names:
            out[name], out[f"{name}_chars"] = got[name]
        print(json.dumps(out), flush=True)


def measure(bodies: dict[str, bytes], repeat: int = 2, cpu: bool = False) -> list[PageTime]:
    """Time both extractors on every page (URL -> HTML bytes) in a fresh subprocess
    (``cpu``: the process's CPU time, which other work on a loaded box moves less)."""
    with tempfile.TemporaryDirectory(prefix="sleuth-pagetime-") as tmp:
        folder = Path(tmp)
        index = []
        for n, (url, body) in enumerate(sorted(bodies.items())):
            (folder / f"{n}.html").write_bytes(body)
            index.append({"file": f"{n}.html", "url": url, "size": len(body)})
        (folder / "index.json").write_text(json.dumps(index), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "bench.pagetime", str(folder), "--repeat", str(repeat)]
            + (["--cpu"] if cpu else []),
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"bench.pagetime failed: {done.stderr.strip()[-500:]}")
    return [PageTime(**json.loads(line)) for line in done.stdout.splitlines() if line.strip()]


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)  # nearest rank: a value some page actually took
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def _stats(values: Sequence[float]) -> tuple[float, float, float]:
    return statistics.median(values), _p95(values), max(values)


def table(times: Sequence[PageTime], heavy: int = 500_000) -> str:
    """Median, p95 and max ms per extractor, all pages and the heavy ones; and sleuth's
    over trafilatura's, with trafilatura's defaults and in its ``fast`` mode."""
    lines = [
        "| pages | n | sleuth median / p95 / max ms | trafilatura median / p95 / max ms "
        "| trafilatura fast median / p95 / max ms "
        "| sleuth / trafilatura: median, p95 (target ≤ 1.2) "
        "| sleuth / trafilatura fast: median, p95 |",
        "|---|---:|---|---|---|---|---|",
    ]
    groups = [
        ("all fetched", list(times)),
        (f"over {heavy // 1000} KB", [t for t in times if t.size > heavy]),
        (f"up to {heavy // 1000} KB", [t for t in times if t.size <= heavy]),
    ]
    for name, group in groups:
        if not group:
            continue
        s = _stats([1000 * t.sleuth for t in group])
        t = _stats([1000 * t.trafilatura for t in group])
        f = _stats([1000 * t.trafilatura_fast for t in group])
        lines.append(
            f"| {name} | {len(group)} | {s[0]:.0f} / {s[1]:.0f} / {s[2]:.0f} | "
            f"{t[0]:.0f} / {t[1]:.0f} / {t[2]:.0f} | {f[0]:.0f} / {f[1]:.0f} / {f[2]:.0f} | "
            f"**{s[0] / t[0]:.2f}**, **{s[1] / t[1]:.2f}** | "
            f"**{s[0] / f[0]:.2f}**, **{s[1] / f[1]:.2f}** |"
        )
    return "\n".join(lines)


def _test_pages(data: Path) -> set[Path]:
    """The WCXB, AEB and Readability pages of the extraction test split."""
    from bench.extraction import aeb_pages, readability_pages, wcxb_pages

    pages = wcxb_pages(data / "wcxb-dev")
    test = {p.path for p in pages if p.split == "test"}
    articles = [*aeb_pages(data / "aeb"), *readability_pages(data / "readability")]
    return test | {p.path for p in articles if p.kind == "test"}  # their split is their row


def sample_bodies(data: Path) -> dict[str, bytes]:
    """The fixed sample of ``--sample`` (URL -> HTML bytes), from the benchmark data."""
    import gzip

    test = _test_pages(data)
    wcxb = [p for p in sorted((data / "wcxb-dev" / "html").glob("*.html.gz")) if p not in test]
    files = (
        wcxb[::30]
        + [p for p in sorted((data / "aeb" / "html").glob("*.html.gz")) if p not in test][::6]
        + [
            p
            for p in sorted((data / "readability" / "test" / "test-pages").glob("*/source.html"))
            if p not in test
        ][::6]
        + sorted((data / "postlight" / "fixtures").glob("*.html"))[::8]
        + sorted(wcxb, key=lambda p: p.stat().st_size)[-12:]
    )
    bodies = {}
    for path in dict.fromkeys(files):
        raw = path.read_bytes()
        name = (
            path.parent.name
            if path.name == "source.html"
            else path.name.removesuffix(".gz").removesuffix(".html")
        )
        bodies[f"http://{path.parts[-3]}.example/{name}"] = (
            gzip.decompress(raw) if path.suffix == ".gz" else raw
        )
    return bodies


# The steps of sleuth.extract that --stages times: (module, function) in sleuth.extraction.
_STAGES = (
    ("html", "_parse_html"),
    ("html", "_drop_hidden"),
    ("html", "_trafilatura"),
    ("html", "page_meta"),
    ("blocks", "clean_tree"),
    ("blocks", "segment"),
    ("blocks", "features"),
    ("model", "select_text"),
)


def stages(bodies: dict[str, bytes], repeat: int = 2) -> str:
    """Mean CPU ms of each step of ``sleuth.extract`` (and of trafilatura.extract) on the
    middle half of the pages by trafilatura's time, as a Markdown table."""
    import importlib

    import trafilatura

    import sleuth

    spent: dict[str, float] = {}

    def timed(name: str, run: Callable[..., object]) -> Callable[..., object]:
        def step(*args: object, **kwargs: object) -> object:
            start = time.process_time()
            try:
                return run(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - start

        return step

    for module, name in _STAGES:
        where = importlib.import_module(f"sleuth.extraction.{module}")
        setattr(where, name, timed(name, getattr(where, name)))
    rows = []
    for url, body in sorted(bodies.items()):
        html = body.decode("utf-8", "replace")
        best: dict[str, float] = {}
        for _ in range(max(1, repeat)):
            spent.clear()
            traf = _time_one(
                lambda h, u: trafilatura.extract(h) or "", html, url, 1, time.process_time
            )[0]
            whole = _time_one(
                lambda h, u: sleuth.extract(h, u).text, html, url, 1, time.process_time
            )[0]
            if not best or whole < best["sleuth.extract"]:
                best = dict(spent, **{"sleuth.extract": whole, "trafilatura.extract": traf})
        rows.append(best)
    rows.sort(key=lambda row: row["trafilatura.extract"])
    middle = rows[len(rows) // 4 : 3 * len(rows) // 4] or rows
    traf = statistics.mean(row["trafilatura.extract"] for row in middle)
    lines = [
        f"| step (middle {len(middle)} pages) | mean CPU ms | / trafilatura.extract |",
        "|---|---:|---:|",
    ]
    for name in ["trafilatura.extract", "sleuth.extract"] + [n for _, n in _STAGES]:
        ms = statistics.mean(row.get(name, 0.0) for row in middle)
        lines.append(f"| {name} | {1000 * ms:.2f} | {ms / traf:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.pagetime DIR [--repeat N]``: one JSON line per page;
    ``--sample``: the table for a fixed sample of the benchmark data."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.pagetime",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("folder", type=Path, nargs="?")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--cpu", action="store_true", help="CPU time of the process instead of wall time"
    )
    parser.add_argument(
        "--sample",
        action="store_true",
        help="time the fixed sample of the benchmark data, print the table",
    )
    parser.add_argument(
        "--stages",
        action="store_true",
        help="with --sample: CPU time of each step of sleuth.extract",
    )
    args = parser.parse_args(argv)
    if args.sample:
        from bench.data import data_dir, verify

        data = data_dir()
        verify(["wcxb-dev", "aeb", "readability", "postlight"], data)
        bodies = sample_bodies(data)
        print(
            stages(bodies, args.repeat)
            if args.stages
            else table(measure(bodies, args.repeat, args.cpu))
        )
        return 0
    if args.folder is None:
        parser.error("give a folder, or --sample")
    _time_folder(args.folder, args.repeat, args.cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
