"""The fixed parts of the report page: its style sheet and its script.

``CSS`` lays out one self-contained page (no font or file is fetched) whose first screen at
1400x900 holds the answer (a sentence per layer) and the whole headline table with the test
parameters beside it; ``SCRIPT`` makes the inline SVG figures interactive (hover tips, a
button per layer that shows or hides it). ``report/html.py`` assembles the page.
"""

from __future__ import annotations

CSS = """
:root { --ink:#1f2937; --muted:#6b7280; --line:#e5e7eb; --bg:#f8fafc; --card:#ffffff;
  --good:#15803d; --good-bg:#dcfce7; --bad:#b91c1c; --bad-bg:#fee2e2; --same-bg:#f3f4f6;
  --accent:#2563eb; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font: 15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { background:linear-gradient(120deg,#0f172a,#1e3a8a); color:#fff; padding:7px 24px 6px; }
header h1 { margin:0; font-size:20px; font-weight:650; letter-spacing:-0.01em;
  display:inline-block; margin-right:18px; }
header .sub { color:#cbd5e1; font-size:12.5px; display:inline; }
header .sub span { margin-right:16px; white-space:nowrap; }
nav.toc { background:#fff; border-bottom:1px solid var(--line); padding:3px 24px;
  font-size:12.5px; line-height:1.6; }
nav.toc a { color:var(--accent); text-decoration:none; margin-right:14px; white-space:nowrap; }
nav.toc a:hover { text-decoration:underline; }
.badge { display:inline-block; padding:2px 10px; border-radius:999px; font-size:12px;
  font-weight:600; text-transform:uppercase; letter-spacing:.04em; vertical-align:middle;
  margin-left:10px; }
.badge.complete { background:#16a34a; color:#fff; } .badge.incomplete { background:#f59e0b;
  color:#111; }
.badge.failed { background:#dc2626; color:#fff; } .badge.running { background:#64748b;
  color:#fff; }
main { max-width:1400px; margin:0 auto; padding:10px 24px 60px; }
section { background:var(--card); border:1px solid var(--line); border-radius:12px;
  padding:14px 20px; margin:0 0 14px; box-shadow:0 1px 2px rgba(15,23,42,.04); }
section.empty p.why, p.why { color:var(--ink); background:#f1f5f9; border-radius:8px;
  padding:8px 12px; margin:6px 0 0; font-size:13.5px; }
#answer h2 { margin-bottom:6px; }
ul.answers { margin:0; padding:0; list-style:none; font-size:13.5px; line-height:1.35; }
ul.answers li { padding:1px 0 1px 22px; position:relative; }
ul.answers li::before { position:absolute; left:2px; top:2px; font-weight:700; }
ul.answers li.worse::before { content:"▼"; color:var(--bad); }
ul.answers li.better::before { content:"▲"; color:var(--good); }
ul.answers li.same::before { content:"="; color:var(--muted); }
ul.answers li.unresolved::before, ul.answers li.emulated::before { content:"?";
  color:var(--muted); }
ul.answers b.layer { font-weight:700; }
ul.answers .note, .path-notes { color:#92400e; }
.headgrid { display:grid; grid-template-columns:minmax(0,1fr) 215px; gap:0 12px;
  align-items:start; }
.headgrid > div { overflow-x:auto; }
aside#parameters { font-size:12px; line-height:1.35; background:#f8fafc; border:1px solid var(--line);
  border-radius:10px; padding:8px 12px; }
aside#parameters h3 { margin:0 0 4px; font-size:13px; }
aside#parameters dl { margin:0; } aside#parameters dt { color:var(--muted); font-weight:600;
  margin-top:4px; }
aside#parameters dd { margin:0; }
p.path-notes { font-size:12.5px; margin:6px 0 0; }
sup.path { color:#b45309; font-weight:700; margin-left:2px; }
h2 { font-size:17px; margin:0 0 4px; } .lead { color:var(--muted); margin:0 0 10px;
  font-size:13px; }
h2 .at { font-weight:500; color:var(--muted); font-size:14px; }
h2 .key { font-weight:400; color:var(--muted); font-size:12px; float:right; margin-top:4px; }
ul.findings { margin:6px 0 0; padding-left:0; list-style:none; }
ul.findings li { padding:6px 0 6px 28px; position:relative;
  border-bottom:1px dashed var(--line); }
ul.findings li:last-child { border-bottom:0; }
ul.findings li::before { position:absolute; left:4px; top:5px; font-weight:700; }
ul.findings li.worse::before { content:"▼"; color:var(--bad); }
ul.findings li.better::before { content:"▲"; color:var(--good); }
ul.findings li.same::before { content:"="; color:var(--muted); }
table { border-collapse:separate; border-spacing:0; font-variant-numeric:tabular-nums; }
table.headline { width:100%; table-layout:fixed; }
table.headline th.corner { width:108px; }
table.headline th, table.headline td { padding:4px 5px; text-align:center;
  border-bottom:1px solid var(--line); line-height:1.2; }
table.headline thead th { font-size:12px; color:var(--muted); font-weight:600;
  background:#f9fafb; }
table.headline thead th.wl { text-transform:uppercase; letter-spacing:.06em; color:var(--ink);
  border-bottom:2px solid var(--ink); }
table.headline th.layer { text-align:left; font-size:13.5px; white-space:nowrap; }
table.headline .ratio { font-size:14.5px; font-weight:650; display:inline-block; }
table.headline td .added { display:inline-block; margin-left:3px; white-space:nowrap;
  font-size:10.5px; }
table.headline td .ci { white-space:nowrap; }
table.verdicts td .ci { white-space:normal; text-align:left; overflow-wrap:anywhere; }
table.verdicts th:last-child { width:34%; }
table.headline .ci { font-size:11px; color:var(--muted); }
table.headline .abs { font-size:11px; color:var(--ink); opacity:.75; }
table.headline th.why { width:158px; text-align:left; }
table.headline td.why { font-size:10.5px; line-height:1.25; text-align:left; color:#374151;
  padding:3px 4px; }
h3 { font-size:14.5px; margin:12px 0 2px; } h3 .at { font-weight:400; color:var(--muted);
  font-size:12.5px; }
div.scroll { overflow-x:auto; }
table.why-table { font-size:12px; }
table.why-table td, table.why-table th { white-space:nowrap; padding:3px 6px; }
table.why-table td.wrap { white-space:normal; min-width:210px; }
table.why-table td.wrap.narrow { min-width:90px; }
table.why-table tr.base td { background:#f8fafc; color:var(--muted); white-space:normal; }
ul.hypotheses { margin:4px 0 0; padding-left:18px; font-size:13px; }
ul.checks { list-style:none; padding-left:6px; margin:2px 0 6px; font-size:12.5px; }
ul.checks li { padding:1px 0; }
span.verdict { display:inline-block; font-weight:650; font-size:11.5px; margin-right:8px; }
ul.checks span.verdict { min-width:104px; margin-right:0; }
div.lead-check { font-size:12.5px; color:var(--ink); margin:1px 0 0; }
ul.hypotheses details summary { font-size:12px; font-weight:500; }
span.verdict.supported { color:var(--good); } span.verdict.contradicted { color:var(--bad); }
span.verdict.not-testable { color:var(--muted); }
td.better { background:var(--good-bg); }
td.better .ci, td.worse .ci { color:#374151; } td.better .ratio { color:#14532d; }
td.worse { background:var(--bad-bg); } td.worse .ratio { color:#7f1d1d; }
td.same { background:var(--same-bg); } td.baseline { background:#fff; }
td.unresolved { background:repeating-linear-gradient(135deg,#f3f4f6,#f3f4f6 6px,#e5e7eb 6px,#e5e7eb 12px); }
td.unresolved .ratio { color:var(--muted); } td .added { font-size:11px; color:#374151; }
td.baseline .ratio { font-size:15px; }
.dir { color:var(--accent); }
.swatch { display:inline-block; width:10px; height:10px; border-radius:3px; margin-right:8px; }
.legend { font-size:12px; color:var(--muted); margin-top:10px; }
.legend span.k { display:inline-block; width:12px; height:12px; border-radius:3px;
  vertical-align:-2px; margin:0 4px 0 12px; }
figure { margin:8px 0 0; }
figure svg.plot { max-width:100%; height:auto; display:block; margin:0 auto; }
figcaption { color:var(--muted); font-size:13px; margin-top:6px; }
.toggles { display:flex; flex-wrap:wrap; gap:6px; margin:4px 0 6px; font-size:12px; }
.toggles button { border:1px solid var(--line); background:#fff; border-radius:999px;
  padding:2px 10px 2px 8px; cursor:pointer; color:var(--ink); font:inherit; }
.toggles button .swatch { margin-right:6px; vertical-align:-1px; }
.toggles button[aria-pressed="false"] { opacity:.45; text-decoration:line-through; }
svg.plot g.tip { cursor:pointer; } svg.plot g.tip.off { display:none; }
svg.plot.dim g.tip:not(.hl) { opacity:.15; }
svg.plot g.tip:hover path { stroke-width:3px; }
#vnb-tip { position:fixed; z-index:10; pointer-events:none; display:none; max-width:420px;
  background:#0f172a; color:#f8fafc; font-size:12px; line-height:1.4; padding:6px 9px;
  border-radius:6px; white-space:pre-line; box-shadow:0 4px 12px rgba(15,23,42,.25); }
.warn { border-left:4px solid #f59e0b; background:#fffbeb; padding:8px 12px; margin:8px 0;
  border-radius:0 8px 8px 0; }
.warn .kind { font-size:11px; font-weight:700; text-transform:uppercase; color:#b45309;
  letter-spacing:.05em; }
.warn .advice { color:var(--muted); font-size:13px; }
.ok { color:var(--good); }
table.kv td { padding:3px 14px 3px 0; border-bottom:1px solid var(--line); vertical-align:top;
  font-size:13px; overflow-wrap:anywhere; }
table.kv td:first-child { color:var(--muted); white-space:nowrap; }
table.detail { width:100%; font-size:12.5px; }
table.detail th, table.detail td { padding:4px 8px; border-bottom:1px solid var(--line);
  text-align:left; }
table.detail td.num { text-align:right; } table.detail td.noisy { color:var(--bad);
  font-weight:600; }
details summary { cursor:pointer; color:var(--accent); font-weight:600; }
.grid2 { display:grid; grid-template-columns: 1fr 1fr; gap:0 28px; }
footer { color:var(--muted); font-size:12px; text-align:center; padding:10px; }
code { font-size:12px; background:#f1f5f9; padding:1px 4px; border-radius:4px; }
"""


