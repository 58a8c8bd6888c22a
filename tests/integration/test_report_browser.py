"""Browser test of the report: build it from recorded runs, open it in headless Chromium.

Checks the DOM Chromium renders (every figure is an inline SVG laid out at a readable size,
the headline table is there), that the page's script made the figures interactive (hover
tips moved into ``data-tip``, a layer button hides that layer's points and curves, hovering
a point shows its figures in the tip box), that Chromium reported no load error (nothing is
fetched: the page opens offline), and leaves screenshots in ``artifacts/`` for a human to
look at: ``report.png`` (layers run), ``report_sweep.png`` (nodes sweep) and
``report_figures.png`` (a real recorded run: latency CDFs, time series, a request-size sweep).

The default comparison as recorded (``tests/data/recorded/default``) is opened at 1400x900
over the DevTools protocol (``browser.py``), and what a newcomer sees is measured from the
laid-out page: every layer's headline row, the sentence answer and the test parameters lie
in the first screen (element boxes from ``getBoundingClientRect``), no two text labels of
any figure overlap (every SVG ``<text>`` box against every other), and the page's length in
screens is reported. Screenshots: ``report_default.png`` (first screen) and
``report_default_full.png``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from tests.integration.browser import Browser
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
     {"sweep-rr-request", "latency", "cdf", "throughput", "timeseries", "cpu_cost",
      "breakdown"}),
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



FIRST_SCREEN = """(function () {
  function box(el) {
    var r = el.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
  }
  var rows = [];
  document.querySelectorAll("#headline-table tbody tr").forEach(function (tr) {
    rows.push({layer: tr.querySelector("th.layer").textContent.trim(), box: box(tr)});
  });
  var answers = [];
  document.querySelectorAll("#answer ul.answers li").forEach(function (li) {
    answers.push({text: li.textContent, box: box(li)});
  });
  var aside = document.getElementById("parameters");
  return {rows: rows, answers: answers, table: box(document.getElementById("headline-table")),
          parameters: aside ? box(aside) : null, parametersText: aside ? aside.textContent : "",
          width: window.innerWidth, height: window.innerHeight,
          scrollWidth: document.documentElement.scrollWidth,
          pageHeight: document.documentElement.scrollHeight};
})()"""
"""The laid-out boxes (viewport coordinates, nothing scrolled) of what the first screen must
hold: each headline row, each answer sentence, the parameters beside the table."""

OVERLAPS = """(function () {
  var out = [], texts = 0;
  document.querySelectorAll("figure.chart").forEach(function (fig) {
    var name = fig.getAttribute("data-chart"), boxes = [];
    fig.querySelectorAll("svg.plot text").forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.width > 0 && r.height > 0 && t.textContent.trim()) {
        boxes.push({t: t.textContent.trim(), l: r.left, r: r.right, top: r.top, b: r.bottom});
      }
    });
    texts += boxes.length;
    for (var i = 0; i < boxes.length; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i], b = boxes[j];
        var w = Math.min(a.r, b.r) - Math.max(a.l, b.l);
        var h = Math.min(a.b, b.b) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) {
          out.push(name + ": '" + a.t + "' overlaps '" + b.t + "' by " + Math.round(w)
                   + "x" + Math.round(h) + " px");
        }
      }
    }
  });
  return {texts: texts, overlaps: out};
})()"""
"""Every pair of text labels of one figure whose laid-out boxes overlap (more than a pixel
each way), and how many labels were measured."""


def _inside(box: dict[str, float], width: int, height: int) -> bool:
    return box["top"] >= 0 and box["left"] >= 0 and box["bottom"] <= height \
        and box["right"] <= width


def test_default_report_answers_on_the_first_screen(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = Path(shutil.copytree(DATA / "recorded" / "default", tmp_path / "run"))
    report = build_report(run_dir)
    ARTIFACTS.mkdir(exist_ok=True)
    with Browser(tmp_path / "profile", width=1400, height=900) as browser:
        browser.open(report.as_uri())
        seen = browser.evaluate(FIRST_SCREEN)
        first = browser.screenshot(ARTIFACTS / "report_default.png")
        browser.screenshot(ARTIFACTS / "report_default_full.png", full_page=True)
        labels = browser.evaluate(OVERLAPS)
        assert browser.console_errors() == []
    assert (seen["width"], seen["height"]) == (1400, 900)
    assert seen["scrollWidth"] <= 1400, "the page scrolls sideways"
    layers = [row["layer"] for row in seen["rows"]]
    assert layers == ["host", "bridge", "macvlan", "routed", "nat", "vxlan", "wireguard",
                      "userspace"]
    for row in seen["rows"]:
        assert _inside(row["box"], 1400, 900), f"{row['layer']}'s headline is off the first " \
                                              f"screen: {row['box']}"
    assert len(seen["answers"]) == len(layers) - 1
    for answer in seen["answers"]:
        assert _inside(answer["box"], 1400, 900), f"off the first screen: {answer['text']}"
        assert "per round trip" in answer["text"] and "CPU per transaction" in answer["text"]
    params, table = seen["parameters"], seen["table"]
    assert params is not None and _inside(params, 1400, 900)
    assert params["left"] >= table["right"] and params["top"] < table["bottom"], \
        "the test parameters are not beside the table"
    for fact in ("100 B request", "200 B response", "TCP", "1 s", "4 per layer"):
        assert fact in seen["parametersText"]
    assert labels["texts"] > 100, "no figure text was measured"
    assert labels["overlaps"] == [], "\n".join(labels["overlaps"][:20])
    screens = seen["pageHeight"] / 900
    with capsys.disabled():
        print(f"\nreport of the default comparison: {screens:.1f} screens of 1400x900 "
              f"({seen['pageHeight']} px); first screen in {first}")
    assert screens < 14, f"the page grew to {screens:.1f} screens"
    image = Image.open(first)
    assert image.size == (1400, 900)
    colours = image.convert("RGB").resize((140, 90)).getcolors(maxcolors=140 * 90)
    assert colours is not None and len(colours) > 50, "screenshot looks blank"


@pytest.mark.parametrize("run", ["evidence/run_layers", "evidence/run_sweep",
                                 "recorded/report_figures"])
def test_figure_labels_never_overlap(tmp_path: Path, run: str) -> None:
    run_dir = Path(shutil.copytree(DATA / run, tmp_path / "run"))
    report = build_report(run_dir)
    with Browser(tmp_path / "profile") as browser:
        browser.open(report.as_uri())
        labels = browser.evaluate(OVERLAPS)
    assert labels["texts"] > 20
    assert labels["overlaps"] == [], "\n".join(labels["overlaps"][:20])
