"""Extraction quality: sleuth's extractor against plain trafilatura, on real pages.

Two benchmarks from ``../shared/data`` (beside the checkout; absent on CI and on a
fresh clone, in which case this prints why and exits 0):

* **WCXB** (``wcxb-dev``): 1,497 pages of seven types with human-reviewed main
  text. Score: bag-of-words precision, recall and F1 per page (lowercased ``\\w+``
  tokens, multiset overlap), macro-averaged over pages, exactly as WCXB's
  ``evaluate.py`` computes them.
* **AEB** (``aeb``, the Article Extraction Benchmark): 119 news/blog articles.
  Score: token 4-gram shingle precision and recall per page, each averaged over
  pages, F1 of the two averages, exactly as AEB's ``evaluate.py``.
* **Readability** (``readability``, Mozilla Readability.js's test pages): 130 pages,
  mostly articles, with the text of ``expected.html`` (Readability.js's reviewed
  output) as the reference, scored with AEB's metric.

Every page is in one split (:func:`bench.splits.site_split`, by a hash of its site):
*tune* (~70% of sites: what the extractor was developed and its block model trained
on), *dev* (~15%: judge changes here) and *test* (~15%: only ``python -m bench
--final`` runs it). WCXB prints a table per split; AEB and Readability, a row per
split. AEB's site is its page's host, Readability's its case name less a trailing
number (``nytimes-1``..``nytimes-5`` are one site).

Each page is extracted in a small process pool (trafilatura and lxml have crashed
natively from many threads at once), timing each extractor on it.

    python -m bench.extraction                  # every benchmark, tune and dev
    python -m bench.extraction --split dev --sample 300 --jobs 1

Extractors: sleuth's, plain trafilatura (library defaults) and trafilatura in ``fast``
mode (``fast=True``: no readability or justext fallback, the way sleuth runs it).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `import sleuth` work from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.data import DataMismatch, data_dir, verify
from bench.parts import Context, Figures
from bench.splits import SPLITS, TestSplitRefused, chosen, site_split

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = data_dir()
EXTRACTORS = ("trafilatura", "trafilatura-fast", "sleuth")
TYPE_ORDER = ("article", "documentation", "service", "forum", "collection", "listing", "product")


# ---------------------------------------------------------------- pages


@dataclass(frozen=True)
class Page:
    """One benchmark page: where its HTML is and what its main text should be."""

    id: str
    path: Path
    truth: str
    url: str | None = None
    kind: str = "article"
    split: str = "all"


def wcxb_pages(root: Path) -> list[Page]:
    """Every page of the WCXB dev set with its page type and split."""
    pages = []
    for gt_file in sorted((root / "ground-truth").glob("*.json")):
        data = json.loads(gt_file.read_text(encoding="utf-8"))
        gt = data.get("ground_truth") or {}
        page_type = ((data.get("_internal") or {}).get("page_type") or {}).get("primary")
        kind = "collection" if page_type == "category" else (page_type or "article")
        url = data.get("url")
        pages.append(
            Page(
                id=gt_file.stem,
                path=root / "html" / f"{gt_file.stem}.html.gz",
                truth=gt.get("main_content") or "",
                url=url,
                kind=kind,
                split=site_split(url, gt_file.stem),
            )
        )
    return pages


def aeb_pages(root: Path) -> list[Page]:
    """Every page of the Article Extraction Benchmark (``kind`` is its split)."""
    truth = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    return [
        Page(
            id=key,
            path=root / "html" / f"{key}.html.gz",
            truth=value.get("articleBody") or "",
            url=value.get("url"),
            kind=site_split(value.get("url"), key),
        )
        for key, value in sorted(truth.items())
    ]


# Block-level elements: their text is a line of its own in the reference text.
_REF_BLOCKS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "dd",
        "div",
        "dl",
        "dt",
        "figcaption",
        "figure",
        "footer",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "td",
        "th",
        "tr",
        "ul",
    }
)


def html_text(raw: bytes) -> str:
    """The text of an HTML fragment, a block a line (so that no two blocks' words merge)."""
    import lxml.html

    # Readability's expected.html files are UTF-8 with no charset of their own (lxml
    # would read them as Latin-1: "—" as "â", a word to the metric).
    tree = lxml.html.document_fromstring(raw.decode("utf-8", "replace"))
    for node in tree.iter():
        if isinstance(node.tag, str) and node.tag in _REF_BLOCKS:
            node.text = "\n" + (node.text or "")
            node.tail = "\n" + (node.tail or "")
    return "\n".join(
        " ".join(line.split()) for line in tree.text_content().splitlines() if line.strip()
    )


def readability_pages(root: Path) -> list[Page]:
    """Readability.js's test pages with an ``expected.html`` (``kind`` is its split)."""
    pages = []
    for case in sorted(p for p in (root / "test" / "test-pages").iterdir() if p.is_dir()):
        source, expected = case / "source.html", case / "expected.html"
        if not (source.is_file() and expected.is_file()):
            continue
        site = re.sub(r"-\d+$", "", case.name)
        pages.append(
            Page(
                id=case.name,
                path=source,
                truth=html_text(expected.read_bytes()),
                url=f"http://fakehost/{case.name}/",
                kind=site_split(None, site),
            )
        )
    return pages


# ---------------------------------------------------------------- metrics

_WORD = re.compile(r"\w+")


def _tokens(text: str, lower: bool) -> list[str]:
    return _WORD.findall(text.lower() if lower else text) if text else []


def bag_of_words_prf(predicted: str, reference: str) -> tuple[float, float, float]:
    """WCXB's per-page score: precision, recall, F1 over lowercased word multisets."""
    pred, ref = _tokens(predicted, True), _tokens(reference, True)
    if not ref:
        return (1.0, 1.0, 1.0) if not pred else (0.0, 0.0, 0.0)
    if not pred:
        return 0.0, 0.0, 0.0
    overlap = sum((Counter(pred) & Counter(ref)).values())
    p, r = overlap / len(pred), overlap / len(ref)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def shingle_counts(predicted: str, reference: str, n: int = 4) -> tuple[float, float, float]:
    """AEB's per-page score: (tp, fp, fn) over token n-gram shingles, normalised to sum 1."""

    def shingles(text: str) -> Counter[tuple[str, ...]]:
        tokens = _tokens(text, False)
        return Counter(
            tuple(tokens[i : i + n])
            for i in range(max(1, len(tokens) - n + 1))
            if tokens[i : i + n]
        )

    pred, ref = shingles(predicted), shingles(reference)
    tp = float(sum((pred & ref).values()))
    fp = float(sum((pred - ref).values()))
    fn = float(sum((ref - pred).values()))
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def aeb_prf(counts: Sequence[tuple[float, float, float]]) -> tuple[float, float, float]:
    """AEB's aggregate: mean precision and mean recall over pages, F1 of the two means."""

    def ratio(a: float, b: float, fp: float, fn: float) -> float | None:
        if a + b <= 0:  # no prediction (for precision) or no truth (for recall): not averaged
            return None
        return 1.0 if fp == fn == 0 else a / (a + b)

    precisions = [v for tp, fp, fn in counts if (v := ratio(tp, fp, fp, fn)) is not None]
    recalls = [v for tp, fp, fn in counts if (v := ratio(tp, fn, fp, fn)) is not None]
    p = statistics.fmean(precisions) if precisions else 0.0
    r = statistics.fmean(recalls) if recalls else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


# ---------------------------------------------------------------- extraction (in workers)


def _plain_trafilatura(html: str, url: str | None) -> str:
    import trafilatura

    return trafilatura.extract(html) or ""


def _fast_trafilatura(html: str, url: str | None) -> str:
    import trafilatura

    return trafilatura.extract(html, fast=True) or ""


def _sleuth(html: str, url: str | None) -> str:
    from sleuth.extraction import extract

    return extract(html, url).text


_RUNNERS: dict[str, Callable[[str, str | None], str]] = {
    "trafilatura": _plain_trafilatura,
    "trafilatura-fast": _fast_trafilatura,
    "sleuth": _sleuth,
}


def _extract_page(
    job: tuple[str, str | None, tuple[str, ...]],
) -> dict[str, tuple[str, float, bool]]:
    """In a worker: each extractor's text, seconds taken and whether it raised."""
    path, url, names = job
    # Both benchmarks' own scripts read the pages as UTF-8 text; so do we.
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        html = handle.read()
    out = {}
    for name in names:
        start = time.perf_counter()
        try:
            text, error = _RUNNERS[name](html, url), False
        except Exception:  # a crash on one page is a failure to count, not a reason to stop
            text, error = "", True
        out[name] = (text, time.perf_counter() - start, error)
    return out


@dataclass
class Result:
    """One extractor's outcome on one page."""

    page: Page
    text: str
    seconds: float
    error: bool

    @property
    def failed(self) -> bool:
        """It raised, or found nothing where the ground truth has text."""
        return self.error or (not self.text.strip() and bool(self.page.truth.strip()))


def run_extractors(
    pages: Sequence[Page], names: Sequence[str], jobs: int, progress: bool = True
) -> dict[str, list[Result]]:
    """Extract every page with every named extractor, ``jobs`` pages at a time."""
    results: dict[str, list[Result]] = {name: [] for name in names}
    work = [(str(p.path), p.url, tuple(names)) for p in pages]
    done = 0
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        for page, out in zip(pages, pool.map(_extract_page, work, chunksize=4), strict=True):
            for name in names:
                text, seconds, error = out[name]
                results[name].append(Result(page, text, seconds, error))
            done += 1
            if progress and sys.stderr.isatty() and done % 25 == 0:
                print(f"\r  {done}/{len(pages)} pages", end="", file=sys.stderr, flush=True)
    if progress and sys.stderr.isatty():
        print("\r" + " " * 30 + "\r", end="", file=sys.stderr, flush=True)
    return results


# ---------------------------------------------------------------- tables


@dataclass
class Row:
    """Scores of one group of pages (a page type, or all) for every extractor."""

    label: str
    pages: int
    cells: dict[str, tuple[float, float, float, int, float]] = field(default_factory=dict)


def _cell(
    results: Sequence[Result], score: Callable[[Sequence[Result]], tuple[float, float, float]]
) -> tuple[float, float, float, int, float]:
    p, r, f1 = score(results)
    failures = sum(res.failed for res in results)
    ms = 1000 * statistics.fmean(res.seconds for res in results) if results else 0.0
    return p, r, f1, failures, ms


def wcxb_score(results: Sequence[Result]) -> tuple[float, float, float]:
    """Macro averages of the per-page bag-of-words P, R, F1."""
    scores = [bag_of_words_prf(res.text, res.page.truth) for res in results]
    if not scores:
        return 0.0, 0.0, 0.0
    return tuple(statistics.fmean(s[i] for s in scores) for i in range(3))  # type: ignore[return-value]


def aeb_score(results: Sequence[Result]) -> tuple[float, float, float]:
    """AEB's shingle P, R, F1."""
    return aeb_prf([shingle_counts(res.text, res.page.truth) for res in results])


def build_rows(
    results: dict[str, list[Result]],
    by_type: bool,
    score: Callable[[Sequence[Result]], tuple[float, float, float]],
) -> list[Row]:
    """One row per page type (when ``by_type``) and one for all pages."""
    groups: dict[str, dict[str, list[Result]]] = defaultdict(lambda: defaultdict(list))
    for name, items in results.items():
        for res in items:
            if by_type:
                groups[res.page.kind][name].append(res)
            groups["all"][name].append(res)
    order = (
        [k for k in TYPE_ORDER if k in groups]
        + sorted(k for k in groups if k not in TYPE_ORDER and k != "all")
        + ["all"]
    )
    rows = []
    for label in order:
        group = groups[label]
        row = Row(label, len(next(iter(group.values()))))
        for name, items in group.items():
            row.cells[name] = _cell(items, score)
        rows.append(row)
    return rows


def format_table(title: str, rows: Sequence[Row], names: Sequence[str]) -> str:
    """A Markdown table: per row, pages then P/R/F1/failures/ms for each extractor."""
    head = ["pages"] + [f"{n} {c}" for n in names for c in ("P", "R", "F1", "fail", "ms")]
    lines = [
        f"### {title}",
        "",
        "| group | " + " | ".join(head) + " |",
        "|---|" + "---:|" * len(head),
    ]
    for row in rows:
        cells = [str(row.pages)]
        for name in names:
            p, r, f1, fails, ms = row.cells[name]
            cells += [f"{p:.3f}", f"{r:.3f}", f"**{f1:.3f}**", str(fails), f"{ms:.0f}"]
        label = "**all**" if row.label == "all" else row.label
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def _sample(pages: list[Page], n: int | None) -> list[Page]:
    """A deterministic sample of ``n`` pages spread over the list (every k-th page)."""
    if not n or n >= len(pages):
        return pages
    step = len(pages) / n
    return [pages[int(i * step)] for i in range(n)]


def _dump(path: Path, results: dict[str, list[Result]]) -> None:
    """Per-page texts and scores as JSON lines, for looking at what went wrong where."""
    with path.open("w", encoding="utf-8") as out:
        names = list(results)
        for i, res in enumerate(results[names[0]]):
            page = res.page
            record: dict[str, object] = {
                "id": page.id,
                "kind": page.kind,
                "split": page.split,
                "url": page.url,
            }
            for name in names:
                other = results[name][i]
                tp, fp, fn = shingle_counts(other.text, page.truth)
                record[name] = {
                    "f1": bag_of_words_prf(other.text, page.truth),
                    "shingle_pr": [
                        round(tp / (tp + fp), 4) if tp + fp else 0.0,
                        round(tp / (tp + fn), 4) if tp + fn else 0.0,
                    ],
                    "ms": round(1000 * other.seconds, 1),
                    "text": other.text,
                }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.extraction",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="the shared data folder (default ../shared/data)",
    )
    parser.add_argument(
        "--bench",
        choices=("wcxb", "aeb", "readability", "articles", "all"),
        default="all",
        help="articles: AEB and Readability",
    )
    parser.add_argument(
        "--split",
        action="append",
        choices=SPLITS,
        help="the splits to run (repeatable; default: tune and dev, reported apart; "
        "test runs only through python -m bench --final)",
    )
    parser.add_argument(
        "--type",
        dest="kinds",
        action="append",
        choices=TYPE_ORDER,
        help="only these WCXB page types (repeatable)",
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=None,
        help="at most N pages per benchmark/split (spread evenly)",
    )
    parser.add_argument(
        "--extractors",
        default=",".join(EXTRACTORS),
        help="comma-separated subset of: " + ", ".join(EXTRACTORS),
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="worker processes (default: 2, or 1 on a one-core machine)",
    )
    parser.add_argument(
        "--dump",
        type=Path,
        default=None,
        help="write per-page texts and scores to DUMP-<bench>-<split>.jsonl",
    )
    return parser.parse_args(argv)


