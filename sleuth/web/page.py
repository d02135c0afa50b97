"""The one page of ``sleuth serve``: a question box, a live view of the run, the report.

Everything is inline (the CSP allows nothing else). Text from the server's progress
events is put on the page with ``textContent``, never as markup; only the report
fragment, which :mod:`sleuth.report.html` built with every piece of page text escaped, is
inserted as HTML.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from sleuth._version import __version__
from sleuth.report.html import REPORT_CSS
from sleuth.report.waterfall import WATERFALL_KEY

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
#ui-tree{list-style:none;margin:0 0 .6rem;padding:0;font:12.5px/1.45 ui-monospace,monospace}
#ui-tree li{padding:.1rem 0;overflow-wrap:anywhere}
#ui-log{list-style:none;margin:0;padding:0;max-height:15rem;overflow:auto;font:12.5px/1.45
 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;border-top:1px solid #eef1f4}
#ui-log li{padding:.12rem 0;border-bottom:1px solid #f1f3f5;overflow-wrap:anywhere}
#ui-log .kind{display:inline-block;min-width:7.5rem;color:#5b6670}
#ui-log .ev-fetched .kind,#ui-log .ev-report .kind{color:#1f7a3d}
#ui-log .ev-fetch_failed,#ui-log .ev-search_failed{color:#b3261e}
#ui-log .ev-fetch_start{color:#8a96a0}
#ui-live[hidden],#ui-report-card[hidden]{display:none}
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

PAGE_JS = r"""
"use strict";
const $ = (sel) => document.querySelector(sel);
const state = {source: null, runId: null, t0: 0, timer: null, counts: {}, timeline: ""};
const COUNTERS = ["queries", "searches", "hits", "fetched", "failed", "tokens"];

