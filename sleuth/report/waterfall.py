"""The timing waterfall of a report, as HTML: a section that opens on click.

Drawn from :mod:`sleuth.report.lanes`: one row per query, page or model call, each bar
placed on the run's shared time axis. The section carries the layout as one compact
JSON object, deflated and in base64 (:func:`pack`: only the script reads it), ``{"a":
[tick step, ticks], "g": [[title, note, rows]], "k": the key (:data:`KEY`), "s": the
stylesheet (a standalone document's)}``: a row is
``[label, what became of its page, bars]``, a bar ``[classes, start, end, HTTP status or
the model call's subject, size, why it ended, time queued]`` (seconds; trailing empty
fields left out; classes as the stylesheet names them: kind ``s`` ``d`` ``e`` (a model
call has none), outcome ``f`` failed ``x`` cut ``k`` cached, ``c`` on the critical path).
``waterfall.js`` (:data:`WATERFALL_JS`; in a report, run by :data:`REPORT_LOADER`, both
allowed by their hashes) draws it: a bar's left edge and width are percentages of the
axis, its hover text composed from its fields (as markup, each request would cost three
times the bytes).
The critical path's bars are drawn solid, the others faded; failed bars are red, cut
ones hatched, cached ones a thin mark. Hovering or focusing (clicking) a bar shows
what it was: status, size, time, why it ended.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import zlib
from html import escape
from importlib.resources import files
from typing import Any

from sleuth.models import Report, Timeline
from sleuth.report.lanes import Bar, Layout, axis, layout

__all__ = [
    "DATA_TYPE",
    "KEY",
    "REPORT_LOADER",
    "REPORT_LOADER_HASH",
    "REPORT_SCRIPT",
    "WATERFALL_CSS",
    "WATERFALL_JS",
    "WATERFALL_JS_HASH",
    "WATERFALL_KEY",
    "minify",
    "pack",
    "render_waterfall",
    "summary_line",
    "unpack",
]


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
.wf .a{height:18px}.wf .a span{background:none;color:var(--muted);font-size:10px}
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
.wf .y .qd{--q:60%}
""")


#: The waterfall's key: each entry a bar's classes and what they mean. A report's data
#: block carries it (its script draws it); the web page shows it under its live timeline
#: as :data:`WATERFALL_KEY`.
KEY = (
    ("s c", "search"),
    ("d c", "download"),
    ("e c", "extraction"),
    ("c", "model call"),
    ("", "off the critical path"),
    ("d c qd", "queued"),
    ("f c", "failed"),
    ("x c", "not waited for"),
)
#: The key as markup.
WATERFALL_KEY = (
    '<div class="y">'
    + "".join(f'<span><i class="{classes}"></i>{label}</span>' for classes, label in KEY)
    + "</div>"
)


def summary_line(timeline: Timeline) -> str:
    """``45 requests in 6.2 s; critical path 2.9 s``."""
    path = f"; critical path {timeline.critical_s:.1f} s" if timeline.critical else ""
    count = len(timeline.spans)
    return f"{count} request{'s' if count != 1 else ''} in {timeline.wall_s:.1f} s{path}"


def _pct(value: float, span: float) -> str:
    return f"{100 * value / span:.1f}".removesuffix(".0") + "%"


_STRING = re.compile(r"(\"[^\"]*\"|'[^']*')")
_AROUND = re.compile(r"\s*([-=+*/<>?:,;{}()\[\]|&!])\s*")


def _minified(source: str) -> str:
    """``source`` (``waterfall.js``, or its first part) without its comments and the spaces
    its code does not need (not a general minifier: its strings hold no quote marks, its
    code no ``+ +``)."""
    lines = []
    for line in source.splitlines():
        line = re.sub(r"\s+//\s.*$", "", line).strip()
        if line and not line.startswith("//"):
            parts = _STRING.split(line)  # odd parts are string literals, kept as they are
            lines.append(
                "".join(p if i % 2 else _AROUND.sub(r"\1", p) for i, p in enumerate(parts))
            )
    return "\n".join(lines)