SCRIPT = """
(function () {
  var tip = document.createElement("div");
  tip.id = "vnb-tip";
  document.body.appendChild(tip);
  document.querySelectorAll("svg.plot g.tip").forEach(function (g) {
    var title = g.querySelector(":scope > title");
    if (title) { g.setAttribute("data-tip", title.textContent); title.remove(); }
  });
  document.addEventListener("mousemove", function (ev) {
    var g = ev.target.closest ? ev.target.closest("g.tip") : null;
    if (!g) { tip.style.display = "none"; return; }
    tip.textContent = g.getAttribute("data-tip");
    tip.style.display = "block";
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) { x = ev.clientX - tip.offsetWidth - 14; }
    if (y + tip.offsetHeight > window.innerHeight) { y = ev.clientY - tip.offsetHeight - 14; }
    tip.style.left = x + "px"; tip.style.top = y + "px";
  });
  document.querySelectorAll("figure.chart").forEach(function (fig) {
    var svg = fig.querySelector("svg.plot");
    fig.querySelectorAll(".toggles button").forEach(function (button) {
      var layer = button.getAttribute("data-layer");
      var groups = svg.querySelectorAll('g.tip[data-layer="' + CSS.escape(layer) + '"]');
      button.addEventListener("click", function () {
        var shown = button.getAttribute("aria-pressed") !== "false";
        button.setAttribute("aria-pressed", shown ? "false" : "true");
        groups.forEach(function (g) { g.classList.toggle("off", shown); });
      });
      button.addEventListener("mouseenter", function () {
        svg.classList.add("dim");
        groups.forEach(function (g) { g.classList.add("hl"); });
      });
      button.addEventListener("mouseleave", function () {
        svg.classList.remove("dim");
        groups.forEach(function (g) { g.classList.remove("hl"); });
      });
    });
  });
  document.documentElement.setAttribute("data-figures", "interactive");
})();
"""
"""Hover tips in a box that follows the pointer (the SVG ``<title>`` moved into ``data-tip``
so the browser's own slower tooltip does not show twice); layer buttons that show or hide
a layer's points, bars and curves and highlight them while hovered."""
