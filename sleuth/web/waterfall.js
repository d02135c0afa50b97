"use strict";
// The live timing waterfall of sleuth serve: the run's "span" progress events drawn as
// they come, each request's bar growing until it ends, in the layout and with the class
// names of the HTML report's waterfall (sleuth/report/lanes.py, waterfall.py), so one
// stylesheet draws both. Text from the server goes in with textContent, never as markup.
const Waterfall = (() => {
  const GROUPS = [
    ["Plan", ["plan", "refine", "subquestions"]], ["Search", []], ["Rank", ["select"]],
    ["Pages", ["summarize", "merge", "read"]], ["Learn", ["learn"]],
    ["Write", ["report", "outline", "section", "frame"]], ["Check", ["verify"]],
  ];
  const ORDER = GROUPS.map((g) => g[0]).concat(["Other"]);
  const KIND = {search: "s", download: "d", extract: "e", llm: ""};
  const OUTCOME = {failed: "f", cut: "x", cached: "k", ok: ""};
  const TICKS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600];
  let root = null, spans = new Map(), rows = new Map(), groups = new Map(), bars = new Map();
  let notes = new Map();  // a deep research's branch → its question
  let clock = null;  // [local seconds, run seconds] at the last event: "now" in run time

  function groupOf(s) {
    if (s.kind === "search") return "Search";
    if (s.kind === "download" || s.kind === "extract") return "Pages";
    const found = GROUPS.find((g) => g[1].includes(s.stage));
    return found ? found[0] : "Other";
  }
  function pageOf(s) {
    if (s.kind === "download" || s.kind === "extract") return s.name;
    if (s.kind === "llm" && (s.stage === "summarize" || s.stage === "merge")) return s.subject;
    return null;
  }
  function label(s) {
    const page = pageOf(s);
    if (page) return page.replace(/^https?:\/\//, "");
    if (s.kind === "search") return s.name;
    if (s.stage === "select" && s.subject) {
      const n = s.subject.split("\n").length;
      return "select: " + n + (n === 1 ? " query" : " queries");
    }
    return s.stage;
  }
  function rank(title) {
    return title.startsWith("Branch ") ? ORDER.indexOf("Search") + 0.5 : ORDER.indexOf(title);
  }
  function groupEl(title) {
    let g = groups.get(title);
    if (g) return g;
    g = document.createElement("div");
    g.dataset.group = title;
    const h = document.createElement("h4");
    h.textContent = title;
    g.append(h);
    if (notes.has(title)) note(title, notes.get(title));
    groups.set(title, g);
    // Every group in its place: the stages in order, a deep research's branches by id.
    const legend = root.querySelector(".y");
    [...groups.entries()]
      .sort(([a], [b]) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0))
      .forEach(([, el]) => root.insertBefore(el, legend));
    return g;
  }
  function rowEl(s) {
    let title = groupOf(s);
    if (s.branch && !["Plan", "Write", "Check"].includes(title)) title = "Branch " + s.branch;
    const page = pageOf(s);
    const key = title + "|" + (s.kind === "search" ? "q:" + s.name : page ? "u:" + page
                                                                        : "#" + s.id);
    let row = rows.get(key);
    if (row) return row;
    row = document.createElement("p");
    const name = document.createElement("b");
    name.textContent = label(s);
    row.append(name, document.createElement("span"));
    groupEl(title).append(row);
    rows.set(key, row);
    return row;
  }
  function took(s, now) { return ((s.end ?? now) - s.start).toFixed(2) + " s"; }
  function info(s, now) {
    const parts = [];
    if (s.kind === "download") parts.push("download", s.status ? "HTTP " + s.status : "",
      s.size != null ? (s.size >= 1000 ? (s.size / 1000).toFixed(1) + " kB" : s.size + " B") : "");
    else if (s.kind === "extract") parts.push("extraction",
      s.size != null ? s.size.toLocaleString() + " characters" : "");
    else if (s.kind === "search") parts.push(s.size != null ? s.size + " hits" : "");
    else parts.push(s.stage + " · " + s.name);
    let t = took(s, now);
    if (s.start - s.queued >= 0.01) t += " (queued " + (s.start - s.queued).toFixed(2) + " s)";
    parts.push(t);
    if (s.end == null) parts.push("still going");
    else if (s.outcome === "failed") parts.push("failed: " + (s.detail || ""));
    else if (s.outcome === "cut") parts.push("cut: the run did not wait for it");
    else if (s.outcome === "cached") parts.push("no request: " + (s.detail || "cached"));
    else if (s.detail) parts.push(s.detail);
    return parts.filter(Boolean).join(" · ");
  }
  function now() {
    if (!clock) return 0;
    return clock[1] + (performance.now() / 1000 - clock[0]);
  }
  function nice(seconds) {
    const step = TICKS.find((t) => Math.max(seconds, 0.1) / t <= 10) || TICKS[TICKS.length - 1];
    return [step, Math.max(1, Math.ceil(Math.max(seconds, 0.1) / step - 1e-9))];
  }
  function pct(v, total) { return (100 * v / total).toFixed(2) + "%"; }
  function draw(running) {
    if (!root) return;
    const t = running ? now() : Math.max(0, ...[...spans.values()].map((s) => s.end ?? s.start));
    let end = t;
    for (const s of spans.values()) end = Math.max(end, s.end ?? s.start);
    const [step, ticks] = nice(end);
    const total = step * ticks;
    root.style.setProperty("--t", pct(step, total));
    const axis = root.querySelector(".a span");
    axis.replaceChildren();
    for (let i = 1; i <= ticks; i++) {
      const tick = document.createElement("i");
      tick.style.left = pct(i * step, total);
      tick.textContent = (i * step >= 60 ? +(i * step / 60).toFixed(2) + " min"
                                         : +(i * step).toFixed(2) + " s");
      axis.append(tick);
    }
    for (const [id, el] of bars) {
      const s = spans.get(id);
      const start = s.kind === "search" ? s.start : s.queued;
      const stop = s.end ?? t;
      el.style.left = pct(start, total);
      el.style.width = pct(Math.max(0, stop - start), total);
      if (stop > start && s.start - start >= 0.05 * (stop - start))
        el.style.setProperty("--q", pct(s.start - start, stop - start));
      el.dataset.i = info(s, t);
    }
  }
  function add(s) {
    if (!root) return;
    // The event is told as it happens: its time is the run's "now" (drawn on from there).
    clock = [performance.now() / 1000, Math.max(clock ? now() : 0, s.end ?? s.start)];
    spans.set(s.id, s);
    let bar = bars.get(s.id);
    if (!bar) {
      bar = document.createElement("i");
      bar.tabIndex = 0;
      bar.dataset.id = String(s.id);
      rowEl(s).lastChild.append(bar);
      bars.set(s.id, bar);
    }
    const classes = [KIND[s.kind], s.end == null ? "" : OUTCOME[s.outcome] || ""];
    bar.className = classes.filter(Boolean).join(" ");
    root.dataset.requests = String(spans.size);
  }
  function note(title, question) {
    notes.set(title, question);
    const h = groups.get(title)?.querySelector("h4");
    if (!h) return;
    const span = h.querySelector("span") || h.appendChild(document.createElement("span"));
    span.textContent = question;
  }
  // A deep research's branch event: its group is titled with the branch's question.
  function branch(node, question) { if (root) note("Branch " + node, question); }
  function reset(el) {
    root = el;
    spans = new Map(); rows = new Map(); groups = new Map(); bars = new Map(); clock = null;
    notes = new Map();
    if (root) root.querySelectorAll("[data-group]").forEach((g) => g.remove());
  }
  // The server's HTML comes with its style attributes as data-s ones (the page's CSP
  // applies no inline style): each is set through the CSSOM instead.
  function applyStyles(el) {
    el.querySelectorAll("[data-s]").forEach((n) => { n.style.cssText = n.dataset.s; });
  }
  return {add, branch, draw, reset, applyStyles};
})();
