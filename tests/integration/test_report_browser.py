"""Browser test of the report: build it from recorded runs, open it in headless Chromium.

Checks the DOM Chromium renders (every figure's <img> and the headline table are there, every
embedded PNG decodes), that Chromium reported no load error, and leaves screenshots in
``artifacts/report.png`` (layers run) and ``artifacts/report_sweep.png`` (nodes sweep) for a
human to look at.
"""

from __future__ import annotations

import base64
import io
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from vnetbench.report.html import build_report

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = ROOT / "tests" / "data" / "evidence"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = next((p for p in (shutil.which(n) for n in (
    "chromium", "chromium-browser", "google-chrome", "google-chrome-stable")) if p), None)

pytestmark = [
    pytest.mark.heavy,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: apt-get install -y "
                       "--no-install-recommends chromium"),
]


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
    ("run_layers", "report.png", {"latency", "throughput", "cpu_cost", "drops"}),
    ("run_sweep", "report_sweep.png", {"latency", "throughput", "scaling"}),
])
def test_report_renders_in_chromium(tmp_path: Path, run: str, shot: str,
                                    figures: set[str]) -> None:
    run_dir = Path(shutil.copytree(EVIDENCE / run, tmp_path / run))
    report = build_report(run_dir)
    assert {p.stem for p in (run_dir / "figures").glob("*.png")} == figures

    dom = _chromium(tmp_path / "profile-dom", "--dump-dom", report.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _load_errors(dom.stderr) == []
    html = dom.stdout
    assert 'id="headline-table"' in html
    assert re.search(r'<table class="headline" id="headline-table">.*<tbody><tr>', html, re.S)
    for name in figures:
        section = re.search(rf'<section id="{name}">(.*?)</section>', html, re.S)
        assert section is not None, f"figure section {name} missing from the rendered DOM"
        img = re.search(r'<img class="figure"[^>]*src="data:image/png;base64,([^"]+)"',
                        section.group(1))
        assert img is not None, f"no embedded image in section {name}"
        png = Image.open(io.BytesIO(base64.b64decode(img.group(1))))
        assert png.format == "PNG" and png.width > 400 and png.height > 150
    assert html.count('<img class="figure"') == len(figures)

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
