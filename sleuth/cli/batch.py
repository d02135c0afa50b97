"""``sleuth batch QUESTIONS -o OUTDIR``: research many questions, resumably.

QUESTIONS is a text file (one question a line), JSONL or CSV (``-``: stdin); see
:mod:`sleuth.pipeline.batch_input`. Every research option applies to all questions unless
a question's line sets it. Each finished question is one line of ``OUTDIR/results.jsonl``
and a report under ``OUTDIR/reports/``; rerunning the same command skips the questions
already done (:mod:`sleuth.pipeline.batch_outdir`). Progress is a bar on stderr (plain
lines when stderr is not a terminal); the summary comes at the end.

Exit codes: 0 every question has a report, 1 some have none (failed, or not run for a
batch budget), 2 bad input (nothing ran), 130 interrupted.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sleuth.cli._common import EXIT_NO_SOURCES, EXIT_OK
from sleuth.cli._logs import verbose_option
from sleuth.errors import ConfigError

if TYPE_CHECKING:
    from sleuth.pipeline.batch import BatchResult
    from sleuth.progress import Event

__all__ = ["batch_command"]


class BatchProgress:
    """The batch on stderr: a rich bar (done / total, failed, rate, ETA, tokens, cost) on a
    terminal, one line per finished question otherwise; the summary at the end."""

    def __init__(self, total: int, quiet: bool) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False)
        self.quiet = quiet
        self.total = total
        self.started = time.monotonic()
        self.counts = {"done": 0, "failed": 0, "skipped": 0}
        self.tokens = self.live_tokens = 0
        self.cost = 0.0
        self.bar: Any = None
        if not quiet and self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("batch"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failed]} failed"),
                TextColumn("{task.fields[rate]}"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[spend]}"),
                console=self.console,
            )
            self.task = self.bar.add_task("batch", total=total, failed=0, rate="", spend="")
            self.bar.start()

    def __call__(self, event: Event) -> None:
        """The batch's events: model tokens as they are spent (in this process), and how
        many Ray workers run the questions."""
        if event.kind == "info" and "workers" in event.data and not self.quiet:
            from rich.markup import escape

            self.console.print(escape(event.message), style="dim", soft_wrap=True)
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
        finished = self.counts["done"] + self.counts["failed"]
        minutes = (time.monotonic() - self.started) / 60
        rate = f"{finished / minutes:.1f}/min" if minutes > 0 and finished else ""
        self.bar.update(
            self.task,
            completed=finished + self.counts["skipped"],
            failed=self.counts["failed"],
            rate=rate,
            spend=self._spend(),
        )

    def result(self, result: BatchResult) -> None:
        """One question finished (or was skipped)."""
        from rich.markup import escape

        self.counts[result.status] += 1
        self.tokens += result.tokens
        self.cost += result.cost_usd or 0.0
        self._refresh()
        if self.quiet:
            return
        n = sum(self.counts.values())
        if result.status == "skipped":
            # Every question after the first skipped one is skipped for the same reason:
            # said once (a huge input would otherwise print a line per question).
            if self.counts["skipped"] == 1:
                self.console.print(
                    escape(f"{result.error}: the questions not started are skipped"),
                    soft_wrap=True,
                    style="dim",
                )
            return
        if result.status == "done":
            if self.bar is not None:
                return
            sources = len(result.report.sources) if result.report is not None else 0
            line = (
                f"[{n}/{self.total}] done {result.id} ({result.elapsed_s:.1f} s, {sources} sources)"
            )
        else:
            line = f"[{n}/{self.total}] {result.status} {result.id}: {result.error}"
        self.console.print(
            escape(line), soft_wrap=True, style="yellow" if result.status == "failed" else "dim"
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def summary(self, before: int, failed_before: int, outdir: Path, cut: str | None = None) -> str:
        """The closing line: this run's counts, time, tokens and cost (and where reading
        the questions stopped, if it did)."""
        c = self.counts
        wall = time.monotonic() - self.started
        spent = f"{self.tokens:,} tokens" + (f", ${self.cost:.4f}" if self.cost else "")
        earlier = [cut] if cut else []
        if before:
            earlier.append(f"{before} done before")
        if failed_before:
            earlier.append(f"{failed_before} failed before (--retry-failed runs them again)")
        skipped = c["skipped"] + before + failed_before
        return (
            f"batch: {c['done']} done, {c['failed']} failed, {skipped} skipped"
            + (f" ({'; '.join(earlier)})" if earlier else "")
            + f" in {wall:.1f} s; {spent}; results in {outdir}"
        )


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
    # --batch-max-time counts from here: reading the questions is part of the batch.
    started = time.monotonic()
    from sleuth.settings import load_settings  # pydantic: not needed for --help

    settings = load_settings(values)
    max_cost, max_time = _budget(options["batch_max_cost"], options["batch_max_time"])
    ray = bool(options["ray"]) or options["ray_address"] is not None
    # Found, not imported: Ray is imported by sleuth.pipeline.batch_ray, which first sets
    # what keeps a local Ray on loopback.
    if ray and importlib.util.find_spec("ray") is None:
        raise ConfigError("--ray needs Ray: pip install 'sleuth-research[ray]'")
    import asyncio

    from sleuth.pipeline.batch import check_batch_settings
    from sleuth.pipeline.batch_input import read_questions
    from sleuth.pipeline.batch_outdir import OutDir

    deadline = None if max_time is None else started + max_time
    found = read_questions(questions, deadline=deadline)
    # What would fail every question fails now, before OUTDIR is made.
    asyncio.run(check_batch_settings(settings))
    out = OutDir.open(outdir, fmt=settings.format, retry_failed=bool(options["retry_failed"]))
    try:
        out.name_reports(q.id for q in found.items)
        return _run(found, out, settings, options, (max_cost, max_time, started))
    finally:
        out.close()


def _run(
    found: Any,
    out: Any,
    settings: Any,
    options: dict[str, Any],
    budgets: tuple[float | None, float | None, float],
) -> int:
    import asyncio

    from sleuth.pipeline.batch import research_many

    max_cost, max_time, started = budgets
    quiet = bool(options["quiet"])
    for line, first in found.repeats:
        click.echo(f"sleuth: warning: line {line} repeats line {first}: asked once", err=True)
    if found.cut is not None:
        click.echo(
            f"sleuth: warning: {found.cut}: the batch time budget (--batch-max-time "
            f"{max_time:g}s) was spent; what was not read is not started",
            err=True,
        )
    todo = [q for q in found.items if q.id not in out.done and q.id not in out.failed]
    before = sum(1 for q in found.items if q.id in out.done)
    failed_before = sum(1 for q in found.items if q.id in out.failed)
    progress = BatchProgress(len(todo), quiet)

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
            started=started,
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
    click.echo(progress.summary(before, failed_before, out.path, found.cut), err=True)
    every = found.cut is None and all(q.id in out.done for q in found.items)
    return EXIT_OK if every else EXIT_NO_SOURCES


def batch_command(settings_options: Callable[[], list[click.Option]]) -> click.Command:
    """The ``batch`` command, with ``settings_options()`` (the settings table's options)
    but ``--output`` (``-o`` names the output folder here)."""
    options = [o for o in settings_options() if o.name != "output"]
    for option in options:
        option.hidden = bool(option.help and option.help.startswith("Agent mode:"))

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

    return click.Command(
        "batch",
        callback=callback,
        params=[
            click.Argument(["questions"], metavar="QUESTIONS"),
            click.Option(
                ["--outdir", "-o"],
                required=True,
                type=click.Path(path_type=Path),
                help="Folder for results.jsonl and reports/ (made if missing; rerun to resume).",
            ),
            click.Option(
                ["--jobs", "-j"],
                type=click.IntRange(1, 1024),
                default=8,
                show_default=True,
                help="Questions researched at once.",
            ),
            click.Option(
                ["--batch-max-cost"],
                type=float,
                default=None,
                metavar="USD",
                help="Estimated model cost of the whole batch at most: no question "
                "starts after it is spent.",
            ),
            click.Option(
                ["--batch-max-time"],
                default=None,
                metavar="DURATION",
                help="Time for the whole batch (90, 30m, 2h): no question starts "
                "after it, and those running end by it.",
            ),
            click.Option(
                ["--retry-failed"],
                is_flag=True,
                default=None,
                help="Run again the questions an earlier run recorded as failed.",
            ),
            click.Option(
                ["--ray"],
                is_flag=True,
                default=None,
                help="Run the questions on Ray (a local cluster unless "
                "--ray-address); needs the 'ray' extra.",
            ),
            click.Option(
                ["--ray-address"],
                default=None,
                metavar="ADDRESS",
                help="Ray cluster to join (auto, or the head's HOST:PORT); implies --ray.",
            ),
            click.Option(
                ["--ray-workers"],
                type=click.IntRange(1, 10_000),
                default=None,
                help="Ray worker processes, each running --jobs questions at "
                "once [default: one per CPU of the cluster].",
            ),
            *options,
            click.Option(
                ["--quiet", "-q"],
                is_flag=True,
                flag_value=True,
                default=None,
                help="No progress bar or per-question lines; logs and the summary only.",
            ),
            verbose_option(),
        ],
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
