"""A study pack as data: the published figures of one seed study, the findings they
support, and how a vnetbench run checks each finding (``study.yaml`` beside its scenarios).

    studies/s003_percona/study.yaml   published numbers (figure/table), mapping, findings
    studies/s003_percona/quick.yaml   the scenario sized for a small host
    studies/s003_percona/full.yaml    the study's own size (``--full``)

A pack may name several scenarios per size (``quick: [quick.yaml, hadoop-quick.yaml]``) when
its figures need labs that differ in more than a sweep (study 000: two-host request/response
across Docker and VMs, and a Hadoop cluster grown node by node); ``reproduce`` runs each and
judges every finding against all their samples.

A finding's ``check`` names the workload, metric, layer and baseline whose ratio of medians
is judged, the direction the paper found (``lower``/``higher``/``same``) and, where the paper
gives both numbers, the band of ratios they support. A check ``along: nodes`` judges a trend
of one layer along the node sweep instead (``decreases``/``increases``/``sublinear``/``knee``,
see ``verdict``); its ``band`` is then where the knee lies, in nodes per core. ``needs`` lists what vnetbench cannot do
yet (``CAPABILITIES``); such a finding is "not comparable", saying why.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from vnetbench.errors import ScenarioError
from vnetbench.results.warning_model import WarningKind

STUDIES_DIR = Path(__file__).resolve().parent

CAPABILITIES: dict[str, str] = {
    "mixed-placement": "client and server in different layers is not built yet",
    "reverse-stream": "reverse and bidirectional streams are not built yet",
    "delay-matrix": "a delay per host pair is not built yet (one link shape for all)",
    "npb-kernels": "the NPB kernels' communication patterns are not built yet",
    "softirq-detector": "the softirq saturation detector is not built yet",
    "drop-retransmit-detector": "the drops-vs-retransmits detector is not built yet",
    "kvm": "VMs run under TCG here (emulated CPU), not at hardware speed",
    "hadoop-in-vm": "the hadoop workload does not run inside VM guests yet (its daemons need "
                    "the node's network namespace on this host)",
    "physical-nic": "no physical NIC or wire in the lab (veth underlay)",
    "disk-benchmark": "no disk benchmark workload",
    "many-cores": "2 cores here, far fewer than the study's machines",
    "encryption-comparison": "the study compared encryption options the lab does not model",
}
"""What a finding may need that vnetbench lacks today -> why it is not comparable."""

AVAILABLE: frozenset[str] = frozenset({"mixed-placement", "reverse-stream", "delay-matrix",
                                       "softirq-detector", "drop-retransmit-detector",
                                       "npb-kernels"})
"""Capabilities above that have since been built (a finding needing only these is judged)."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Published(Strict):
    what: str
    value: float
    unit: str = ""


class Mapped(Strict):
    study: str
    layer: str
    note: str = ""


TREND_EXPECTS = ("decreases", "increases", "sublinear", "knee")
"""What a check ``along`` an axis may expect of the curve."""


class Check(Strict):
    workload: str
    metric: str
    layer: str
    baseline: str = "host"
    expect: Literal["lower", "higher", "same", "warned",
                    "decreases", "increases", "sublinear", "knee"]
    """``lower``/``higher``/``same``: the layer's median vs the baseline's; ``warned``: the
    run's detectors flagged the layer (``warning`` names the kind); with ``along``, the
    trend of the layer's metric along that axis (``verdict.judge_trend``)."""
    warning: str | None = None
    band: tuple[float, float] | None = None
    band_from: str = ""
    where: dict[str, str] = Field(default_factory=dict)
    along: Literal["nodes"] | None = None
    """Judge a trend along this swept axis (one layer; ``baseline`` unused)."""

    @model_validator(mode="after")
    def _band_ordered(self) -> Check:
        if self.band is not None and not 0 < self.band[0] <= self.band[1]:
            raise ValueError(f"band {self.band} must be 0 < low <= high")
        if (self.along is not None) != (self.expect in TREND_EXPECTS):
            raise ValueError(f"expect: {self.expect} goes with along: nodes" if self.along is None
                             else f"along: {self.along} takes expect: "
                                  + "/".join(TREND_EXPECTS))
        if self.expect == "knee" and self.band is None:
            raise ValueError("expect: knee needs band: [low, high] (nodes per core)")
        if (self.expect == "warned") != (self.warning is not None):
            raise ValueError("expect: warned goes with warning: <kind> (and only with it)")
        if self.warning is not None and self.warning not in {k.value for k in WarningKind}:
            raise ValueError(f"unknown warning kind {self.warning!r}")
        return self


class Finding(Strict):
    id: str
    claim: str
    source: str
    published: list[Published] = Field(default_factory=list)
    quote: str = ""
    check: Check
    needs: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known_needs(self) -> Finding:
        unknown = [n for n in self.needs if n not in CAPABILITIES]
        if unknown:
            raise ValueError(f"finding {self.id}: unknown needs {unknown}; known: "
                             f"{', '.join(CAPABILITIES)}")
        return self

    def missing(self) -> list[str]:
        """Why vnetbench cannot check this finding yet (empty: it can)."""
        return [CAPABILITIES[n] for n in self.needs if n not in AVAILABLE]


class Study(Strict):
    id: str
    name: str
    title: str
    seed: str
    mapping: list[Mapped]
    scenarios: dict[Literal["quick", "full"], str | list[str]]
    differences: list[str] = Field(default_factory=list)
    findings: list[Finding]
    folder: Path = Path()

    def scenario_paths(self, full: bool = False) -> list[Path]:
        """The pack's scenario files of one size, in the order they run."""
        names = self.scenarios["full" if full else "quick"]
        return [self.folder / n for n in ([names] if isinstance(names, str) else names)]


def load_study(folder: Path) -> Study:
    """The pack in ``folder``; ScenarioError naming the file and what is wrong."""
    path = folder / "study.yaml"
    try:
        data = yaml.safe_load(path.read_text())
        return Study.model_validate({**data, "folder": folder})
    except (OSError, yaml.YAMLError, ValueError) as exc:
        raise ScenarioError(f"{path}: {exc}") from exc


@cache
def all_studies() -> dict[str, Study]:
    """Every pack, by name and by id (``percona`` and ``003`` find the same study)."""
    out: dict[str, Study] = {}
    for folder in sorted(p for p in STUDIES_DIR.iterdir() if (p / "study.yaml").is_file()):
        study = load_study(folder)
        out[study.name] = out[study.id] = study
    return out


def find_study(name: str) -> Study:
    studies = all_studies()
    if name not in studies:
        known = sorted({s.name for s in studies.values()})
        raise ScenarioError(f"unknown study {name!r}; known: {', '.join(known)} (or their ids)")
    return studies[name]