_SOURCE = files("sleuth.report").joinpath("waterfall.js").read_text(encoding="utf-8")
#: The function that draws the waterfalls under a node (``SleuthTimeline(root)``), with
#: its reader of data blocks.
WATERFALL_JS = _minified(_SOURCE)
#: The script that draws a report's timeline: that function without its reader (the part
#: of ``waterfall.js`` from its ``// @reader`` line on: the report's loader has read the
#: block, the data is on the box), run on the document. A standalone report carries it
#: packed in its timeline's data block (it serves the drawing only); :data:`REPORT_LOADER`
#: unpacks and runs it.
REPORT_SCRIPT = (
    _minified(_SOURCE[: _SOURCE.index("// @reader")])
    + "\nSleuthTimeline.read=(s)=>Promise.resolve(s.parentNode.wfData)\nSleuthTimeline(document)"
)
#: A standalone report's one inline script: it unpacks the timeline's data block, adds its
#: stylesheet, hands the data to the drawing script and runs that (allowed by its hash).
REPORT_LOADER = (
    '(()=>{var b=document.querySelector(".wf>script[type$=timeline]"),'
    "e=t=>document.createElement(t);b&&new Response(new Blob([Uint8Array.from("
    "atob(b.textContent),c=>c.charCodeAt(0))]).stream().pipeThrough("
    'new DecompressionStream("deflate-raw"))).json().then(d=>{var '
    's=e("style"),j=e("script");s.textContent=d.s;document.head.append(s);'
    "b.parentNode.wfData=d;j.textContent=d.j;document.body.append(j)})})()"
)


def _hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode("ascii")


#: The CSP hashes of the drawing script and of the loader.
WATERFALL_JS_HASH = _hash(REPORT_SCRIPT)
REPORT_LOADER_HASH = _hash(REPORT_LOADER)

_KIND = {"search": "s", "download": "d", "extract": "e", "llm": ""}
_OUTCOME = {"failed": "f", "cut": "x", "cached": "k", "ok": ""}


def _t(value: float) -> float | int:
    rounded = round(value, 2)
    return int(rounded) if rounded == int(rounded) else rounded


def _bar(bar: Bar) -> list[Any]:
    """A bar as ``[classes, start, end, status or subject, size, why, queued]``, trailing
    empty fields left out (see the module docstring)."""
    span = bar.span
    outcome = _OUTCOME[span.outcome] if span.end is not None else ""
    flags = (_KIND[span.kind], outcome, "c" * bar.critical)
    queued = span.start - span.queued if span.kind != "search" else 0.0
    fields: list[Any] = [
        " ".join(f for f in flags if f),
        _t(span.start),
        _t(span.end) if span.end is not None else None,
        span.status if span.kind == "download" else bar.what,
        span.size if span.kind != "llm" else None,
        bar.why,
        _t(queued),
    ]
    while len(fields) > 3 and fields[-1] in ("", None, 0):
        fields.pop()
    return fields


def _data(drawn: Layout, step: float, ticks: int) -> dict[str, Any]:
    groups = [
        [
            group.title,
            group.note,
            [[row.label, row.tag, [_bar(b) for b in row.bars]] for row in group.rows],
        ]
        for group in drawn.groups
    ]
    return {"a": [_t(step), ticks], "g": groups, "k": KEY}


#: The type of the script element holding a waterfall's packed data (never run).
DATA_TYPE = "text/x-sleuth-timeline"


def pack(data: dict[str, Any]) -> str:
    """``data`` as the waterfall's data block holds it: its JSON deflated (raw DEFLATE,
    which the browser's ``DecompressionStream`` reads) and in base64. Only what the script
    reads is packed: nothing a reader without scripts could have seen."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
    return base64.b64encode(squeeze.compress(text.encode()) + squeeze.flush()).decode("ascii")


def unpack(block: str) -> dict[str, Any]:
    """The data of a block :func:`pack` wrote (for tests and tools)."""
    data: dict[str, Any] = json.loads(zlib.decompress(base64.b64decode(block), -15))
    return data


def render_waterfall(report: Report, *, open_: bool = False, standalone: bool = False) -> str:
    """The report's timeline as a ``<details>`` section ("" when it has none), drawn by
    :data:`WATERFALL_JS` from its packed data block (:func:`pack`), which holds its key
    too and, for a ``standalone`` document, its stylesheet: both serve the drawing only."""
    timeline = report.timeline
    if timeline is None or not timeline.spans:
        return ""
    drawn = layout(timeline, report)
    step, ticks = axis(drawn.wall_s)
    data = _data(drawn, step, ticks)
    if standalone:  # what only the drawing needs: packed with the data it draws
        data.update(s=WATERFALL_CSS, j=REPORT_SCRIPT)
    return (
        f'<details class="timeline"{" open" if open_ else ""}><summary>Timeline '
        f"<small>{escape(summary_line(timeline))}</small></summary>\n"
        f'<div class="wf"><script type="{DATA_TYPE}">{pack(data)}</script>'
        "<noscript>The timeline is drawn by a script of this file.</noscript></div></details>\n"
    )
