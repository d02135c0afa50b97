"""The answer-first report, measured: ``python -m bench.answer``.

HotpotQA's paragraphs (``hotpotqa_train_corpus.json``, 994 of them) are written as a
folder of Markdown notes (``# Title``, then the paragraph), and each question of a split
is researched over that folder (``--docs``, no model) in quick and in deep mode. For every
report it counts:

* whether the report's ``## Answer`` section alone holds the gold answer, and whether the
  report as a reader sees it does (the title, the answer and the quoted evidence, up to
  the Confidence line; the Sources and Gaps lists are left out: their URLs are file
  names). Answers are compared HotpotQA-style (lower case, no punctuation, no articles),
  with a few aliases (no parentheses, digits for number words, the part before a comma);
  yes/no answers are left out (any text holds "no"), and so are answers the question
  itself names ("Which band was formed first, X or Y?");
* the Answer's size and the whole report's, in tokens (:func:`sleuth.llm.tokens.count_tokens`);
* every quote of the report (``>`` lines and the Answer's lines) against the note it
  quotes (:func:`quote_faults`): cut inside a sentence without "…", or a reference,
  template, navigation, cookie or heading line.

Splits (fixed for the session): ``tune`` = questions 0-49, ``dev`` = 50-74. Questions
75-99 are the test split and cannot be run from here. ``--out DIR`` keeps every report
as JSON beside ``results.json``.

    python -m bench.answer --split tune --modes quick deep --jobs 2
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # python bench/answer.py
    sys.path.insert(0, str(REPO))

from bench.data import data_dir, verify  # noqa: E402
from bench.parts import Context, Figures  # noqa: E402
from sleuth.report.quote_check import answer_section, quote_faults, quotes_of  # noqa: E402

__all__ = [
    "SPLITS",
    "Row",
    "answer_section",
    "gold_aliases",
    "holds",
    "quote_faults",
    "quotes_of",
    "write_notes",
]

#: The session's splits of the 100 HotpotQA questions; 75-99 (test) are not offered.
SPLITS = {"tune": range(0, 50), "dev": range(50, 75)}

# -- gold answers -------------------------------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NUMBER_WORDS = {
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
}


def normalise(text: str) -> str:
    """HotpotQA's answer normalisation: lower case, no punctuation, no articles, one space."""
    text = text.lower().replace("’", "'")
    text = "".join(" " if c in string.punctuation or c in "–—“”‘" else c for c in text)
    return " ".join(_ARTICLES.sub(" ", text).split())


def gold_aliases(answer: str) -> list[str]:
    """The normalised forms of a gold answer that count as finding it."""
    forms = {answer, re.sub(r"\s*\([^)]*\)", "", answer)}
    if "," in answer:
        forms.add(answer.split(",")[0])
    out = set()
    for form in forms:
        norm = normalise(form)
        if norm:
            out.add(norm)
            words = [_NUMBER_WORDS.get(w, w) for w in norm.split()]
            out.add(" ".join(words))
    return sorted(out, key=len, reverse=True)


def holds(text: str, aliases: Sequence[str]) -> bool:
    """Whether ``text`` (normalised) holds one of ``aliases`` as whole words."""
    norm = f" {normalise(text)} "
    norm_digits = " " + " ".join(_NUMBER_WORDS.get(w, w) for w in norm.split()) + " "
    return any(f" {a} " in norm or f" {a} " in norm_digits for a in aliases)


# -- the report's parts ---------------------------------------------------------------------
def reader_view(markdown: str) -> str:
    """The report after its title (the question) and up to its Confidence line: what a
    reader reads as the findings."""
    body = re.split(r"^## Confidence\b", markdown, maxsplit=1, flags=re.MULTILINE)[0]
    return re.sub(r"\A# .*\n", "", body)


