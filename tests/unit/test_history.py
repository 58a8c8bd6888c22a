"""Runs over time (``vnetbench.history``): the store, each headline cell's series, change
points that exceed the runs' own floors, the check for CI, the page and the exports.

The runs are written in the real format by the store's ``RunWriter``, labelled as an
interleaved session labels them (pairs ``<session>.<round>``, the baseline's A/A groups), so
their cells come from the same headline engine a report uses."""

from __future__ import annotations

import http.server
import json
import multiprocessing
import random
import sqlite3
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import vnetbench
from vnetbench.cli.main import main
from vnetbench.errors import VnetbenchError
from vnetbench.history.changes import change_points
from vnetbench.history.check import check, render
from vnetbench.history.export import dashboard_json, openmetrics, push
from vnetbench.history.series import build_series
from vnetbench.history.store import HistoryStore, add_runs, is_store
from vnetbench.results.model import Sample
from vnetbench.results.store import RunWriter, load_run

ROUNDS = 12


def _run(path: Path, run_id: str, ratio: float, seed: int, base: float = 30.0,
         overrides: tuple[str, ...] = ()) -> Path:
    """A paired run: host (A/A) and bridge, rr round trips and transactions per second."""
    rng = random.Random(seed)
    scenario = {"name": "small", "layers": ["host", "bridge"], "workloads": [{"rr": {}}],
                **({"overrides": list(overrides)} if overrides else {})}
    env = {"git": {"commit": f"{seed:02x}" + "0" * 38, "dirty": False}, "kernel": "6.18",
           "cpu_model": "test", "cores": 2, "memory_gib": 24, "os": "Debian 12"}
    writer = RunWriter.create(path, scenario, env, run_id=run_id)
    samples = []
    for r in range(ROUNDS):
        drift = 1.0 + 0.3 * rng.random()  # the machine's phase, shared by the round
        for layer, aa, factor in (("host", "a", 1.0), ("host", "b", 1.0),
                                  ("bridge", "", ratio)):
            rtt = base * drift * factor * (1.0 + rng.gauss(0.0, 0.01))
            labels = {"layer": layer, "nodes": "2", "hosts": "2", "workload": "rr",
                      "pair": f"0.{r}", "design": "interleaved", "repetition": str(r),
                      "trial": "0", **({"aa": aa} if aa else {})}
            samples += [Sample("rtt_p50_us", rtt, "us", labels),
                        Sample("tps", 1e6 / rtt, "1/s", labels)]
    writer.append_samples(samples)
    writer.close()
    return path


def _history(base: Path, n: int = 20, change_from: int | None = None) -> list[Path]:
    return [_run(base / f"r{k:02d}", f"run-{k:02d}", 1.30 * (1.25 if change_from is not None
                                                              and k >= change_from else 1.0),
                 seed=k, overrides=("link.delay=1ms",) if change_from is not None
                 and k >= change_from else ())
            for k in range(n)]


def test_a_planted_change_is_found_in_the_cells_it_touches_and_nowhere_else(
        tmp_path: Path) -> None:
    store = tmp_path / "h.db"
    added = add_runs(store, [load_run(p) for p in _history(tmp_path, change_from=15)])
    assert [a for _, a in added] == [True] * 20 and is_store(store)
    with HistoryStore.open(store) as h:
        series = {s.name: s for s in build_series(h.points())}
    assert set(series) == {"host rr rtt_p50_us at 2 nodes, 2 hosts",
                           "host rr tps at 2 nodes, 2 hosts",
                           "bridge/host rr rtt_p50_us at 2 nodes, 2 hosts",
                           "bridge/host rr tps at 2 nodes, 2 hosts"}
    for name, s in series.items():
        if name.startswith("bridge"):
            (found,) = s.changes
            assert found.point.index == 15 and found.run.run_id == "run-15"
            assert found.point.change == pytest.approx(1.25 if "rtt" in name else 0.8,
                                                       rel=0.05)
            assert any(c.startswith("scenario") and "link.delay=1ms" in c
                       for c in found.changed)
            assert "commit 0e0000000000 -> 0f0000000000" in found.changed
        else:
            assert s.changes == [], name  # the baseline's own level did not move
    result = check(store)
    assert result.exit_code == 1 and len(result.new_changes()) == 2
    assert check(store, window=4).exit_code == 0  # run-15 is the fifth newest
    junit = ET.fromstring(render(result, "junit"))
    assert junit.get("failures") == "2" and len(junit.findall("testcase")) == 4
    assert "| **new** |" in render(result, "markdown")
    assert "FAILED" in render(result, "text")


def test_quiet_runs_give_no_change_point_and_pass_the_check(tmp_path: Path) -> None:
    store = tmp_path / "h.db"
    add_runs(store, [load_run(p) for p in _history(tmp_path)])
    result = check(store)
    assert sum(len(s.changes) for s in result.series) == 0
    assert result.exit_code == 0 and "passed" in render(result, "text")


