"""The page of a store (``vnetbench history report STORE``): a trend chart per series, each
run's value with its 95 % interval, the noise floor as a band around the newest side's
median, change points marked, each run's point linking to its report. One self-contained
HTML file (inline SVG, no script needed), like a run's report."""

from __future__ import annotations

import html
import math
import os
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from vnetbench.history.series import Series, describe
from vnetbench.report.svg import Tip, figure_svg, tip_gid

CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222}
h1{font-size:1.5em}h2{font-size:1.1em;margin-top:2em}.change{color:#a40000}
.quiet{color:#555}figure{margin:0}svg{max-width:100%;height:auto}
table{border-collapse:collapse}td,th{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:left}
"""


def _chart(s: Series, number: int) -> str:
    fig = Figure(figsize=(9, 2.6), layout="constrained")
    ax = fig.add_subplot()
    xs = list(range(len(s.cells)))
    ys = [c.value for c in s.cells]
    tips: dict[str, Tip] = {}
    for x, c, run in zip(xs, s.cells, s.runs, strict=True):
        if math.isfinite(c.low) and math.isfinite(c.high):
            ax.plot([x, x], [c.low, c.high], color="#9ab", lw=1)
        gid = tip_gid(len(tips))
        (dot,) = ax.plot([x], [c.value], "o", color="#246", ms=4)
        dot.set_gid(gid)
        tips[gid] = Tip(f"{run.run_id} ({run.started}): {c.value:.4g}"
                        + (f" [{c.low:.4g}, {c.high:.4g}]" if math.isfinite(c.low) else "")
                        + (f", floor {c.floor:.1%}" if math.isfinite(c.floor) else ""))
    ax.plot(xs, ys, color="#246", lw=0.8, alpha=0.6)
    for found in s.changes:
        ax.axvline(found.point.index - 0.5, color="#c00", lw=1.2, ls="--")
    if s.kind == "ratio":
        ax.axhline(1.0, color="#888", lw=0.6)
    ax.set_xticks(xs[:: max(1, len(xs) // 12)])
    ax.set_xlabel("run (oldest first)")
    ax.set_ylabel(f"x {s.cells[-1].baseline}" if s.kind == "ratio" else s.cells[-1].unit)
    return figure_svg(fig, tips, f"h{number}-")


def _link(run_path: str, out: Path) -> str:
    report = Path(run_path) / "report.html"
    if not report.is_file():
        return ""
    return os.path.relpath(report, out.parent)


def render_page(series: Sequence[Series], store: str, out: Path) -> str:
    """The page's HTML (see the module docstring)."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>vnetbench history: "
             f"{html.escape(store)}</title><style>{CSS}</style></head><body>",
             f"<h1>History of {html.escape(store)}</h1>",
             f"<p class='quiet'>{len(series)} series. A dashed red line is a change point: a "
             "lasting move beyond 5 % and the runs' own A/A floors (E-divisive means, "
             "permutation test). Hover a point for its run.</p>"]
    changed = [s for s in series if s.changes]
    if changed:
        parts.append("<h2>Change points</h2><table><tr><th>series</th><th>change</th></tr>")
        for s in changed:
            for f in s.changes:
                link = _link(f.run.path, out)
                text = html.escape(describe(f, s.cells[-1].unit, s.kind))
                parts.append(f"<tr><td>{html.escape(s.name)}</td><td class='change'>"
                             + (f"<a href='{html.escape(link)}'>{text}</a>" if link else text)
                             + "</td></tr>")
        parts.append("</table>")
    for k, s in enumerate(series):
        runs = ", ".join(
            f"<a href='{html.escape(link)}'>{html.escape(r.run_id)}</a>" if (link := _link(
                r.path, out)) else html.escape(r.run_id) for r in s.runs[-3:])
        parts.append(f"<h2>{html.escape(s.name)}</h2><figure>{_chart(s, k)}</figure>"
                     f"<p class='quiet'>{len(s.runs)} runs; newest: {runs}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