def _suites(
    args: argparse.Namespace, splits: Sequence[str]
) -> Iterable[tuple[str, str, list[Page], bool]]:
    """(benchmark, split, pages, per-type rows?) for each table to print."""
    if args.bench in ("wcxb", "all"):
        pages = wcxb_pages(args.data / "wcxb-dev")
        if args.kinds:
            pages = [p for p in pages if p.kind in args.kinds]
        for split in splits:
            yield (
                "WCXB dev",
                split,
                _sample([p for p in pages if p.split == split], args.sample),
                True,
            )
    # The articles' rows are their splits (``kind``), and all of those.
    if args.bench in ("aeb", "articles", "all"):
        aeb = [p for p in aeb_pages(args.data / "aeb") if p.kind in splits]
        yield "AEB", "all", _sample(aeb, args.sample), True
    if args.bench in ("readability", "articles", "all"):
        pages = [p for p in readability_pages(args.data / "readability") if p.kind in splits]
        yield "Readability", "all", _sample(pages, args.sample), True


def report(args: argparse.Namespace, final: bool = False, echo: bool = False) -> str:
    """Run the benchmarks of ``args`` and return their tables (Markdown; ``echo``: also
    print each as it is done); the test split only when ``final``
    (:func:`bench.splits.refuse_test`)."""
    names = [n.strip() for n in args.extractors.split(",") if n.strip()]
    splits = chosen(args.split or ("tune", "dev"), final)
    import trafilatura

    out = [
        f"Extraction quality (trafilatura {trafilatura.__version__}; "
        f"{args.jobs} worker process(es); splits: {', '.join(splits)})\n"
    ]
    for bench, split, pages, by_type in _suites(args, splits):
        start = time.perf_counter()
        results = run_extractors(pages, names, args.jobs)
        score = wcxb_score if bench.startswith("WCXB") else aeb_score
        what = {
            "tune": "tune split (~70% of sites; tuned on)",
            "dev": "dev split (~15% of sites; judge changes here)",
            "test": "test split (~15% of sites; frozen)",
        }.get(split, f"the {'/'.join(splits)} pages")
        title = f"{bench}, {what}: {len(pages)} pages, {time.perf_counter() - start:.0f} s"
        out.append(format_table(title, build_rows(results, by_type, score), names) + "\n")
        if echo:
            print(out[-1], flush=True)
        if args.dump:
            tag = "wcxb" if bench.startswith("WCXB") else bench.lower()
            _dump(args.dump.with_name(f"{args.dump.name}-{tag}-{split}.jsonl"), results)
    return "\n".join(out)


