"""``sleuth batch QUESTIONS -o OUTDIR``: research many questions, resumably.

QUESTIONS is a text file (one question a line), JSONL or CSV (``-``: stdin); see
:mod:`sleuth.pipeline.batch.input`. Every research option applies to all questions unless
a question's line sets it. Each finished question is one line of ``OUTDIR/results.jsonl``
and a report under ``OUTDIR/reports/``; rerunning the same command skips the questions
already done (:mod:`sleuth.pipeline.batch.outdir`). Progress is a bar on stderr (plain
lines when stderr is not a terminal); the summary comes at the end.

Exit codes: 0 every question has a report with sources, 1 some have none (no sources,
failed, or not run for a batch budget), 2 bad input (nothing ran), 130 interrupted.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sleuth._extras import missing_extra
from sleuth._format import duration
from sleuth.cli._common import EXIT_NO_SOURCES, EXIT_OK, GroupedCommand, Option
from sleuth.cli._logs import verbose_option
from sleuth.errors import ConfigError

if TYPE_CHECKING:
    from rich.console import Console

    from sleuth.pipeline.batch import BatchResult
    from sleuth.progress import Event

__all__ = ["BatchProgress", "batch_command", "eta_s"]


def eta_s(running: list[float], waiting: int, mean_s: float, jobs: int) -> float:
    """Seconds until a batch ends: each question still running ends ``mean_s`` after it
    started (``running``: how long ago each did), then the ``waiting`` ones run ``jobs``
    at a time, each as a slot frees, each taking ``mean_s``."""
    slots = [max(0.0, mean_s - age) for age in running]
    slots += [0.0] * max(0, jobs - len(slots))  # the free slots
    heapq.heapify(slots)
    for _ in range(waiting):
        heapq.heappush(slots, heapq.heappop(slots) + mean_s)
    return max(slots, default=0.0)


class BatchProgress:
    """The batch on stderr: a rich bar (done / total, failed, rate, ETA, tokens, cost) on a
    terminal, one line per finished question above it (or alone, without a terminal);
    the summary at the end. The ETA counts the questions still running and those still
    waiting to start, ``jobs`` at a time, at the mean time of those finished so far."""

    def __init__(
        self, total: int, quiet: bool, jobs: int = 1, console: Console | None = None
    ) -> None:
        from rich.console import Console

        self.console = console or Console(stderr=True, highlight=False)
        self.quiet = quiet
        self.total = total
        self.jobs = jobs
        self.started = time.monotonic()
        #: When each question started (question_start), and how long each finished took.
        self.begun: dict[str, float] = {}
        self.ended: set[str] = set()
        self.took: list[float] = []
        self.counts = {"done": 0, "no_sources": 0, "failed": 0, "skipped": 0}
        self.tokens = self.live_tokens = 0
        self.cost = 0.0
        self.bar: Any = None
        if not quiet and self.console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self.bar = Progress(
                TextColumn("batch"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failed]} failed"),
                TextColumn("{task.fields[rate]}"),
                TextColumn("{task.fields[eta]}"),
                TextColumn("{task.fields[spend]}"),
                console=self.console,
            )
            self.task = self.bar.add_task(
                "batch", total=total, failed=0, rate="", spend="", eta="ETA …"
            )
            self.bar.start()

    def __call__(self, event: Event) -> None:
        """The batch's events: model tokens as they are spent (in this process), and how
        many Ray workers run the questions."""
        if event.kind == "info" and "workers" in event.data and not self.quiet:
            from rich.markup import escape

            self.console.print(escape(event.message), style="dim", soft_wrap=True)
        if event.kind == "question_start":
            self.begun.setdefault(str(event.data.get("question_id")), time.monotonic())
            self._refresh()
        if event.kind == "llm":
            self.live_tokens += int(event.data.get("prompt_tokens", 0)) + int(
                event.data.get("completion_tokens", 0)
            )
            self._refresh()

    def _spend(self) -> str:
        tokens = max(self.tokens, self.live_tokens)
        return f"{tokens:,} tokens, ${self.cost:.4f}" if tokens else ""

    def _refresh(self) -> None:
        if self.bar is None:
            return
        finished = self.counts["done"] + self.counts["no_sources"] + self.counts["failed"]
        minutes = (time.monotonic() - self.started) / 60
        rate = f"{finished / minutes:.1f}/min" if minutes > 0 and finished else ""
        self.bar.update(
            self.task,
            completed=finished + self.counts["skipped"],
            failed=self.counts["failed"] + self.counts["no_sources"],
            rate=rate,
            spend=self._spend(),
            eta=self.eta(),
        )

    def eta(self) -> str:
        """``ETA 2m10s`` (``ETA …`` until a question has finished)."""
        if not self.took:
            return "ETA …"
        now = time.monotonic()
        running = [now - t for q, t in self.begun.items() if q not in self.ended]
        left = self.total - len(self.begun | dict.fromkeys(self.ended)) - self.counts["skipped"]
        mean = sum(self.took) / len(self.took)
        return f"ETA {duration(eta_s(running, max(0, left), mean, self.jobs))}"

    def result(self, result: BatchResult) -> None:
        """One question finished (or was skipped)."""
        from rich.markup import escape

        self.counts[result.status] += 1
        self.tokens += result.tokens
        self.cost += result.cost_usd or 0.0
        if result.status != "skipped":
            self.ended.add(result.id)
            self.took.append(result.elapsed_s)
        self._refresh()
        if self.quiet:
            return
        n = sum(self.counts.values())
        if result.status == "done":  # a line of its own, above the bar on a terminal
            sources = len(result.report.sources) if result.report is not None else 0
            line = (
                f"[{n}/{self.total}] done {result.id} ({result.elapsed_s:.1f} s, {sources} "
                f"source{'' if sources == 1 else 's'}): {_short(result.question)}"
            )
        else:
            status = result.status.replace("_", " ")
            line = f"[{n}/{self.total}] {status} {result.id}: {result.error}"
        style = "dim" if result.status in ("done", "skipped") else "yellow"
        self.console.print(escape(line), soft_wrap=True, style=style)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def summary(self, before: int, failed_before: int, outdir: Path) -> str:
        """The closing line: this run's counts, time, tokens and cost."""
        c = self.counts
        wall = time.monotonic() - self.started
        spent = f"{self.tokens:,} tokens" + (f", ${self.cost:.4f}" if self.cost else "")
        earlier = []
        if before:
            earlier.append(f"{before} done before")
        if failed_before:
            earlier.append(f"{failed_before} failed before (--retry-failed runs them again)")
        skipped = c["skipped"] + before + failed_before
        none = f"{c['no_sources']} no sources, " if c["no_sources"] else ""
        return (
            f"batch: {c['done']} done, {none}{c['failed']} failed, {skipped} skipped"
            + (f" ({'; '.join(earlier)})" if earlier else "")
            + f" in {wall:.1f} s; {spent}; results in {outdir}"
        )


