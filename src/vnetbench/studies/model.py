"""A study pack as data: the published figures of one seed study, the findings they
support, and how a vnetbench run checks each finding (``study.yaml`` beside its scenarios).

    studies/s003_percona/study.yaml   published numbers (figure/table), mapping, findings
    studies/s003_percona/quick.yaml   the scenario sized for a small host
    studies/s003_percona/full.yaml    the study's own size (``--full``)

A finding's ``check`` names the workload, metric, layer and baseline whose ratio of medians
is judged, the direction the paper found (``lower``/``higher``/``same``) and, where the paper
gives both numbers, the band of ratios they support. ``needs`` lists what vnetbench cannot do
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
    "hadoop-study": "the Hadoop reproductions are a separate issue",
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


class Check(Strict):
    workload: str
    metric: str
    layer: str
    baseline: str = "host"
    expect: Literal["lower", "higher", "same", "warned"]
    """``lower``/``higher``/``same``: the layer's median vs the baseline's; ``warned``: the
    run's detectors flagged the layer (``warning`` names the kind)."""
    warning: str | None = None
    band: tuple[float, float] | None = None
    band_from: str = ""
    where: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _band_ordered(self) -> Check:
        if self.band is not None and not 0 < self.band[0] <= self.band[1]:
            raise ValueError(f"band {self.band} must be 0 < low <= high")
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
    scenarios: dict[Literal["quick", "full"], str]
    differences: list[str] = Field(default_factory=list)
    findings: list[Finding]
    folder: Path = Path()

    def scenario_path(self, full: bool = False) -> Path:
        return self.folder / self.scenarios["full" if full else "quick"]


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
