"""Browser test of the report: build it from recorded runs, open it in headless Chromium.

Checks the DOM Chromium renders (every figure is an inline SVG laid out at a readable size,
the headline table is there), that the page's script made the figures interactive (hover
tips moved into ``data-tip``, a layer button hides that layer's points and curves, hovering
a point shows its figures in the tip box), that Chromium reported no load error (nothing is
fetched: the page opens offline), and leaves screenshots in ``artifacts/`` for a human to
look at: ``report.png`` (layers run), ``report_sweep.png`` (nodes sweep) and
``report_figures.png`` (a real recorded run: latency CDFs, time series, a request-size sweep).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from vnetbench.report.html import build_report

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = next((p for p in (shutil.which(n) for n in (
    "chromium", "chromium-browser", "google-chrome", "google-chrome-stable")) if p), None)

pytestmark = [
    pytest.mark.heavy,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: run "
                       "scripts/setup-test.sh (apt-get install chromium)"),
]

PROBE = """<script>
(function () {
  var out = document.documentElement;
  var sizes = [];
  document.querySelectorAll("figure.chart").forEach(function (fig) {
    var box = fig.querySelector("svg.plot").getBoundingClientRect();
    sizes.push(fig.getAttribute("data-chart") + ":" + Math.round(box.width) + "x"
               + Math.round(box.height));
  });
  out.setAttribute("data-sizes", sizes.join(" "));
  var fig = document.querySelector("figure.chart .toggles") ?
      document.querySelector("figure.chart .toggles").closest("figure") : null;
  if (fig) {
    var button = fig.querySelector(".toggles button");
    var layer = button.getAttribute("data-layer");
    var mine = fig.querySelectorAll('g.tip[data-layer="' + layer + '"]').length;
    button.click();
    var off = fig.querySelectorAll("g.tip.off").length;
    var others = fig.querySelectorAll('g.tip.off:not([data-layer="' + layer + '"])').length;
    out.setAttribute("data-toggle", fig.getAttribute("data-chart") + " " + layer + " "
                     + mine + " " + off + " " + others + " "
                     + button.getAttribute("aria-pressed"));
  }
  var g = document.querySelector("figure.chart g.tip");
  if (g) {
    var r = g.getBoundingClientRect();
    g.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: r.left + 1,
                                                 clientY: r.top + 1}));
    var tip = document.getElementById("vnb-tip");
    out.setAttribute("data-hover", tip.style.display + "|" + tip.textContent);
  }
})();
</script>"""
"""Run after the page's own script: records each figure's laid-out size, clicks the first
layer button and hovers the first tip, leaving what happened in attributes of <html>."""


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)


def _load_errors(stderr: str) -> list[str]:
    pattern = re.compile(r"net::ERR_|Failed to load|Uncaught|CONSOLE\(\d+\).*error", re.I)
    return [line for line in stderr.splitlines() if pattern.search(line)]


@pytest.mark.parametrize(("run", "shot", "figures"), [
    ("evidence/run_layers", "report.png", {"latency", "throughput", "cpu_cost", "drops"}),
    ("evidence/run_sweep", "report_sweep.png", {"latency", "throughput", "scaling"}),
    ("recorded/report_figures", "report_figures.png",
     {"sweep-rr-request", "latency", "cdf", "throughput", "timeseries", "cpu_cost"}),
])
def test_report_renders_in_chromium(tmp_path: Path, run: str, shot: str,
                                    figures: set[str]) -> None:
    run_dir = Path(shutil.copytree(DATA / run, tmp_path / "run"))
    report = build_report(run_dir)
    assert {p.stem for p in (run_dir / "figures").glob("*.svg")} == figures
    probed = report.with_name("probed.html")
    probed.write_text(report.read_text().replace("</body>", PROBE + "</body>"))

    dom = _chromium(tmp_path / "profile-dom", "--dump-dom", probed.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _load_errors(dom.stderr) == []
    html = dom.stdout
    assert 'id="headline-table"' in html
    assert re.search(r'<table class="headline" id="headline-table">.*<tbody><tr>', html, re.S)
    assert 'data-figures="interactive"' in html, "the page's script did not run"
    for name in figures:
        section = re.search(rf'<section id="{name}">(.*?)</section>', html, re.S)
        assert section is not None, f"figure section {name} missing from the rendered DOM"
        body = section.group(1)
        assert re.search(r'<svg [^>]*class="plot', body), f"no inline SVG in section {name}"
        tips = re.findall(r'<g class="tip"[^>]*data-tip="([^"]+)"', body)
        assert tips, f"no hover tips in section {name}"
        assert "<title>" not in body  # moved into data-tip by the script
    assert html.count('<figure class="chart"') == len(figures)
    sizes = dict(item.split(":") for item in
                 re.search(r'data-sizes="([^"]*)"', html).group(1).split())  # type: ignore[union-attr]
    assert set(sizes) == figures
    for name, size in sizes.items():
        width, height = (int(v) for v in size.split("x"))
        assert width > 400 and height > 150, f"{name} laid out at {size}"
    # a layer button hides that layer's (and only that layer's) points, bars and curves
    toggle = re.search(r'data-toggle="(\S+) (\S+) (\d+) (\d+) (\d+) (\w+)"', html)
    assert toggle is not None, "no layer buttons"
    _, _, mine, off, others, pressed = toggle.groups()
    assert int(mine) > 0 and off == mine and others == "0" and pressed == "false"
    hover = re.search(r'data-hover="block\|([^"]+)"', html)
    assert hover is not None and len(hover.group(1)) > 10, "hovering a tip showed nothing"

    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / shot
    target.unlink(missing_ok=True)
    snap = _chromium(tmp_path / "profile-shot", f"--screenshot={target}",
                     "--window-size=1400,2400", report.as_uri())
    assert snap.returncode == 0, snap.stderr[-2000:]
    assert _load_errors(snap.stderr) == []
    image = Image.open(target)
    assert image.size == (1400, 2400)
    colours = image.convert("RGB").resize((140, 240)).getcolors(maxcolors=140 * 240)
    assert colours is not None and len(colours) > 50, "screenshot looks blank"

