"""``sleuth eval FILE``: how well sleuth answers a question set with your model and settings.

FILE is SimpleQA's CSV, HotpotQA or MuSiQue JSON, or JSONL (``question``, ``answer``,
optional ``aliases``); ``--sample hotpotqa`` runs the set shipped with sleuth, over its
own documents, offline. It is a batch (:mod:`sleuth.cli.batch`): the same options, the
same output folder, resumable; each answer is graded as its question finishes
(:mod:`sleuth.pipeline.eval`), and the summary (accuracy, not attempted, mean time,
tokens, cost) comes on stdout as a Markdown table, or JSON with ``--format json``.

Exit codes: 0 every question is graded, 1 some are not (failed questions count as
graded: not attempted), 2 bad input, 130 interrupted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sleuth._extras import missing_extra
from sleuth.cli._common import EXIT_NO_SOURCES, EXIT_OK, GroupedCommand, Option
from sleuth.cli._logs import verbose_option
from sleuth.cli.batch import BatchProgress, _budget, batch_options
from sleuth.errors import ConfigError

if TYPE_CHECKING:
    from sleuth.pipeline.batch import BatchResult
    from sleuth.pipeline.eval import EvalSummary, Grade, QuestionSet

__all__ = ["eval_command", "summary_table"]

_GRADE_WORDS = {"correct": "correct", "incorrect": "incorrect", "not_attempted": "not attempted"}


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "–"


def summary_table(summary: EvalSummary) -> str:
    """The summary as a two-column Markdown table."""
    n = len(summary.graded)
    attempted = summary.count("correct") + summary.count("incorrect")
    mean = summary.mean_time_s
    cost = summary.cost_usd
    by = summary.to_json_dict()["graded_by"]
    graded_by = ", ".join(f"{how} {count}" for how, count in by.items() if count) or "–"
    rows = [
        ("set", summary.name),
        ("questions graded", f"{n} of {summary.questions}"),
        ("accuracy (correct)", _share(summary.count("correct"), n)),
        ("incorrect", _share(summary.count("incorrect"), n)),
        ("not attempted", _share(summary.count("not_attempted"), n)),
        ("correct given attempted", _share(summary.count("correct"), attempted)),
        ("graded by", graded_by),
        ("mean time", f"{mean:.1f} s" if mean is not None else "–"),
        ("tokens", f"{summary.tokens:,}"),
        ("cost", f"${cost:.4f}" if cost is not None else "–"),
        ("results", str(summary.outdir)),
    ]
    lines = ["| eval | |", "|---|---:|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


def _question_set(file: str | None, sample: str | None) -> QuestionSet:
    from sleuth.pipeline.eval import read_set, sample_set

    if (file is None) == (sample is None):
        raise ConfigError("give a question set FILE or --sample NAME (one of them)")
    return sample_set(sample) if sample is not None else read_set(str(file))


def _settings(sample: str | None, values: dict[str, Any]) -> Any:
    from sleuth.settings import load_settings, with_options

    settings = load_settings(values)
    if sample is None:
        return settings
    from sleuth.pipeline.eval import sample_docs
    from sleuth.store import default_home

    # A shipped sample is asked over its own documents: offline unless --search names
    # web providers too.
    update: dict[str, Any] = {"docs": sample_docs(sample, settings.home or default_home())}
    if values.get("search") is None:
        update["search"] = ["local"]
    return with_options(settings, update)


def _run_eval(file: str | None, own: dict[str, Any], values: dict[str, Any]) -> int:
    import asyncio

    from sleuth.pipeline.batch import check_batch_settings
    from sleuth.pipeline.eval import run_eval

    found = _question_set(file, own["sample"])
    if own["limit"] is not None:
        found.questions = found.questions[: own["limit"]]
    settings = _settings(own["sample"], values)
    max_cost, max_time = _budget(own["batch_max_cost"], own["batch_max_time"])
    ray = bool(own["ray"]) or own["ray_address"] is not None
    if ray:
        try:
            import ray as _  # noqa: F401
        except ImportError:
            raise missing_extra("ray", "ray", "--ray") from None
    quiet = bool(own["quiet"])
    for why in found.dropped:
        click.echo(f"sleuth: warning: {why}: left out", err=True)
    asyncio.run(check_batch_settings(settings))
    outdir = own["outdir"] or Path(f"sleuth-eval-{found.name}")
    progress: list[BatchProgress] = []

    def start(todo: int, before: int) -> None:
        progress.append(BatchProgress(todo, quiet, jobs=own["jobs"] or 1))
        if before and not quiet:
            click.echo(f"sleuth: {before} questions graded before: not run again", err=True)

    def event(item: Any) -> None:
        if progress:
            progress[0](item)

    def graded(result: BatchResult, grade: Grade) -> None:
        word = _GRADE_WORDS[grade.grade]
        progress[0].result(result, "" if result.status == "skipped" else word)

    try:
        summary = asyncio.run(
            run_eval(
                found,
                outdir,
                settings,
                jobs=own["jobs"],
                use_judge=not own["no_judge"],
                judge_model=own["judge_model"],
                retry_failed=bool(own["retry_failed"]),
                on_event=event,
                on_result=graded,
                on_start=start,
                max_cost=max_cost,
                max_time=max_time,
                ray=bool(own["ray"]),
                ray_address=own["ray_address"],
                ray_workers=own["ray_workers"],
            )
        )
    finally:
        if progress:
            progress[0].close()
    if settings.format == "json":
        click.echo(json.dumps(summary.to_json_dict(), ensure_ascii=False, indent=2))
    else:
        click.echo(summary_table(summary))
    return EXIT_OK if len(summary.graded) == summary.questions else EXIT_NO_SOURCES


def _eval_options() -> list[click.Option]:
    # The samples are named here, not read from sleuth.pipeline.eval: `sleuth --help`
    # must not load the pipeline (sample_set refuses a name it does not ship).
    return [
        Option(
            ["--sample"],
            metavar="NAME",
            group="Eval",
            default=None,
            help="Run a question set shipped with sleuth, offline: hotpotqa (20 "
            "HotpotQA questions, CC BY-SA 4.0, over their 200 Wikipedia paragraphs).",
        ),
        Option(
            ["--outdir", "-o"],
            group="Eval",
            type=click.Path(path_type=Path),
            default=None,
            help="Folder for results.jsonl and reports/ (rerun to resume) "
            "[default: sleuth-eval-NAME].",
        ),
        Option(
            ["--limit"],
            metavar="N",
            group="Eval",
            type=click.IntRange(1, None),
            default=None,
            help="Only the set's first N questions.",
        ),
        Option(
            ["--judge-model"],
            metavar="NAME",
            group="Eval",
            default=None,
            help="Model that grades the answers (same server) [default: --model].",
        ),
        Option(
            ["--no-judge"],
            group="Eval",
            is_flag=True,
            default=False,
            help="Grade by matching the gold answer only, even with a model.",
        ),
    ]


def eval_command(settings_options: Callable[[str], list[click.Option]]) -> click.Command:
    """The ``eval`` command, with a batch's settings options (``settings_options("batch")``)."""
    options = settings_options("batch")
    own_names = (
        "sample",
        "outdir",
        "limit",
        "judge_model",
        "no_judge",
        "jobs",
        "batch_max_cost",
        "batch_max_time",
        "retry_failed",
        "ray",
        "ray_address",
        "ray_workers",
        "quiet",
    )

    def callback(file: str | None, **values: Any) -> int:
        own = {name: values.pop(name) for name in own_names}
        return _run_eval(file, own, values)

    return GroupedCommand(
        "eval",
        lead="Eval",
        callback=callback,
        params=[
            click.Argument(["file"], metavar="[FILE]", required=False),
            *_eval_options(),
            *batch_options(),
            *options,
            Option(
                ["--quiet", "-q"],
                group="Output",
                is_flag=True,
                flag_value=True,
                default=None,
                help="No progress bar or per-question lines; the summary only.",
            ),
            verbose_option(),
        ],
        short_help="Accuracy and cost of sleuth on a question set with answers.",
        help="Research every question of FILE (SimpleQA's CSV, HotpotQA or MuSiQue "
        "JSON, or JSONL with question, answer and optional aliases) as a batch, grade "
        "each answer against the gold one, and print accuracy, not attempted, mean "
        "time, tokens and cost. With a model, a judge prompt grades (correct, "
        "incorrect, not attempted); without one, a normalised match on the report's "
        "Answer.",
        epilog=(
            "sleuth eval --sample hotpotqa runs 20 shipped questions over their own "
            "documents, offline. Writes OUTDIR/results.jsonl (each line with its "
            "grade under 'eval') and OUTDIR/reports/; running the same command again "
            "grades only what is missing.\n\nExit codes: 0 every question is graded, "
            "1 some are not, 2 bad input."
        ),
    )