def _short(question: str, width: int = 70) -> str:
    line = " ".join(question.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _budget(cost: float | None, duration: str | None) -> tuple[float | None, float | None]:
    from sleuth.settings import parse_duration

    if cost is not None and cost <= 0:
        raise ConfigError("--batch-max-cost must be more than 0")
    seconds = None
    if duration is not None:
        seconds = parse_duration(duration)
        if seconds <= 0:
            raise ConfigError("--batch-max-time must be more than 0")
    return cost, seconds


def _run_batch(
    questions: str, outdir: Path, options: dict[str, Any], values: dict[str, Any]
) -> int:
    from sleuth.settings import load_settings  # pydantic: not needed for --help

    settings = load_settings(values)
    max_cost, max_time = _budget(options["batch_max_cost"], options["batch_max_time"])
    ray = bool(options["ray"]) or options["ray_address"] is not None
    if ray:
        try:
            import ray as _  # noqa: F401
        except ImportError:
            raise missing_extra("ray", "ray", "--ray") from None
    import asyncio

    from sleuth.pipeline.batch import check_batch_settings
    from sleuth.pipeline.batch.input import read_questions
    from sleuth.pipeline.batch.outdir import OutDir

    found = read_questions(questions)
    # What would fail every question fails now, before OUTDIR is made.
    asyncio.run(check_batch_settings(settings))
    out = OutDir.open(outdir, fmt=settings.format, retry_failed=bool(options["retry_failed"]))
    try:
        return _run(found, out, settings, options, max_cost, max_time)
    finally:
        out.close()


def _run(
    found: Any,
    out: Any,
    settings: Any,
    options: dict[str, Any],
    max_cost: float | None,
    max_time: float | None,
) -> int:
    import asyncio

    from sleuth.pipeline.batch import research_many

    quiet = bool(options["quiet"])
    for line, first in found.repeats:
        click.echo(f"sleuth: warning: line {line} repeats line {first}: asked once", err=True)
    todo = [q for q in found.items if q.id not in out.done and q.id not in out.failed]
    before = sum(1 for q in found.items if q.id in out.done)
    failed_before = sum(1 for q in found.items if q.id in out.failed)
    progress = BatchProgress(len(todo), quiet, jobs=options["jobs"] or 1)

    async def run() -> None:
        results = research_many(
            todo,
            settings=settings,
            on_event=progress,
            jobs=options["jobs"],
            max_cost=max_cost,
            max_time=max_time,
            ray=bool(options["ray"]),
            ray_address=options["ray_address"],
            ray_workers=options["ray_workers"],
        )
        try:
            async for result in results:
                out.write(result)
                progress.result(result)
        finally:
            await results.aclose()

    try:
        if todo:
            asyncio.run(run())
    finally:
        progress.close()
    click.echo(progress.summary(before, failed_before, out.path), err=True)
    every = all(q.id in out.done for q in found.items)
    return EXIT_OK if every else EXIT_NO_SOURCES


def batch_command(settings_options: Callable[[str], list[click.Option]]) -> click.Command:
    """The ``batch`` command, with ``settings_options("batch")`` (the settings table's
    options but ``--output``: ``-o`` names the output folder here)."""
    options = settings_options("batch")

    def callback(
        questions: str,
        outdir: Path,
        jobs: int,
        batch_max_cost: float | None,
        batch_max_time: str | None,
        retry_failed: bool | None,
        ray: bool | None,
        ray_address: str | None,
        ray_workers: int | None,
        quiet: bool | None,
        **values: Any,
    ) -> int:
        own = {
            "jobs": jobs,
            "batch_max_cost": batch_max_cost,
            "batch_max_time": batch_max_time,
            "retry_failed": retry_failed,
            "ray": ray,
            "ray_address": ray_address,
            "ray_workers": ray_workers,
            "quiet": quiet,
        }
        return _run_batch(questions, outdir, own, values)

    return GroupedCommand(
        "batch",
        lead="Batch",
        callback=callback,
        params=[
            click.Argument(["questions"], metavar="QUESTIONS"),
            Option(
                ["--outdir", "-o"],
                group="Batch",
                required=True,
                type=click.Path(path_type=Path),
                help="Folder for results.jsonl and reports/ (made if missing; rerun to resume).",
            ),
            Option(
                ["--jobs", "-j"],
                metavar="N",
                group="Batch",
                type=click.IntRange(1, 1024),
                default=8,
                show_default=True,
                help="Questions researched at once.",
            ),
            Option(
                ["--batch-max-cost"],
                group="Batch",
                type=float,
                default=None,
                metavar="USD",
                help="Estimated model cost of the whole batch at most: no question "
                "starts after it is spent.",
            ),
            Option(
                ["--batch-max-time"],
                group="Batch",
                default=None,
                metavar="DURATION",
                help="Time for the whole batch (90, 30m, 2h): no question starts "
                "after it, and those running end by it.",
            ),
            Option(
                ["--retry-failed"],
                group="Batch",
                is_flag=True,
                default=None,
                help="Run again the questions an earlier run recorded as failed.",
            ),
            Option(
                ["--ray"],
                group="Batch",
                is_flag=True,
                default=None,
                help="Run the questions on Ray (a local cluster unless "
                "--ray-address); needs the 'ray' extra.",
            ),
            Option(
                ["--ray-address"],
                group="Batch",
                default=None,
                metavar="ADDRESS",
                help="Ray cluster to join (auto, or the head's HOST:PORT); implies --ray.",
            ),
            Option(
                ["--ray-workers"],
                metavar="N",
                group="Batch",
                type=click.IntRange(1, 10_000),
                default=None,
                help="Ray worker processes, each running --jobs questions at "
                "once [default: one per CPU of the cluster].",
            ),
            *options,
            Option(
                ["--quiet", "-q"],
                group="Output",
                is_flag=True,
                flag_value=True,
                default=None,
                help="No progress bar or per-question lines; logs and the summary only.",
            ),
            verbose_option(),
        ],
        short_help="Many questions from a file into a folder, resumably.",
        help="Research every question of QUESTIONS (a text file, one question a line; "
        "JSONL with per-question options; or CSV with a 'question' column; - reads "
        "stdin) into OUTDIR.",
        epilog=(
            "Writes OUTDIR/results.jsonl (one line per finished question) and "
            "OUTDIR/reports/<id>.md; running the same command again skips the "
            "questions already done.\n\nExit codes: 0 every question has a report, "
            "1 some do not, 2 bad input."
        ),
    )
