"""Record the real runs kept under tests/data/recorded/ (as root; about a minute each).

``.venv/bin/python tests/data/recorded/record.py`` runs every ``*.yaml`` here with vnetbench and keeps
its ``run.json``, ``histograms.jsonl`` and the samples a report draws (the per-core,
per-device and per-namespace collector samples are dropped to keep the files small; the
raw tool output is not kept). The numbers are measured on the machine that records them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DROPPED_LABELS = ("device", "cpu", "netns", "source")


def record(scenario: Path) -> Path:
    target = HERE / scenario.stem
    with tempfile.TemporaryDirectory(prefix="vnb-record-") as tmp:
        out = Path(tmp) / "run"
        subprocess.run([sys.executable, "-m", "vnetbench", "run", str(scenario), "--out",
                        str(out)], check=True)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        shutil.copy(out / "run.json", target / "run.json")
        shutil.copy(out / "histograms.jsonl", target / "histograms.jsonl")
        with (out / "samples.jsonl").open() as src, \
                (target / "samples.jsonl").open("w") as dst:
            for line in src:
                labels = json.loads(line).get("labels", {})
                if not any(k in labels for k in DROPPED_LABELS):
                    dst.write(line)
    return target


if __name__ == "__main__":
    for path in sorted(HERE.glob("*.yaml")):
        print(f"recorded {record(path)}")