function text(el, value) { el.textContent = value; return el; }
function count(n, one, many) { return n.toLocaleString() + " " + (n === 1 ? one : many); }
// A past run's address is the page's with ?run=ID: a link to bookmark or share. (A query,
// not a #fragment: the report's citations use fragments to jump to their sources.)
function runHref(id) { return "?run=" + encodeURIComponent(id); }
function linkedRun() { return new URLSearchParams(location.search).get("run"); }
function setStatus(message, isError) {
  const el = text($("#ui-status"), message);
  el.className = isError ? "err" : "";
}
function resetCounters() {
  for (const name of COUNTERS) { state.counts[name] = 0; text($("#ui-c-" + name), "0"); }
  state.cost = 0;
  text($("#ui-c-tokens-label"), "tokens");
}
function bump(name, by) {
  state.counts[name] += by;
  text($("#ui-c-" + name), state.counts[name].toLocaleString());
}
function tokensIn(data) {
  let n = 0;
  for (const key of ["tokens", "prompt_tokens", "completion_tokens"]) {
    if (typeof data[key] === "number") n += data[key];
  }
  return n;
}
function logLine(kind, message) {
  const li = document.createElement("li");
  li.className = "ev-" + kind;
  li.append(text(document.createElement("span"), kind), " ", message);
  li.firstChild.className = "kind";
  const log = $("#ui-log");
  log.append(li);
  while (log.children.length > 400) log.firstChild.remove();
  log.scrollTop = log.scrollHeight;
}
function onProgress(ev) {
  const e = JSON.parse(ev.data);
  const data = e.data || {};
  if (e.kind === "span") return Waterfall.add(data);  // timings: drawn, not logged
  if (e.kind === "plan" && Array.isArray(data.queries)) {
    const list = $("#ui-queries");
    list.replaceChildren();
    for (const q of data.queries) list.append(text(document.createElement("li"), q));
    bump("queries", data.queries.length);
  } else if (e.kind === "search") {
    bump("searches", 1);
    if (typeof data.hits === "number") bump("hits", data.hits);
  } else if (e.kind === "fetched") {
    bump("fetched", 1);
  } else if (e.kind === "fetch_failed" || e.kind === "search_failed") {
    bump("failed", 1);
  } else if (e.kind === "branch" && typeof data.node === "string") {
    treeNode(data);
    Waterfall.branch(data.node, String(data.question || ""));
  }
  const tokens = tokensIn(data);
  if (tokens) bump("tokens", tokens);
  if (typeof data.cost_usd === "number") {  // a model call whose price sleuth knows
    state.cost = (state.cost || 0) + data.cost_usd;
    text($("#ui-c-tokens-label"), "tokens · $" + state.cost.toFixed(4));
  }
  logLine(e.kind, e.message);
  setStatus(e.kind + ": " + e.message);
}
function treeNode(d) {
  // deep mode: one line per question of the tree, updated as it is researched
  const list = $("#ui-tree");
  list.hidden = false;
  let li = list.querySelector('[data-node="' + CSS.escape(d.node) + '"]');
  if (!li) {
    li = document.createElement("li");
    li.dataset.node = d.node;
    li.style.paddingLeft = (Math.max(0, (d.level || 1) - 1) * 1.2) + "rem";
    list.append(li);
  }
  const pages = d.wanted ? " " + d.read + "/" + d.wanted + " pages" : "";
  text(li, "L" + d.level + " · " + d.node + " " + d.status + pages + " — " + d.question);
}
function showReport(html) {
  const card = $("#ui-report-card");
  $("#ui-report").innerHTML = html;  // built by sleuth.report.html: all page text escaped
  Waterfall.applyStyles($("#ui-report"));
  card.hidden = false;
}
function onReport(ev) {
  const r = JSON.parse(ev.data);
  const ms = Math.round(performance.now() - state.t0);
  document.body.dataset.firstReportMs = String(ms);
  state.counts.tokens = 0; bump("tokens", r.tokens || 0);
  showReport(r.html);
  if (r.timeline_html) {  // the finished timeline, with its critical path, in place of the live one
    Waterfall.reset(null);
    $("#ui-timeline").innerHTML = r.timeline_html;  // built by sleuth.report.waterfall: escaped
    Waterfall.applyStyles($("#ui-timeline"));
  }
  const links = $("#ui-actions");
  links.hidden = false;
  $("#ui-dl-html").href = "/api/runs/" + state.runId + "/report.html";
  $("#ui-dl-md").href = "/api/runs/" + state.runId + "/report.md";
  // The stored run's address: this report can be bookmarked, shared and opened again.
  const permalink = $("#ui-permalink");
  permalink.hidden = !r.run_id;
  if (r.run_id) permalink.href = runHref(r.run_id);
  setStatus("Report ready in " + (ms / 1000).toFixed(1) + " s — confidence " + r.confidence +
            ", " + count(r.sources, "source", "sources") + ", " +
            count(r.failures, "gap", "gaps"));
  logLine("report", "report shown after " + (ms / 1000).toFixed(2) + " s");
}
function busy(running) {
  // The Research button knows a run is going, whichever tab or script started it.
  const go = $("#ui-go");
  go.disabled = running;
  text(go, running ? "Running…" : "Research");
  go.title = running ? "a research is running: wait for it or stop it" : "";
}
function finish() {
  if (state.source) { state.source.close(); state.source = null; }
  clearInterval(state.timer);
  Waterfall.draw(false);
  busy(false);
  $("#ui-stop").hidden = true;
  loadHistory();
}
function onFailed(ev) {
  const r = JSON.parse(ev.data);
  setStatus("Failed: " + r.message, true);
  logLine("failed", r.message);
}
function attach(id, events, question, ownT0) {
  // Follow run ``id`` live: started here, in another tab, or by a script (POST /api/runs).
  if (state.source) state.source.close();
  clearInterval(state.timer);
  state.runId = id;
  state.t0 = ownT0 || performance.now();
  if (!ownT0) delete document.body.dataset.firstReportMs;
  busy(true);
  resetCounters();
  $("#ui-queries").replaceChildren();
  $("#ui-tree").replaceChildren();
  $("#ui-tree").hidden = true;
  $("#ui-log").replaceChildren();
  $("#ui-timeline").innerHTML = state.timeline;  // the empty live waterfall
  Waterfall.applyStyles($("#ui-timeline"));
  Waterfall.reset($("#ui-wf"));
  $("#ui-report-card").hidden = true;
  $("#ui-actions").hidden = true;
  $("#ui-live").hidden = false;
  $("#ui-stop").hidden = false;
  setStatus("Researching…");
  text($("#ui-asked"), question);  // whoever started it: the page says what is researched
  state.timer = setInterval(() => {
    text($("#ui-elapsed"), ((performance.now() - state.t0) / 1000).toFixed(1) + " s");
    Waterfall.draw(true);
  }, 100);
  const source = new EventSource(events);
  state.source = source;
  source.addEventListener("progress", onProgress);
  source.addEventListener("report", onReport);
  source.addEventListener("failed", onFailed);
  source.addEventListener("end", finish);
}
async function start(event) {
  event.preventDefault();
  const body = {
    question: $("#ui-question").value, depth: $("#ui-depth").value,
    max_sources: $("#ui-sources").value, search: $("#ui-search").value,
    mode: $("#ui-mode").value,
    model: $("#ui-model").value,
  };
  const t0 = performance.now();
  delete document.body.dataset.firstReportMs;
  $("#ui-go").disabled = true;
  let reply, answer;
  try {
    reply = await fetch("/api/runs", {method: "POST", body: JSON.stringify(body),
                                      headers: {"Content-Type": "application/json"}});
    answer = await reply.json();
  } catch (err) {
    $("#ui-go").disabled = false;
    return setStatus("The server did not answer: " + err, true);
  }
  if (!reply.ok) {
    $("#ui-go").disabled = reply.status === 409;  // another run is going: it is shown
    return setStatus(answer.error, true);
  }
  if (state.runId !== answer.id) attach(answer.id, answer.events, body.question, t0);
  else state.t0 = t0;
}
async function stop() {
  if (state.runId) await fetch("/api/runs/" + state.runId + "/stop", {method: "POST"});
}
async function loadHistory() {
  const list = $("#ui-runs");
  let data;
  try { data = await (await fetch("/api/history")).json(); } catch (err) { return; }
  list.replaceChildren();
  text($("#ui-history-note"), data.note || (data.runs.length ? "" : "No runs yet."));
  for (const run of data.runs) {
    const li = document.createElement("li");
    const a = text(document.createElement("a"), run.question);
    a.href = runHref(run.id);  // a plain link: the page opens with that run's report
    const when = new Date(run.created_at * 1000).toLocaleString();
    li.append(a, text(document.createElement("small"),
                      when + " · " + run.status + " · " + count(run.sources, "source",
                                                                 "sources")));
    list.append(li);
  }
}
async function openRun(id) {
  const reply = await fetch("/api/history/" + encodeURIComponent(id));
  const data = await reply.json();
  if (!reply.ok) {  // a stale bookmark: say so where the report would be
    $("#ui-actions").hidden = true;
    $("#ui-report").replaceChildren(text(document.createElement("p"), data.error));
    $("#ui-report-card").hidden = false;
    return setStatus(data.error, true);
  }
  $("#ui-actions").hidden = true;
  showReport(data.html);
  document.title = "sleuth: " + data.question;
  setStatus("Stored run " + id);
  $("#ui-report-card").scrollIntoView();
}
async function init() {
  const cfg = await (await fetch("/api/config")).json();
  $("#ui-depth").value = String(cfg.depth);
  $("#ui-sources").value = String(cfg.max_sources);
  $("#ui-mode").value = cfg.mode || "quick";
  // Deep mode reads more sources by default: switch the field while the user left it alone.
  const defaults = {quick: String(cfg.max_sources), deep: String(cfg.deep_max_sources || 20)};
  $("#ui-mode").addEventListener("change", () => {
    const other = $("#ui-mode").value === "deep" ? "quick" : "deep";
    if ($("#ui-sources").value === defaults[other])
      $("#ui-sources").value = defaults[$("#ui-mode").value];
  });
  const select = $("#ui-search");
  for (const name of cfg.providers) {
    const option = text(document.createElement("option"), name);
    option.value = name;
    select.append(option);
  }
  select.value = cfg.search;
  $("#ui-model").value = cfg.model;
  $("#ui-model").placeholder = cfg.no_llm ? "no model (--no-llm)" : "none: no LLM, or Ollama";
  $("#ui-form").addEventListener("submit", start);
  $("#ui-stop").addEventListener("click", stop);
  state.timeline = $("#ui-timeline").innerHTML;
  // Every run, however started, is shown live as soon as it starts.
  const live = new EventSource("/api/live");
  live.addEventListener("run", (ev) => {
    const r = JSON.parse(ev.data);
    if (r.id !== state.runId) attach(r.id, r.events, r.question, 0);
  });
  const linked = linkedRun();
  if (linked) await openRun(linked);
  document.body.dataset.ready = "1";
  loadHistory();
}
init();
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
<ul id="ui-tree" hidden></ul>
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
<script nonce="{nonce}">{waterfall}
{js}</script>
</body>
</html>
"""


def render_page(nonce: str) -> str:
    """The page, with ``nonce`` on its one style and one script element (for the CSP)."""
    return PAGE_HTML.format(
        nonce=nonce,
        css=PAGE_CSS + REPORT_CSS,
        js=PAGE_JS,
        waterfall=_waterfall_js(),
        key=WATERFALL_KEY.replace(' style="', ' data-s="'),
        version=__version__,
    )


@cache
def _waterfall_js() -> str:
    """The live waterfall's script (a file of its own, beside this module)."""
    return files("sleuth.web").joinpath("waterfall.js").read_text(encoding="utf-8")
