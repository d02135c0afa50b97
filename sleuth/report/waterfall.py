"""The timing waterfall of a report, as HTML: a section that opens on click.

Drawn from :mod:`sleuth.report.lanes`: one row per query, page or model call, each bar
placed on the run's shared time axis (its left edge and width are percentages of the
axis, in a ``style`` attribute: the report's CSP allows inline styles, and the web page
applies them itself). The critical path's bars are drawn solid, the others faded;
failed bars are red, cut ones hatched, cached ones a thin mark. Hovering or focusing
(clicking) a bar shows what it was: URL or query, status, size, time, why it ended.
Nothing here runs a script, and every piece of text is escaped.
"""

from __future__ import annotations

from html import escape

from sleuth.models import Report, Timeline
from sleuth.report.lanes import Bar, Layout, axis, layout

__all__ = ["WATERFALL_CSS", "WATERFALL_KEY", "minify", "render_waterfall", "summary_line"]


def minify(css: str) -> str:
    """``css`` on one line: its lines joined (each breaks after ``;``, ``,``, ``{`` or ``}``)."""
    return "".join(line.strip() for line in css.splitlines())


# Colours: search violet, download blue, extraction teal, model call orange. Short class
# names keep the file small: s, d, e (kinds; a model call has none), c (critical path),
# failed / cut / cached outcomes as f, x, k.
WATERFALL_CSS = minify("""
details.timeline{margin:1.6rem 0;border:1px solid var(--line);border-radius:6px}
.timeline>summary{cursor:pointer;padding:.5rem .8rem;font-weight:600}
.timeline small{font-weight:400;color:var(--muted)}
.wf{font:12px/16px system-ui,sans-serif;padding:0 .8rem .7rem;overflow-x:auto}
.wf p{display:grid;grid-template-columns:minmax(9rem,34%) 1fr;margin:0;min-width:34rem}
.wf p:nth-child(even){background:var(--bg2)}
.wf b{font-weight:400;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;padding-right:6px}
.wf b:hover{white-space:normal;word-break:break-all}
.wf em{float:right;font:10px/14px sans-serif;margin:1px 0 0 4px;padding:0 4px;border-radius:3px;
background:var(--line)}
.wf em.g{background:#1f7a3d;color:#fff}.wf em.w{background:#7a848d;color:#fff}
.wf p>span{position:relative;
background:linear-gradient(90deg,var(--line) 1px,#0000 1px) 0 0/var(--t)}
.wf h4{margin:8px 0 2px;color:var(--muted);font-size:10.5px;text-transform:uppercase}
.wf h4 span{text-transform:none;font-weight:400;margin-left:.5em}
.wf .a span{background:none;color:var(--muted);font-size:10px}
.wf .a i{background:none;transform:translateX(-100%);font-style:normal;white-space:nowrap}
.wf i{position:absolute;top:3px;height:10px;min-width:2px;border-radius:2px;opacity:.45;
background:linear-gradient(90deg,var(--line) var(--q,0),var(--c,#d9822b) 0)}
.wf .s{--c:#7c4dcc}.wf .d{--c:#2f74c0}.wf .e{--c:#1a9a8a}.wf .f{--c:#c62828}.wf .k{--c:#8a8f94}
.wf .x{background:repeating-linear-gradient(135deg,#8a8f94 0 3px,#0000 0 6px)}
.wf .c{opacity:1;box-shadow:0 0 0 1.5px var(--fg)}
.wf i:hover,.wf i:focus{opacity:1;outline:2px solid var(--link);z-index:2}
.wf i:hover:after,.wf i:focus:after{content:attr(data-i);position:absolute;top:14px;left:0;
z-index:3;width:max-content;max-width:28rem;padding:4px 7px;border-radius:4px;
background:var(--fg);color:var(--bg);pointer-events:none}
.wf i.r:after{left:auto;right:0}
.wf .y{display:flex;flex-wrap:wrap;gap:0 1rem;margin-top:.5rem;color:var(--muted)}
.wf .y i{position:static;display:inline-block;width:14px;margin-right:4px;vertical-align:-1px}
""")


