"use strict";
const $ = (sel) => document.querySelector(sel);
const state = {source: null, runId: null, t0: 0, timer: null, counts: {}, timeline: "",
               tree: "", draft: ""};
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
  if (e.kind === "report_text") return onDraft(e.message, data);  // shown, not logged
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
function onDraft(message, d) {
  // The report as the model writes it: plain text (textContent, never markup), each
  // event the new text from its offset (0 again: the model call was retried).
  const offset = typeof d.offset === "number" ? d.offset : state.draft.length;
  state.draft = state.draft.slice(0, offset) + String(d.delta || "");
  const box = $("#ui-draft");
  const following = box.scrollTop + box.clientHeight >= box.scrollHeight - 8;
  text(box, state.draft.replace(/<think>[\s\S]*?(<\/think>|$)/g, "").trim());
  $("#ui-draft-card").hidden = false;
  if (following) box.scrollTop = box.scrollHeight;  // keep the newest words in view
  if (!document.body.dataset.firstDraftMs) {
    document.body.dataset.firstDraftMs = String(Math.round(performance.now() - state.t0));
  }
  setStatus(message);
}
function treeNode(d) {
  // deep mode: the tree of questions, each node updated as it is researched, drawn as
  // the report draws its tree (sleuth/report/tree.py: the same class names)
  const box = $("#ui-tree");
  box.hidden = false;
  const root = box.querySelector("ul");
  const find = (id) => root.querySelector('li[data-node="' + CSS.escape(id) + '"]');
  let li = find(d.node);
  if (!li) {
    li = document.createElement("li");
    li.dataset.node = d.node;
    li.append(document.createElement("div"));
    const parent = d.parent ? find(d.parent) : null;
    let list = root;
    if (parent) {
      list = parent.querySelector(":scope > ul");
      if (!list) list = parent.appendChild(document.createElement("ul"));
    }
    list.append(li);
  }
  const status = String(d.status || "");
  li.dataset.status = status;
  const span = (cls, value) => {
    const el = text(document.createElement("span"), value);
    el.className = cls;
    return el;
  };
  const [label, meaning] = TREE_STATUS[status] || [status, ""];
  const pill = span("st " + status, label);
  pill.title = meaning;
  const parts = [pill, span("n", d.node), span("q", String(d.question || ""))];
  const meta = [];
  if (d.wanted) meta.push(d.read + " of " + d.wanted + " pages read");
  if (d.note && status !== "done") meta.push(String(d.note));
  if (meta.length) parts.push(span("m", meta.join(" · ")));
  li.firstChild.replaceChildren(...parts);
  const counts = {};
  root.querySelectorAll("li").forEach((n) => {
    const label = (TREE_STATUS[n.dataset.status] || [n.dataset.status])[0];
    counts[label] = (counts[label] || 0) + 1;
  });
  const total = root.querySelectorAll("li").length;
  text(box.querySelector("small"), count(total, "question", "questions") + ": " +
       Object.entries(counts).map(([k, n]) => n + " " + k).join(", "));
}
function showReport(html) {
  const card = $("#ui-report-card");
  $("#ui-report").innerHTML = html;  // built by sleuth.report.html: all page text escaped
  Waterfall.applyStyles($("#ui-report"));
  SleuthTimeline($("#ui-report"));  // a stored run's timeline, drawn from its data
  // A deep research's finished tree (its sources and sections linked into the report
  // below) takes the live one's place, where the user watched it grow.
  const tree = $("#ui-report details.qtree");
  if (tree && !$("#ui-tree").hidden) {
    tree.open = true;
    $("#ui-tree details.qtree").replaceWith(tree);
  }
  card.hidden = false;
}
function onReport(ev) {
  const r = JSON.parse(ev.data);
  const ms = Math.round(performance.now() - state.t0);
  document.body.dataset.firstReportMs = String(ms);
  state.counts.tokens = 0; bump("tokens", r.tokens || 0);
  $("#ui-draft-card").hidden = true;  // the checked report takes the draft's place
  showReport(r.html);
  if (r.timeline_html) {  // the finished timeline, with its critical path, in place of the live one
    Waterfall.reset(null);
    $("#ui-timeline").innerHTML = r.timeline_html;  // built by sleuth.report.waterfall: escaped
    Waterfall.applyStyles($("#ui-timeline"));
    SleuthTimeline($("#ui-timeline"));
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
  $("#ui-draft-card").hidden = true;  // no checked report will follow this draft
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
  $("#ui-tree").innerHTML = state.tree;  // the empty live tree
  $("#ui-tree").hidden = true;
  $("#ui-log").replaceChildren();
  $("#ui-timeline").innerHTML = state.timeline;  // the empty live waterfall
  Waterfall.applyStyles($("#ui-timeline"));
  Waterfall.reset($("#ui-wf"));
  $("#ui-report-card").hidden = true;
  state.draft = "";
  $("#ui-draft").replaceChildren();
  $("#ui-draft-card").hidden = true;
  delete document.body.dataset.firstDraftMs;
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
  state.tree = $("#ui-tree").innerHTML;
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
