"""The one page of ``sleuth serve``: a question box, a live view of the run, the report.

Everything is inline (the CSP allows nothing else). Text from the server's progress
events is put on the page with ``textContent``, never as markup; only the report
fragment, which :mod:`sleuth.report.html` built with every piece of page text escaped, is
inserted as HTML.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

from sleuth._version import __version__
from sleuth.report.html import REPORT_CSS
from sleuth.report.tree import STATUS
from sleuth.report.waterfall import WATERFALL_JS, WATERFALL_KEY

__all__ = ["render_page"]

PAGE_CSS = """
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2329;
 background:#f3f5f7}
header.top{background:#15202b;color:#fff;padding:.7rem 1.5rem;display:flex;align-items:baseline;
 gap:1rem}
header.top h1{font-size:1.25rem;margin:0;letter-spacing:.02em}
header.top span{color:#9fb3c8;font-size:.9rem}
.wrap{display:grid;grid-template-columns:minmax(0,1fr) 18rem;gap:1.2rem;padding:1.2rem 1.5rem;
 max-width:84rem;margin:0 auto}
@media (max-width:900px){.wrap{grid-template-columns:1fr}}
.card{background:#fff;border:1px solid #dde3e8;border-radius:8px;padding:1rem 1.2rem;
 margin-bottom:1.2rem}
.card h2{font-size:1rem;margin:0 0 .6rem;color:#34414d}
form .q{display:flex;gap:.6rem}
form input,form select{font:inherit;padding:.45rem .6rem;border:1px solid #c5ced6;
 border-radius:6px;background:#fff;color:inherit}
#ui-question{flex:1;font-size:1.05rem}
form button{font:inherit;font-weight:600;padding:.45rem 1.1rem;border-radius:6px;border:0;
 background:#0b5cad;color:#fff;cursor:pointer}
form button:disabled{background:#8aa8c6;cursor:default}
button.secondary{background:#fff;color:#b3261e;border:1px solid #b3261e;font:inherit;
 padding:.3rem .8rem;border-radius:6px;cursor:pointer}
.opts{display:flex;flex-wrap:wrap;gap:.5rem 1.2rem;margin-top:.7rem;color:#4b5864;
 font-size:.9rem;align-items:center}
.opts label{display:flex;gap:.4rem;align-items:center}
.opts input[type=number]{width:4.5rem}
#ui-model{width:12rem}
.status{display:flex;align-items:center;gap:.8rem;margin-bottom:.6rem;min-height:1.8rem}
#ui-status{font-weight:600}
#ui-asked{margin:-.2rem 0 .7rem;font-size:1.05rem;color:#34414d}
#ui-status.err{color:#b3261e}
.counters{display:grid;grid-template-columns:repeat(6,minmax(0,1fr));gap:.5rem;margin-bottom:.8rem}
@media (max-width:700px){.counters{grid-template-columns:repeat(3,minmax(0,1fr))}}
.counter{background:#f5f7f9;border-radius:6px;padding:.4rem .6rem}
.counter b{display:block;font-size:1.3rem;line-height:1.2}
.counter span{font-size:.75rem;color:#5b6670;text-transform:uppercase;letter-spacing:.04em}
#ui-queries{display:flex;flex-wrap:wrap;gap:.35rem;margin:0 0 .6rem;padding:0;list-style:none}
#ui-queries li{background:#e8f0fa;color:#0b4b8a;border-radius:999px;padding:.1rem .6rem;
 font-size:.82rem}
#ui-tree{max-width:none}#ui-tree .qtree{margin:.4rem 0 .8rem}
#ui-log{list-style:none;margin:0;padding:0;max-height:15rem;overflow:auto;font:12.5px/1.45
 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;border-top:1px solid #eef1f4}
#ui-log li{padding:.12rem 0;border-bottom:1px solid #f1f3f5;overflow-wrap:anywhere}
#ui-log .kind{display:inline-block;min-width:7.5rem;color:#5b6670}
#ui-log .ev-fetched .kind,#ui-log .ev-report .kind{color:#1f7a3d}
#ui-log .ev-fetch_failed,#ui-log .ev-search_failed{color:#b3261e}
#ui-log .ev-fetch_start{color:#8a96a0}
#ui-live[hidden],#ui-report-card[hidden],#ui-draft-card[hidden]{display:none}
.draft-note{margin:0 0 .6rem;padding:.35rem .6rem;background:#fff6e0;border-radius:6px;
 color:#6b4e00;font-size:.88rem}
#ui-draft{white-space:pre-wrap;overflow-wrap:anywhere;color:#3b4652;max-height:22rem;
 overflow:auto}
#ui-timeline{max-width:none;margin-bottom:.6rem}#ui-timeline details.timeline{margin:.4rem 0}
.actions{display:flex;gap:.8rem;font-size:.9rem;margin-bottom:.4rem}
.actions a{color:#0b5cad}
#ui-runs{list-style:none;padding:0;margin:0}
#ui-runs li{padding:.45rem 0;border-bottom:1px solid #eef1f4;font-size:.88rem}
#ui-runs a{color:#0b5cad;text-decoration:none}
#ui-runs a:hover{text-decoration:underline}
#ui-runs small{display:block;color:#6b7680}
.note{color:#6b7680;font-size:.88rem}
"""


PAGE_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sleuth</title>
<style nonce="{nonce}">{css}</style>
</head>
<body>
<header class="top"><h1>sleuth</h1><span>research a question on the web, with citations</span>
</header>
<div class="wrap">
<main>
<section class="card">
<form id="ui-form" autocomplete="off">
<div class="q"><input id="ui-question" name="question" type="text" required maxlength="2000"
 placeholder="Ask a question, e.g. How does OAuth 2.0 authorization code flow work?"
 aria-label="Question"><button id="ui-go" type="submit">Research</button></div>
<div class="opts">
<label>Depth <select id="ui-depth" name="depth"><option value="1">1 quick</option>
<option value="2">2 moderate</option><option value="3">3 thorough</option></select></label>
<label>Mode <select id="ui-mode" name="mode"><option value="quick">Quick</option>
<option value="deep">Deep</option></select></label>
<label>Sources <input id="ui-sources" name="max_sources" type="number" min="1" max="60"></label>
<label>Search <select id="ui-search" name="search"></select></label>
<label>Model <input id="ui-model" name="model" type="text"></label>
</div>
</form>
</section>
<section class="card" id="ui-draft-card" hidden>
<p class="draft-note"><b>Draft</b> — the report as the model writes it. The checked report takes
 its place when the run ends: the citation check may still remove sentences.</p>
<div id="ui-draft"></div>
</section>
<section class="card" id="ui-live" hidden>
<div class="status"><span id="ui-status"></span><span id="ui-elapsed" class="note"></span>
<button id="ui-stop" class="secondary" type="button" hidden>Stop</button></div>
<p id="ui-asked"></p>
<div class="counters">
<div class="counter"><b id="ui-c-queries">0</b><span>queries</span></div>
<div class="counter"><b id="ui-c-searches">0</b><span>searches</span></div>
<div class="counter"><b id="ui-c-hits">0</b><span>hits</span></div>
<div class="counter"><b id="ui-c-fetched">0</b><span>pages read</span></div>
<div class="counter"><b id="ui-c-failed">0</b><span>failed</span></div>
<div class="counter"><b id="ui-c-tokens">0</b><span id="ui-c-tokens-label">tokens</span></div>
</div>
<ul id="ui-queries"></ul>
<div class="sleuth-report" id="ui-tree" hidden><details class="qtree" open><summary>Question
 tree <small></small></summary><div><ul></ul></div></details></div>
<div class="sleuth-report" id="ui-timeline"><details class="timeline" open><summary>Timeline
 <small>each request as it happens</small></summary><div class="wf" id="ui-wf"><p class="a">
<b></b><span></span></p>{key}</div></details></div>
<ul id="ui-log"></ul>
</section>
<section class="card" id="ui-report-card" hidden>
<div class="actions" id="ui-actions" hidden><a id="ui-dl-html" download="report.html">Download
 HTML</a><a id="ui-dl-md" download="report.md">Download Markdown</a><a id="ui-permalink"
 title="This report's address: bookmark or share it" hidden>Link to this report</a></div>
<div id="ui-report"></div>
</section>
</main>
<aside>
<section class="card"><h2>Past runs</h2><p id="ui-history-note" class="note"></p>
<ul id="ui-runs"></ul></section>
<p class="note">sleuth {version}</p>
</aside>
</div>
<script nonce="{nonce}">{timeline}
const TREE_STATUS = {status};
{waterfall}
{js}</script>
</body>
</html>
"""


def render_page(nonce: str) -> str:
    """The page, with ``nonce`` on its one style and one script element (for the CSP)."""
    return PAGE_HTML.format(
        nonce=nonce,
        css=PAGE_CSS + REPORT_CSS,
        js=_page_js(),
        waterfall=_waterfall_js(),
        timeline=WATERFALL_JS,
        status=json.dumps({k: list(v) for k, v in STATUS.items()}),
        key=WATERFALL_KEY,
        version=__version__,
    )


@cache
def _page_js() -> str:
    """The page's own script (a file of its own, beside this module)."""
    return files("sleuth.web").joinpath("page.js").read_text(encoding="utf-8")


@cache
def _waterfall_js() -> str:
    """The live waterfall's script (a file of its own, beside this module)."""
    return files("sleuth.web").joinpath("waterfall.js").read_text(encoding="utf-8")