def test_change_points_need_both_significance_and_more_than_the_floor() -> None:
    rng = random.Random(3)
    quiet = [1.3 * (1 + rng.gauss(0, 0.01)) for _ in range(20)]
    moved = quiet[:12] + [v * 1.2 for v in quiet[12:]]
    (cp,) = change_points(moved, [0.01] * 20)
    assert cp.index == 12 and cp.change == pytest.approx(1.2, rel=0.03)
    assert change_points(moved, [0.30] * 20) == []  # within the runs' own 30 % floor
    small = quiet[:12] + [v * 1.03 for v in quiet[12:]]
    assert change_points(small, [0.0] * 20) == []  # below 5 %: not called
    assert change_points(moved[:5]) == []  # too short a series
    assert change_points([*quiet[:18], 3.0, 3.0]) == []  # two runs cannot make a side


def test_adding_is_idempotent_and_two_writers_lose_nothing(tmp_path: Path) -> None:
    runs = _history(tmp_path, n=12)
    store = tmp_path / "h.db"
    ctx = multiprocessing.get_context("spawn")
    halves = [[str(p) for p in runs[0::2]], [str(p) for p in runs[1::2]]]
    procs = [ctx.Process(target=_add_paths, args=(str(store), half)) for half in halves]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with HistoryStore.open(store) as h:
        assert sorted(r.run_id for r in h.runs()) == [f"run-{k:02d}" for k in range(12)]
        samples = h.conn.execute("SELECT count(*) FROM samples").fetchone()[0]
    assert add_runs(store, [load_run(runs[3])]) == [("run-03", False)]
    with HistoryStore.open(store) as h:  # readable with ordinary SQL, labels as JSON
        assert h.conn.execute("SELECT count(*) FROM samples").fetchone()[0] == samples
        layers = {r[0] for r in h.conn.execute(
            "SELECT DISTINCT json_extract(labels, '$.layer') FROM samples")}
    assert layers == {"host", "bridge"}
    frame = vnetbench.load(store)  # every run of the store, as from their directories
    assert set(frame["run_id"]) == {f"run-{k:02d}" for k in range(12)}
    assert len(frame) == samples


def _add_paths(store: str, paths: list[str]) -> None:
    for path in paths:
        add_runs(store, [load_run(path)])


def test_a_foreign_corrupt_or_newer_file_is_refused_in_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all, " * 200)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    newer = tmp_path / "newer.db"
    HistoryStore.open(newer).close()
    with sqlite3.connect(newer) as conn:
        conn.execute("PRAGMA user_version = 99")
    for path, said in ((junk, "not a vnetbench history store"),
                       (other, "not a vnetbench history store (its application id"),
                       (newer, "upgrade vnetbench")):
        with pytest.raises(VnetbenchError, match=r"history store .*") as err:
            HistoryStore.open(path)
        assert said in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(VnetbenchError, match="no such file"):
        HistoryStore.open(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_exports_page_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "h.db"
    paths = _history(tmp_path, change_from=15)
    assert main(["history", "add", str(store), *map(str, paths[:10])]) == 0
    assert main(["history", "add", str(store), *map(str, paths)]) == 0
    out = capsys.readouterr().out
    assert out.count("already stored") == 10 and out.count("added:") == 20
    assert main(["history", "check", str(store), "--format", "junit"]) == 1
    capsys.readouterr()
    with HistoryStore.open(store) as h:
        points = h.points()
    text = openmetrics(points)
    assert text.endswith("# EOF\n") and "# TYPE vnetbench_ratio gauge" in text
    assert text.count('vnetbench_ratio{scenario="small",layer="bridge"') == 2 * 20
    dashboard = json.loads(dashboard_json(points))
    assert {p["targets"][0]["expr"].split("{")[0] for p in dashboard["panels"]} == \
        {"vnetbench_ratio", "vnetbench_level"}
    got: list[bytes] = []

    class Gateway(http.server.BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            got.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Gateway)
    thread = threading.Thread(target=server.handle_request, daemon=True)
    thread.start()
    assert push(points, f"http://127.0.0.1:{server.server_address[1]}") == 4
    thread.join(10)
    server.server_close()
    assert b"vnetbench_ratio{" in got[0] and b"# EOF" not in got[0]
    page = tmp_path / "h.html"
    assert main(["history", "report", str(store), "--out", str(page)]) == 0
    html = page.read_text()
    assert html.count("<svg") == 4 and "Change points" in html and "run-15" in html
    capsys.readouterr()
    assert main(["history", "series", str(store), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(len(s["changes"]) for s in listed) == [0, 0, 1, 1]


def test_the_machines_level_moving_alone_is_listed_not_failed(tmp_path: Path) -> None:
    """From run 15 on the machine is a third slower (as this VM's native round trip moves
    between phases): the baseline's level series has a change point, every layer's cost is
    unchanged; the check lists it as the machine's and passes, unless asked to judge levels."""
    paths = [_run(tmp_path / f"r{k:02d}", f"run-{k:02d}", 1.3, seed=k,
                  base=40.0 if k >= 15 else 30.0) for k in range(20)]
    store = tmp_path / "h.db"
    add_runs(store, [load_run(p) for p in paths])
    result = check(store)
    moved = {s.name for s in result.series if s.changes}
    assert moved == {"host rr rtt_p50_us at 2 nodes, 2 hosts", "host rr tps at 2 nodes, 2 hosts"}
    assert result.exit_code == 0 and len(result.old_changes()) == 2
    assert check(store, levels=True).exit_code == 1
