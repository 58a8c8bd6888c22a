"""Generated scenario files through ``vnetbench plan``: every one ends in a valid plan (exit
0) or one line ``vnetbench: error: ...`` (exit 2), never a traceback, whatever it holds.

A seeded generator (hypothesis is not a dependency) starts from valid scenarios and breaks
them: keys of the real schema (top level, every layer's options, every workload's options)
given values of the wrong type, past their bounds, with units good and bad, huge numbers,
lists that sweep, nested junk; written as YAML text with anchors, aliases, merge keys,
tags (``!!binary``, ``!!set``, ``!!timestamp``, ``!!python/...``, custom ones), non-text
keys, duplicate keys and several documents. ``plan`` runs in-process through ``cli.main``
(what ``python -m vnetbench`` runs); a sample also runs as a subprocess and must give the
same status and error line. A failing case prints its seed and the file, to replay it.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vnetbench.backends.catalog import LAYERS
from vnetbench.cli.main import main
from vnetbench.workloads.registry import workload_models

ROOT = Path(__file__).resolve().parents[2]
CASES = 600
SUBPROCESS_SAMPLE = 12


class Raw:
    """YAML text put into the document as it is (a tagged value, an alias...)."""

    def __init__(self, text: str) -> None:
        self.text = text


def emit(value: Any) -> str:
    """``value`` as flow-style YAML (JSON-like, plus ``Raw`` text where it stands)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{emit(k)}: {emit(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(emit(v) for v in value) + "]"
    if isinstance(value, float) and value != value:
        return ".nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    return json.dumps(value)


TOP_KEYS = ["name", "description", "hosts", "nodes", "layers", "layer_options", "resources",
            "link", "workloads", "repeat", "until_cv", "max_repeat", "budget", "warmup", "seed",
            "busy", "busy_duty", "skip_unsupported", "platform", "noise_floor", "machines"]
NESTED = {
    "resources": ["cpus", "memory", "cpuset"],
    "link": ["delay", "jitter", "loss", "rate", "pairs"],
    "platform": ["placement", "cpus", "idle_states", "governor", "quiet"],
}
LAYER_KEYS = {name: list(cls.options.model_fields) for name, cls in LAYERS.items()}
WORKLOAD_KEYS = {name: list(model.model_fields) for name, model in workload_models().items()}
DEFAULTS: dict[str, Any] = {}
"""A valid value of each option key (its default, when plain), to keep many cases valid."""
for _model in [cls.options for cls in LAYERS.values()] + list(workload_models().values()):
    for _key, _field in _model.model_fields.items():
        if isinstance(_field.default, bool | int | float | str) and _key not in DEFAULTS:
            DEFAULTS[_key] = _field.default
WORKLOADS = [w for w in WORKLOAD_KEYS if w not in ("hadoop", "mpi", "oltp")] + ["oltp"]
LAYER_NAMES = [n for n in LAYERS if not n.startswith(("docker", "vm"))] + ["docker-bridge",
                                                                           "vm-bridge"]

NUMBERS: list[Any] = [0, 1, 2, 3, -1, -0.0, 0.5, 7, 64, 100, 1023, 1024, 65535, 65536, 2**24 - 1,
                      2**24, 2**31, 2**63, 10**30, 1e300, float("inf"), float("nan"), 1.5e-9]
UNITS: list[str] = ["5s", "1ms", "0s", "-5s", "5 parsecs", "1e3ms", "5", "1.5h", "86401s",
                    "100mbit", "100Mbps", "100MB/s", "1tbit", "2tbit", "64k", "1M", "16M", "1G",
                    "2P", "10%", "150%", "0.5%", "-1%", "1e999s", "", " ", "ms", "5 s"]
STRINGS: list[str] = ["host", "bridge", "nope", "tcp", "udp", "max", "auto", "off", "on",
                      "yes", "cross", "x" * 300, "naïve ☃", "line\nbreak", "\x1b[31mred",
                      "../../etc/passwd", "-oProxyCommand=x", "root@a;b", "{port}", "%s%n"]
TAGGED: list[str] = ["!!binary aGVsbG8=", "!!str 5", "!!int 5", "!!int abc", "!!float x",
                     "!!bool maybe", "!!null ''", "!!timestamp 2024-01-01", "!!timestamp nope",
                     "!!set {a: null}", "!!omap [{a: 1}]", "!!pairs [{a: 1}]",
                     "!!python/object:os.system {}", "!!python/name:os.system ''",
                     "!custom 5", "!<tag:example.com,2000:x> 1", "!!map {a: 1}", "!!seq [1]",
                     "!!float .inf", "!!float -.nan", "!!int 0x1F", "!!int 0o17", "!!int 1_000",
                     "!!float 1e400", "!!int " + "9" * 5000]


class Generator:
    """Scenario documents, each one valid scenario broken in a few random places."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.anchors: list[str] = []

    def scalar(self) -> Any:
        r = self.rng.random()
        if r < 0.3:
            return self.rng.choice(NUMBERS)
        if r < 0.55:
            return self.rng.choice(UNITS)
        if r < 0.7:
            return self.rng.choice(STRINGS)
        if r < 0.8:
            return self.rng.choice([True, False, None])
        if r < 0.9 or not self.anchors:
            return Raw(self.rng.choice(TAGGED))
        return Raw("*" + self.rng.choice(self.anchors))

    def junk(self, depth: int = 0) -> Any:
        r = self.rng.random()
        if depth > 3 or r < 0.6:
            return self.scalar()
        if r < 0.8:
            return [self.junk(depth + 1) for _ in range(self.rng.randint(0, 4))]
        return {self.key(): self.junk(depth + 1) for _ in range(self.rng.randint(0, 3))}

    def key(self) -> Any:
        r = self.rng.random()
        if r < 0.7:
            return self.rng.choice([*TOP_KEYS, "port", "vni", "duration", "request"])
        if r < 0.8:
            return Raw(self.rng.choice(["1", "~", "true", "[a]", "{a: 1}", "!!binary aGk=",
                                        "2024-01-01", "1.5", "<<"]))
        return self.rng.choice(["", "x" * 80, "héllo", "a.b", "__class__", "nodes "])

    def option(self, key: str) -> Any:
        """A value for an option key: its default half the time, else ``value``."""
        if key in DEFAULTS and self.rng.random() < 0.5:
            return DEFAULTS[key]
        return self.value()

    def value(self) -> Any:
        """A value a key might take: mostly plausible, often not."""
        r = self.rng.random()
        if r < 0.15:
            return [self.scalar() for _ in range(self.rng.randint(0, 3))]  # a sweep
        if r < 0.25:
            return self.junk()
        return self.scalar()

    def base(self) -> dict[Any, Any]:
        layers: list[Any] = []
        for name in self.rng.sample(LAYER_NAMES, self.rng.randint(1, 3)):
            if self.rng.random() < 0.4 and LAYER_KEYS[name]:
                opts = {k: self.option(k) for k in self.rng.sample(
                    LAYER_KEYS[name], self.rng.randint(1, len(LAYER_KEYS[name])))}
                layers.append({name: opts})
            else:
                layers.append(name)
        workloads: list[Any] = []
        for name in self.rng.sample(WORKLOADS, self.rng.randint(0, 2)):
            keys = WORKLOAD_KEYS[name]
            opts = {k: self.option(k)
                    for k in self.rng.sample(keys, self.rng.randint(0, min(3, len(keys))))}
            workloads.append({name: opts} if opts or self.rng.random() < 0.5 else name)
        doc: dict[Any, Any] = {"name": "fuzz", "layers": layers, "noise_floor": False}
        if workloads:
            doc["workloads"] = workloads
        doc["nodes"] = self.rng.choice([1, 2, 3, 4, 8])
        doc["hosts"] = self.rng.choice([1, 2, 3])
        return doc

    def break_some(self, doc: dict[Any, Any]) -> None:
        for _ in range(self.rng.choice([0, 0, 0, 1, 2, 3])):
            key = self.rng.choice(TOP_KEYS)
            if key in NESTED and self.rng.random() < 0.7:
                doc[key] = {k: self.value() for k in self.rng.sample(
                    NESTED[key], self.rng.randint(1, len(NESTED[key])))}
            else:
                doc[key] = self.value()
        if self.rng.random() < 0.1:
            doc[self.key()] = self.junk()

    def document(self) -> str:
        self.anchors = []
        doc = self.base()
        self.break_some(doc)
        text = emit(doc)
        r = self.rng.random()
        if r < 0.15:  # an anchored mapping, aliased and merged (<<) into others
            self.anchors = ["o"]
            doc["workloads"] = Raw(
                "[{rr: &o {duration: " + emit(self.value()) + "}}, {stream: {<<: *o, port: "
                + emit(self.value()) + "}}, {crr: *o}]")
            text = self._as_block(doc, prefix="<<: {nodes: 2}\n")
        elif r < 0.25:  # several documents
            text = text + "\n---\n" + emit(self.base())
        elif r < 0.32:  # a duplicate key
            text = text[:-1] + ", \"nodes\": 3}"
        elif r < 0.38:  # an alias bomb (bounded by the loader)
            text = ("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c]\n"
                    "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n" + self._as_block(doc))
        elif r < 0.43:  # deep nesting
            depth = self.rng.choice([10, 70, 300])
            text = self._as_block(doc) + "description: " + "[" * depth + "]" * depth + "\n"
        elif r < 0.48:  # an empty or scalar document
            text = self.rng.choice(["", "~", "5", "[]", "{}", "- a\n- b", "'just text'", "---"])
        return text

    def _as_block(self, doc: dict[Any, Any], prefix: str = "") -> str:
        """The mapping as block YAML, one top-level key a line (values in flow style)."""
        return prefix + "".join(f"{emit(k)}: {emit(v)}\n" for k, v in doc.items())


def _plan_in_process(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["plan", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def _check(code: int, out: str, err: str, where: str) -> None:
    assert code in (0, 2), f"{where}: exit {code}\n{err[-2000:]}"
    assert "Traceback" not in err, where
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("vnetbench: error: "), f"{where}\n{err}"
        assert len(lines[0]) < 1000, where
    else:
        assert err == "" and out.startswith("plan of "), f"{where}\n{err[-500:]}"


def test_generated_scenarios_plan_or_give_one_line(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    counts = {0: 0, 2: 0}
    for seed in range(CASES):
        text = Generator(seed).document()
        path = tmp_path / f"case{seed}.yaml"
        path.write_text(text)
        where = f"seed {seed} ({path}):\n{text[:1500]}"
        try:
            code, out, err = _plan_in_process(path, capsys)
        except BaseException as exc:  # a traceback: the one thing a scenario must never give
            raise AssertionError(f"{where}\nraised {type(exc).__name__}: {exc}") from exc
        _check(code, out, err, where)
        counts[code] += 1
        path.unlink()
    # the generator reaches both outcomes, so neither check above is vacuous
    assert counts[0] >= CASES // 20 and counts[2] >= CASES // 2, counts


def test_the_cli_gives_what_the_in_process_plan_gives(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for seed in random.Random(7).sample(range(CASES), SUBPROCESS_SAMPLE):
        path = tmp_path / f"case{seed}.yaml"
        path.write_text(Generator(seed).document())
        code, out, err = _plan_in_process(path, capsys)
        proc = subprocess.run([sys.executable, "-m", "vnetbench", "plan", str(path)], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert (proc.returncode, proc.stderr) == (code, err), f"seed {seed}"
        assert proc.stdout == out, f"seed {seed}"
