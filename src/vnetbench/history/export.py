"""The store's series where people already look: OpenMetrics text (every run's value at its
start time, for ``promtool tsdb create-blocks-from openmetrics`` or any reader of the
format), the newest run's values pushed to a Prometheus push gateway, and a Grafana
dashboard that draws them.

Metrics (gauges), labelled ``scenario``, ``layer``, ``baseline``, ``workload``, ``metric``,
``config``:

    vnetbench_ratio        a layer's paired ratio to the baseline (``_low``, ``_high``: its
                           95 % interval)
    vnetbench_level        the baseline's own median, in the metric's unit
    vnetbench_noise_floor  the run's A/A floor of that column (a fraction)
"""

from __future__ import annotations

import datetime as dt
import json
import math
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any

from vnetbench.errors import VnetbenchError
from vnetbench.history.store import Point

HELP = {
    "vnetbench_ratio": "A layer's paired ratio to the baseline in one run.",
    "vnetbench_ratio_low": "Low end of the ratio's 95% interval.",
    "vnetbench_ratio_high": "High end of the ratio's 95% interval.",
    "vnetbench_level": "The baseline's own median, in the metric's unit.",
    "vnetbench_noise_floor": "The run's A/A noise floor of the column (a fraction).",
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(p: Point) -> str:
    c = p.cell
    pairs = (("scenario", c.scenario), ("layer", c.layer), ("baseline", c.baseline),
             ("workload", c.workload), ("metric", c.metric), ("config", c.config))
    return ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)


def _samples(p: Point) -> list[tuple[str, float]]:
    c = p.cell
    if c.kind == "level":
        out = [("vnetbench_level", c.value)]
    else:
        out = [("vnetbench_ratio", c.value), ("vnetbench_ratio_low", c.low),
               ("vnetbench_ratio_high", c.high)]
    out.append(("vnetbench_noise_floor", c.floor))
    return [(name, v) for name, v in out if math.isfinite(v)]


def _seconds(started: str) -> float | None:
    try:
        return dt.datetime.fromisoformat(started).timestamp()
    except ValueError:
        return None


def openmetrics(points: Iterable[Point], timestamps: bool = True) -> str:
    """The points as OpenMetrics text, each with its run's start time (``timestamps``)."""
    by_metric: dict[str, list[str]] = {name: [] for name in HELP}
    for p in points:
        when = _seconds(p.run.started) if timestamps else None
        for name, value in _samples(p):
            stamp = f" {when:.3f}" if when is not None else ""
            by_metric[name].append(f"{name}{{{_labels(p)}}} {value:.9g}{stamp}")
    out = []
    for name, lines in by_metric.items():
        if lines:
            out += [f"# TYPE {name} gauge", f"# HELP {name} {HELP[name]}", *lines]
    return "\n".join([*out, "# EOF"]) + "\n"


def push(points: Sequence[Point], gateway: str, job: str = "vnetbench") -> int:
    """PUT the newest run's values to a Prometheus push gateway at ``gateway``
    (``http://host:9091``; the gateway takes no timestamps); how many points."""
    if not points:
        raise VnetbenchError("history export --push: the store has no cell to push")
    newest = points[-1].run.run_id
    mine = [p for p in points if p.run.run_id == newest]
    body = openmetrics(mine, timestamps=False).replace("# EOF\n", "").encode()
    url = f"{gateway.rstrip('/')}/metrics/job/{job}"
    if not url.startswith(("http://", "https://")):
        raise VnetbenchError(f"--push {gateway}: give the gateway's URL, http://HOST:PORT")
    request = urllib.request.Request(url, data=body, method="PUT",
                                     headers={"Content-Type": "text/plain; version=0.0.4"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            if response.status >= 300:
                raise VnetbenchError(f"--push {url}: the gateway answered {response.status}")
    except OSError as exc:
        raise VnetbenchError(f"--push {url}: {exc}; is the push gateway running there?") from None
    return len(mine)


def grafana_dashboard(points: Iterable[Point], datasource: str = "${DS_PROMETHEUS}"
                      ) -> dict[str, Any]:
    """A Grafana dashboard (JSON model) with a time-series panel per (workload, metric):
    every layer's ratio, and the baseline's level beside it; a ``scenario`` variable."""
    columns = sorted({(p.cell.workload, p.cell.metric) for p in points})
    panels: list[dict[str, Any]] = []
    for k, (workload, metric) in enumerate(columns):
        where = f'scenario=~"$scenario",workload="{workload}",metric="{metric}"'
        for j, (name, title, unit) in enumerate((
                ("vnetbench_ratio", f"{workload} {metric}: ratio to the baseline", "none"),
                ("vnetbench_level", f"{workload} {metric}: the baseline's level", "short"))):
            panels.append({
                "type": "timeseries", "title": title,
                "datasource": {"type": "prometheus", "uid": datasource},
                "gridPos": {"x": 12 * j, "y": 8 * k, "w": 12, "h": 8},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "targets": [{"refId": "A", "expr": f"{name}{{{where}}}",
                             "legendFormat": "{{layer}} at {{config}}"}]})
    return {
        "title": "vnetbench: layer costs over time", "uid": "vnetbench-history",
        "schemaVersion": 39, "time": {"from": "now-90d", "to": "now"},
        "templating": {"list": [{
            "name": "scenario", "type": "query", "includeAll": True, "multi": True,
            "datasource": {"type": "prometheus", "uid": datasource},
            "query": "label_values(vnetbench_ratio, scenario)"}]},
        "__inputs": [{"name": "DS_PROMETHEUS", "type": "datasource", "pluginId": "prometheus",
                      "label": "Prometheus"}],
        "panels": panels,
    }


def dashboard_json(points: Iterable[Point]) -> str:
    return json.dumps(grafana_dashboard(points), indent=2) + "\n"
