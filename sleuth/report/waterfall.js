// The HTML report's timing waterfall, drawn from the packed data block its timeline
// section carries (sleuth/report/waterfall.py writes it; its docstring says the fields).
// The report runs it once (its CSP allows this script by its hash, nothing else); the
// web page runs it on each report it shows. It makes no request; text goes in with
// textContent only. Short names: the report carries this file.
var SleuthTimeline = (root) => {
  var E = (tag, cls, text) => {
    var e = document.createElement(tag);
    e.className = cls || "";
    e.textContent = text || "";
    return e;
  };
  var P = (v, total) => +(100 * v / total).toFixed(1) + "%";
  var L = (n) => n.toLocaleString("en", {maximumFractionDigits: 1});
  // What a bar shows on hover: what it was, its status, size and time, why it ended.
  var info = (b, k, end) => {
    var x = b[3], n = b[4], q = b[6] || 0, t = (end - b[1]).toFixed(2) + " s";
    if (q >= 0.01) t += " (queued " + q.toFixed(2) + " s)";
    return (k == "d" ? ["download", x && "HTTP " + x,
                        n != null && (n < 1000 ? n + " B" : L(n / 1000) + " kB")]
      : k == "e" ? ["extraction", n != null && L(n) + " characters"]
      : k == "s" ? [n != null && n + " hits"] : [x]).concat(t, b[5]).filter(Boolean).join(" · ");
  };
  var draw = (box, data) => {
    var step = data.a[0], axis = step * data.a[1], key = box.querySelector(".y");
    var add = (el) => box.insertBefore(el, key);
    var ticks = E("span");
    box.style.setProperty("--t", P(step, axis));
    for (var t = 1; t <= data.a[1]; t++) {
      var v = t * step, tick = ticks.appendChild(
        E("i", "", v < 60 ? +v.toFixed(2) + " s" : +(v / 60).toFixed(2) + " min"));
      tick.style.left = P(v, axis);
    }
    add(E("p", "a")).append(E("b"), ticks);
    data.g.forEach((g) => {
      var h = add(E("h4", "", g[0]));
      if (g[1]) h.append(E("span", "", g[1]));
      g[2].forEach((r) => {
        var name = E("b"), bars = E("span"), tag = r[1] || "";
        if (tag) name.append(E("em", tag.indexOf("source") ? tag.indexOf("wait") < 0 ? "" : "w" : "g", tag));
        name.append(r[0]);
        r[2].forEach((b) => {
          var k = b[0].charAt(0), q = b[6] || 0, start = b[1] - q;
          var end = b[2] == null ? b[1] : b[2], i = bars.appendChild(E("i", b[0]));
          if (start > 0.55 * axis) i.classList.add("r");  // its hover text opens leftwards
          i.style.left = P(start, axis);
          i.style.width = P(end - start, axis);
          if (q >= 0.05 * (end - start) && end > start) i.style.setProperty("--q", P(q, end - start));
          i.tabIndex = 0;
          i.dataset.i = info(b, k, end);
        });
        add(E("p")).append(name, bars);
      });
    });
  };
  (root || document).querySelectorAll(".wf>script[type='text/x-sleuth-timeline']").forEach((s) => {
    var box = s.parentNode;
    if (box.dataset.d) return;  // drawn, or being drawn
    box.dataset.d = 1;
    SleuthTimeline.read(s).then((data) => {
      var key = box.appendChild(E("div", "y"));
      data.k.forEach((k) => key.appendChild(E("span", "", k[1])).prepend(E("i", k[0])));
      draw(box, data);
      box.dataset.d = 2;
    });
  });
};
// @reader: the web page reads a data block here. A report's copy of this script stops
// above: its loader has read the block already and left the data on the box.
// The block is deflated JSON in base64: the browser's own DecompressionStream reads it
// (no request: a Blob's stream).
SleuthTimeline.read = (s) => new Response(new Blob([Uint8Array.from(atob(s.textContent.trim()),
  (c) => c.charCodeAt(0))]).stream().pipeThrough(new DecompressionStream("deflate-raw")))
  .text().then(JSON.parse);