# -- the notes folder -----------------------------------------------------------------------
def write_notes(folder: Path) -> dict[str, str]:
    """HotpotQA's paragraphs as Markdown notes in ``folder``; {file name: title}."""
    corpus = json.loads((data_dir() / "hotpotqa" / "hotpotqa_train_corpus.json").read_text())
    folder.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    for title, sentences in corpus.items():
        slug = re.sub(r"[^\w-]+", "_", title).strip("_")[:80] or "note"
        name = f"{slug}-{hashlib.sha1(title.encode()).hexdigest()[:6]}.md"
        text = "".join(sentences).strip()
        (folder / name).write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
        names[name] = title
    return names


# -- one run --------------------------------------------------------------------------------
@dataclass
class Row:
    """One mode on one split: the counts the table prints."""

    mode: str
    split: str
    questions: int = 0
    scored: int = 0
    answer_holds: int = 0
    whole_holds: int = 0
    answer_tokens: list[int] = field(default_factory=list)
    report_tokens: list[int] = field(default_factory=list)
    quotes: int = 0
    faults: int = 0
    fault_kinds: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0
    #: The whole no-model report before the Answer (``bench.answer_baseline``), "n/m".
    before: str = ""


def _source_text(url: str, cache: dict[str, str]) -> str | None:
    """The text sleuth stores for a note (as the documents index reads it)."""
    if not url.startswith("file://"):
        return None
    if url not in cache:
        from sleuth.extraction.documents import extract_document

        path = Path(unquote(urlsplit(url).path))
        try:
            cache[url] = extract_document(path, path.read_bytes()).text
        except (OSError, ValueError):
            cache[url] = ""
    return cache[url] or None


def _check_quotes(report: Any, row: Row, texts: dict[str, str], examples: list[str]) -> None:
    """Check every quote of ``report`` against the notes it cites (all of them: a quote
    is found in the one it came from)."""
    found = (_source_text(s.url, texts) for s in report.sources)
    sources = "\n\n".join(text for text in found if text)
    for quote in quotes_of(report.markdown):
        row.quotes += 1
        faults = quote_faults(quote, sources or None)
        if faults:
            row.faults += 1
            for why in faults:
                row.fault_kinds[why] = row.fault_kinds.get(why, 0) + 1
            if len(examples) < 40:
                examples.append(f"{'; '.join(faults)}: {quote[:160]}")


async def _run(
    questions: list[tuple[int, dict[str, Any]]],
    mode: str,
    folder: Path,
    home: Path,
    jobs: int,
    out: Path | None,
) -> list[tuple[int, Any]]:
    import sleuth

    gate = asyncio.Semaphore(jobs)

    async def one(n: int, q: dict[str, Any]) -> tuple[int, Any]:
        async with gate:
            report = await sleuth.research(
                q["question"], docs=folder, home=home, no_llm=True, mode=mode
            )
        if out is not None:
            (out / f"{mode}-{n:03d}.json").write_text(
                json.dumps(report.to_json_dict(), ensure_ascii=False, indent=1), "utf-8"
            )
        return n, report

    return list(await asyncio.gather(*(one(n, q) for n, q in questions)))


