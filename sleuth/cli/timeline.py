"""``sleuth show RUN_ID --timeline``: a stored run's requests as a waterfall on the terminal.

The same layout as the HTML report's (:mod:`sleuth.report.lanes`): a row per query, page
and model call, grouped by stage (and by branch in a deep research), each bar on one time
axis; the critical path heavy, bold and marked ``◆``, failed requests red, cut ones dim
and dashed, cached ones a single tick. The run's own record gives the spans; a run stored
before sleuth kept timings says so instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sleuth._format import plural

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from sleuth.models import Report, Timeline
    from sleuth.report.lanes import Bar, Layout
    from sleuth.store import RunInfo, Store

__all__ = ["render_timeline", "show_timeline", "stored_timeline"]

_COLOURS = {"search": "magenta", "download": "blue", "extract": "cyan", "llm": "yellow"}
_LABEL_WIDTH = 36
#: The time columns after the bar: start and duration of the row's first bar.
_TIMES_WIDTH = 16


def stored_timeline(store: Store, info: RunInfo) -> tuple[Timeline | None, Report | None]:
    """A stored run's timeline and report: the report's own, or (a run that ended
    without one) the spans of its record, with the critical path of what it read."""
    from sleuth.critical import timeline_of
    from sleuth.models import Span, Timeline
    from sleuth.report.html import report_from_data

    try:
        report = report_from_data(info.report) if isinstance(info.report, dict) else None
    except ValueError:  # a report of another shape: the record's spans are still drawn
        report = None
    if report is not None and report.timeline is not None:
        return report.timeline, report
    records = store.stages(info.id)
    spans = [
        Span.model_validate(item)
        for r in records
        if r.stage == "spans" and isinstance(r.payload, list)
        for item in r.payload
    ]
    if not spans:
        return None, report
    hits: dict[str, list[str]] = {}
    for record in records:
        if record.stage == "hits" and isinstance(record.payload, dict):
            found = [str(h.get("url", "")) for h in record.payload.get("hits") or []]
            hits.setdefault(str(record.payload.get("query", "")), []).extend(found)
    end = (info.finished_at or info.updated_at) - info.created_at
    wall = max([end, *(s.end or s.start for s in spans)])
    if report is None:
        return Timeline(spans=sorted(spans, key=lambda s: (s.start, s.id)), wall_s=wall), None
    return timeline_of(spans, wall, hits, report), report


def _bar_cells(bar: Bar, axis_s: float, width: int) -> tuple[int, int]:
    span = bar.span
    start = round(span.start / axis_s * width)
    end = span.end if span.end is not None else span.start
    length = max(1, round((end - span.start) / axis_s * width))
    return min(start, width - 1), length


def _track(bars: list[Bar], axis_s: float, width: int) -> Any:
    from rich.text import Text

    cells: list[tuple[str, str]] = [(" ", "")] * width
    for bar in bars:
        start, length = _bar_cells(bar, axis_s, width)
        span = bar.span
        style = _COLOURS[span.kind]
        char = "━" if bar.critical else "─"  # the path stands out without colour too
        if span.outcome == "failed":
            style = "red"
        elif span.outcome == "cut":
            style, char = "dim", "╌"
        elif span.outcome == "cached":
            style, char = "dim", "│"
        style += " bold" if bar.critical else " dim" if span.outcome == "ok" else ""
        for i in range(start, min(width, start + length)):
            cells[i] = (char, style)
    text = Text()
    run, run_style = "", ""
    for char, style in cells:  # one piece per run of a style, not one per column
        if style != run_style and run:
            text.append(run, style=run_style or None)
            run = ""
        run, run_style = run + char, style
    text.append(run, style=run_style or None)
    return text


def _row_times(bars: list[Bar]) -> str:
    start = min(b.span.start for b in bars)
    end = max((b.span.end if b.span.end is not None else b.span.start) for b in bars)
    return f"{start:6.2f} {end - start:6.2f} s"


def render_timeline(drawn: Layout, width: int) -> RenderableType:
    """The waterfall as a rich table ``width`` columns wide."""
    from rich.table import Table
    from rich.text import Text

    from sleuth.report.lanes import axis

    step, ticks = axis(drawn.wall_s)
    axis_s = step * ticks
    track = max(20, width - _LABEL_WIDTH - _TIMES_WIDTH - 6)
    table = Table(box=None, show_header=True, pad_edge=False, expand=False, padding=(0, 1))
    table.add_column("", width=1, no_wrap=True)
    table.add_column("request", width=_LABEL_WIDTH, no_wrap=True, overflow="ellipsis")
    table.add_column(_ruler(step, ticks, track), width=track, no_wrap=True)
    table.add_column("start   took", width=_TIMES_WIDTH, no_wrap=True, justify="right")
    for group in drawn.groups:
        title = Text(group.title.upper(), style="bold dim")
        if group.note:
            title.append(f" {group.note}", style="dim")
        table.add_row("", title, "", "")
        for row in group.rows:
            critical = any(b.critical for b in row.bars)
            label = Text(row.label)
            if row.tag:
                label = Text.assemble((f"{row.tag} ", _tag_style(row.tag)), row.label)
            table.add_row(
                Text("◆", style="bold") if critical else "",
                label,
                _track(row.bars, axis_s, track),
                _row_times(row.bars),
            )
    return table


def _tag_style(tag: str) -> str:
    if tag.startswith("source"):
        return "green"
    return "yellow" if tag == "not waited for" else "red" if tag == "failed" else "dim"


def _ruler(step: float, ticks: int, width: int) -> str:
    """The axis as a header: a label at each tick, placed at its column."""
    cells = [" "] * width
    for i in range(1, ticks + 1):
        label = f"{i * step:g}s"
        at = min(width, round(i / ticks * width)) - len(label)
        for j, char in enumerate(label):
            if 0 <= at + j < width:
                cells[at + j] = char
    return "".join(cells)


def show_timeline(store: Store, info: RunInfo, console: Console) -> None:
    """Print the stored run's waterfall on ``console`` (or say it predates timings)."""
    from sleuth.report.lanes import layout
    from sleuth.report.waterfall import summary_line

    timeline, report = stored_timeline(store, info)
    if timeline is None or not timeline.spans:
        console.print(
            f"run {info.id} predates timings: sleuth did not yet record how long each "
            "request took when it ran; runs made since then have a timeline"
        )
        return
    drawn = layout(timeline, report)
    console.print(f"[bold]run {info.id}[/]: {info.question}", highlight=False, markup=True)
    console.print(summary_line(timeline), highlight=False)
    console.print(render_timeline(drawn, console.width))
    critical = [s for s in timeline.spans if s.id in set(timeline.critical)]
    if critical:
        parts = " → ".join(
            f"{s.stage if s.kind == 'llm' else s.kind} {(s.end or s.start) - s.start:.2f}s"
            for s in critical
        )
        count = plural(len(critical), "request", "requests")
        console.print(f"◆ critical path ({count}): {parts}", highlight=False)
    console.print(
        "[magenta]━[/] search  [blue]━[/] download  [cyan]━[/] extraction  [yellow]━[/] "
        "model call  [red]━[/] failed  [dim]╌[/] not waited for  [dim]│[/] cached; "
        "heavy: on the critical path",
        highlight=False,
    )