def summary_line(timeline: Timeline) -> str:
    """``45 requests in 6.2 s; critical path 2.9 s``."""
    path = f"; critical path {timeline.critical_s:.1f} s" if timeline.critical else ""
    count = len(timeline.spans)
    return f"{count} request{'s' if count != 1 else ''} in {timeline.wall_s:.1f} s{path}"


def _pct(value: float, span: float) -> str:
    return f"{100 * value / span:.1f}".removesuffix(".0") + "%"


_KIND = {"search": "s", "download": "d", "extract": "e", "llm": ""}
_OUTCOME = {"failed": "f", "cut": "x", "cached": "k", "ok": ""}


def _bar(bar: Bar, axis_s: float) -> str:
    span = bar.span
    end = span.end if span.end is not None else span.start
    start = span.queued if span.kind != "search" else span.start
    right = "r" * (start > 0.55 * axis_s)  # its tooltip opens leftwards, inside the box
    flags = (_KIND[span.kind], _OUTCOME[span.outcome], "c" * bar.critical, right)
    cls = " ".join(c for c in flags if c)
    style = f"left:{_pct(start, axis_s)};width:{_pct(end - start, axis_s)}"
    if end > start and span.start - start >= 0.05 * (end - start):
        style += f";--q:{_pct(span.start - start, end - start)}"  # the part spent queued
    attr = f' class="{cls}"' if " " in cls else f" class={cls}" if cls else ""
    return f'<i{attr} style="{style}" tabindex=0 data-i="{escape(bar.ended, quote=True)}"></i>'


def _tag(tag: str) -> str:
    if not tag:
        return ""
    kind = " class=g" if tag.startswith("source") else " class=w" if "wait" in tag else ""
    return f"<em{kind}>{escape(tag)}</em>"


def _rows(drawn: Layout, axis_s: float) -> list[str]:
    out = []
    for group in drawn.groups:
        note = f"<span>{escape(group.note)}</span>" if group.note else ""
        out.append(f"<h4>{escape(group.title)}{note}</h4>")
        for row in group.rows:
            bars = "".join(_bar(bar, axis_s) for bar in row.bars)
            out.append(f"<p><b>{_tag(row.tag)}{escape(row.label)}</b><span>{bars}</span></p>")
    return out


WATERFALL_KEY = (
    '<div class="y"><span><i class="s c"></i>search</span><span><i class="d c"></i>download'
    '</span><span><i class="e c"></i>extraction</span><span><i class=c></i>model call</span>'
    '<span><i></i>off the critical path</span><span><i class="d c" style="--q:60%"></i>'
    'queued</span><span><i class="f c"></i>failed</span><span><i class="x c"></i>not '
    "waited for</span></div>"
)


def render_waterfall(report: Report, *, open_: bool = False) -> str:
    """The report's timeline as a ``<details>`` section ("" when it has none)."""
    timeline = report.timeline
    if timeline is None or not timeline.spans:
        return ""
    drawn = layout(timeline, report)
    step, ticks = axis(drawn.wall_s)
    axis_s = step * ticks
    labels = "".join(
        f'<i style="left:{_pct(i * step, axis_s)}">{_seconds(i * step)}</i>'
        for i in range(1, ticks + 1)
    )
    body = "\n".join(_rows(drawn, axis_s))
    return (
        f'<details class="timeline"{" open" if open_ else ""}><summary>Timeline '
        f"<small>{escape(summary_line(timeline))}</small></summary>\n"
        f'<div class="wf" style="--t:{_pct(step, axis_s)}">\n'
        f'<p class="a"><b></b><span>{labels}</span></p>\n{body}\n{WATERFALL_KEY}</div></details>\n'
    )


def _seconds(value: float) -> str:
    if value >= 60:
        return f"{value / 60:g} min"
    return f"{value:g} s"