def part(ctx: Context) -> Figures:
    """The extraction part on ``ctx.split``: a sample of its WCXB pages with all of its AEB
    and Readability pages (``--extraction sample``, ``--extraction-sample``), or all of
    them (``--extraction full``, what ``--final`` runs)."""
    full = ctx.final or ctx.args.extraction == "full"
    sample = ctx.limit or (None if full else ctx.args.extraction_sample)
    argv = ["--split", ctx.split] + (["--sample", str(sample)] if sample else [])
    print(f"extraction ({ctx.split} split, {sample or 'all'} pages a set)...", file=sys.stderr)
    text = report(parse_args(argv), ctx.final)
    head = ctx.heading("Extraction", f"{sample or 'all'} pages a benchmark at most")
    return Figures(f"{head}\n\n{text}", text, {"sample": sample})


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks and print one table per benchmark and split."""
    args = parse_args(argv)
    try:
        chosen(args.split or ())
    except TestSplitRefused as refused:
        print(f"python -m bench.extraction: {refused}", file=sys.stderr)
        return 2
    names = [n.strip() for n in args.extractors.split(",") if n.strip()]
    if unknown := set(names) - set(EXTRACTORS):
        print(f"unknown extractor(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    needed = [
        args.data / d
        for d, b in (("wcxb-dev", "wcxb"), ("aeb", "aeb"), ("readability", "readability"))
        if args.bench in (b, "all") or (args.bench == "articles" and b != "wcxb")
    ]
    if missing := [str(p) for p in needed if not p.is_dir()]:
        print(
            f"extraction bench skipped: no benchmark data at {', '.join(missing)} "
            "(it lives in ../shared/data beside the checkout)"
        )
        return 0
    try:
        verify([p.name for p in needed], args.data)
    except DataMismatch as mismatch:
        print(mismatch, file=sys.stderr)
        return 1
    report(args, echo=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