def measure(
    split: str,
    modes: Sequence[str],
    jobs: int,
    out: Path | None,
    first: int | None = None,
    *,
    final: bool = False,
) -> list[Row]:
    """Each mode over the split's questions (its ``first`` ones); one :class:`Row` per mode.
    The test split only with ``final`` (``python -m bench --final``)."""
    from bench.client import hotpot_questions
    from bench.splits import HOTPOTQA, refuse_test
    from sleuth.llm.tokens import count_tokens

    every = hotpot_questions()
    questions = [(n, every[n]) for n in HOTPOTQA[refuse_test(split, final)]][:first]
    rows = []
    with tempfile.TemporaryDirectory(prefix="sleuth-answer-") as tmp:
        folder, home = Path(tmp) / "notes", Path(tmp) / "home"
        write_notes(folder)
        texts: dict[str, str] = {}
        for mode in modes:
            row, examples = Row(mode, split), []
            start = time.monotonic()
            done = asyncio.run(_run(questions, mode, folder, home, jobs, out))
            row.wall_s = round(time.monotonic() - start, 1)
            for n, report in done:
                q = every[n]
                row.questions += 1
                answer = answer_section(report.markdown)
                row.answer_tokens.append(count_tokens(answer))
                row.report_tokens.append(count_tokens(report.markdown))
                _check_quotes(report, row, texts, examples)
                aliases = gold_aliases(q["answer"])
                if normalise(q["answer"]) in ("yes", "no") or holds(q["question"], aliases):
                    continue
                row.scored += 1
                row.answer_holds += holds(answer, aliases)
                row.whole_holds += holds(reader_view(report.markdown), aliases)
            rows.append(row)
            print(f"  {mode} {split}: {row.wall_s} s", file=sys.stderr, flush=True)
            for line in examples[:12]:
                print(f"    fault: {line}", file=sys.stderr)
    return rows


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table."""
    before = any(r.before for r in rows)
    lines = [
        "| mode | split | questions (scored) | Answer holds gold | whole report holds gold "
        + ("| whole report before the Answer " if before else "")
        + "| Answer tokens (mean) | report tokens (mean) | quotes | faulty quotes |",
        "|---|---|---:|---:|---:|" + ("---:|" if before else "") + "---:|---:|---:|---:|",
    ]
    for r in rows:
        share = f"{r.answer_holds}/{r.scored} ({r.answer_holds / max(1, r.scored):.0%})"
        whole = f"{r.whole_holds}/{r.scored} ({r.whole_holds / max(1, r.scored):.0%})"
        if before:
            whole += f" | {r.before or '–'}"
        lines.append(
            f"| {r.mode} | {r.split} | {r.questions} ({r.scored}) | {share} | {whole} "
            f"| {statistics.mean(r.answer_tokens or [0]):.0f} "
            f"| {statistics.mean(r.report_tokens or [0]):.0f} | {r.quotes} | {r.faults} |"
        )
    return "\n".join(lines)


def part(ctx: Context) -> Figures:
    """The answer part: quick and deep no-model reports over HotpotQA's notes (documents
    mode needs no world and no model: the Answer is the no-model report's)."""
    print("answer (HotpotQA notes, no model)...", file=sys.stderr)
    verify(["hotpotqa"])
    rows = measure(ctx.split, ("quick", "deep"), 2, None, ctx.limit, final=ctx.final)
    if not ctx.limit:  # the bar: the whole report as it was before the Answer
        from bench.answer_baseline import BEFORE_ANSWER
        from bench.answer_baseline import measure as before_answer

        print(f"  the whole report at {BEFORE_ANSWER}...", file=sys.stderr, flush=True)
        old = before_answer(ctx.split, final=ctx.final)
        for row in rows:
            row.before = old.get(row.mode, "")
    head = ctx.heading("Answer first", "documents mode", "no model")
    kinds = "".join(
        f"\n\n{r.mode} fault kinds: {json.dumps(r.fault_kinds)}" for r in rows if r.fault_kinds
    )
    return Figures(f"{head}\n\n{table(rows)}{kinds}\n", [asdict(r) for r in rows])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bench; print the table (and fault kinds) and write ``--out``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.answer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--split", choices=sorted(SPLITS), default="tune")
    parser.add_argument("--modes", nargs="+", choices=("quick", "deep"), default=["quick"])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--first", type=int, default=None, help="only the split's first N")
    parser.add_argument("--out", type=Path, default=None, help="keep reports and results here")
    args = parser.parse_args(argv)
    verify(["hotpotqa"])
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    rows = measure(args.split, args.modes, args.jobs, args.out, args.first)
    print(table(rows))
    for r in rows:
        if r.fault_kinds:
            print(f"\n{r.mode} fault kinds: {json.dumps(r.fault_kinds)}")
    if args.out is not None:
        (args.out / "results.json").write_text(
            json.dumps([asdict(r) for r in rows], indent=1), encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
