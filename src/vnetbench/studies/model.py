"""A study pack as data: the published figures of one seed study, the findings they
support, and how a vnetbench run checks each finding (``study.yaml`` beside its scenarios).

    studies/s003_percona/study.yaml     published numbers (figure/table), mapping, findings
    studies/s003_percona/quick.yaml     the scenario sized for a small host
    studies/s003_percona/standard.yaml  the same labs with the rounds and durations that
                                        resolve what quick cannot (``--size standard``)
    studies/s003_percona/full.yaml      the study's own size (``--size full``, ``--full``)

The sizes are ``Size``: the packs here have ``quick`` and ``full``; ``standard`` is
optional. A standard scenario keeps its quick twin's layers, workloads and variant labels (so
a finding selects the same one configuration), changing only durations, repetitions and data
sizes.
A pack may name several scenarios per size (``quick: [quick.yaml, hadoop-quick.yaml]``) when
its figures need labs that differ in more than a sweep (study 000: two-host request/response
across Docker and VMs, and a Hadoop cluster grown node by node); ``reproduce`` runs each and
judges every finding against all their samples.

A finding's ``check`` names the workload, metric, layer and baseline whose ratio is judged (as
the run measured it: pair by pair where it paired them, ``estimate``), the direction the paper
found (``lower``/``higher``/``same``) and, where the paper gives both numbers, the band of
ratios they support. Its ``where`` must select exactly one configuration of the run (every
variant label pinned: ``verdict``; a sweep axis it leaves open, a full pack's data sizes, is
judged value by value, every value required to agree); ``baseline_where`` picks the baseline's samples by other
labels (the same layer's other cgroup). A check ``along: nodes`` judges a trend of one layer
along the node sweep instead (``decreases``/``increases``/
``sublinear``/``knee``, see ``trend``); its ``band`` is then where the knee lies, in nodes per
core. A check ``across: <label>`` with ``expect: rises-with`` judges whether the layer's cost
grows with a property of the baseline's runs across the label's values (``across``). A claim
of no difference (``same``) carries its own ``margin`` (or a band); with ``bound`` it names
the lab setting that may hold both sides at one value (the link's rate, delay or jitter, a
workload's offered bit rate): when it does, the verdict is "set by the lab". ``within``
judges what a layer adds in the metric's own unit against the study's band or resolution
(``added``); ``reaches`` a layer's level against the study's line rate or the lab's pace.
``construction`` says why the lab decides a finding by how it is built ("set by the lab"),
``untestable`` why the published claim cannot be tested here ("not comparable").

``needs`` lists what the finding needs: capabilities vnetbench lacks (``CAPABILITIES``,
unless built since: ``AVAILABLE``), and properties of the machine the run finds out itself
(``DETECTED``: KVM from the VM backend's accelerator choice, the machine's cores), so the same
pack judges on a big KVM host what it cannot judge here. A finding that lacks one is "not
comparable", saying why. A ``cause`` is the pack's explanation of a contradiction, shown with
the run's measurement of it, or marked untested (``causes``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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
    "kvm": "VMs run under TCG (emulated CPU), not at hardware speed",
    "hadoop-in-vm": "the hadoop workload does not run inside VM guests",
    "physical-nic": "no physical NIC or wire in the lab (veth underlay)",
    "disk-benchmark": "no disk benchmark workload",
    "cpu-benchmark": "no CPU benchmark workload (the study's systester pi digits)",
    "many-cores": "2 cores here, far fewer than the study's machines",
    "encryption-comparison": "the study compared encryption options the lab does not model",
}
"""What a finding may need that vnetbench lacks today -> why it is not comparable."""

AVAILABLE: frozenset[str] = frozenset({"mixed-placement", "reverse-stream", "delay-matrix",
                                       "softirq-detector", "drop-retransmit-detector",
                                       "npb-kernels", "hadoop-in-vm"})
"""Capabilities above that have since been built (a finding needing only these is judged)."""

MANY_CORES = 8
"""Cores a machine needs for ``many-cores``: room for one core's softirq load to stand out
(study 003's ksoftirqd at 100% of one of 56 cores) and for 32 busy containers to crowd a
quad-core VM without the whole machine being the bottleneck (study 000's Fig. 5)."""

DETECTED = frozenset({"kvm", "many-cores"})
"""Needs the run's machine answers (``HostFacts``), not the code."""

Size = Literal["quick", "standard", "full"]
"""A pack's scenario size: ``quick`` for a small host, ``standard`` (optional) the same labs
run long and often enough to resolve what quick cannot, ``full`` the study's own size."""

SIZES: tuple[Size, ...] = ("quick", "standard", "full")
"""Every size, smallest first (the order ``--list`` shows them in)."""


def as_size(size: Size | bool) -> Size:
    """``size`` itself; a bool as the older ``full`` flag (True: ``full``, False: ``quick``)."""
    if isinstance(size, bool):
        return "full" if size else "quick"
    return size


@dataclass(frozen=True)
class HostFacts:
    """What the machine of a run offered, as the run recorded it: ``kvm`` from the VM
    backend's accelerator choice (True: its guests ran under KVM; False: under TCG; None: the
    run booted no guest), ``cores`` from the machine (0: unknown)."""

    kvm: bool | None = None
    cores: int = 0

    def lacks(self, need: str) -> str | None:
        """Why this machine cannot satisfy ``need`` (None: it can)."""
        if need == "kvm":
            if self.kvm:
                return None
            return ("VMs run under TCG here (the VM backend found no working KVM), not at "
                    "hardware speed; a host with working KVM judges it" if self.kvm is False else
                    "the run booted no VM guest, so it did not find out whether KVM works here")
        if need == "many-cores":
            if self.cores >= MANY_CORES:
                return None
            have = f"{self.cores} cores here" if self.cores else "the run did not record its cores"
            return f"{have}; the finding needs at least {MANY_CORES} (many-cores)"
        raise ValueError(f"{need!r} is not a detected capability ({', '.join(sorted(DETECTED))})")

    @classmethod
    def of(cls, environments: Iterable[Mapping[str, object]]) -> HostFacts:
        """The facts of the runs' ``run.json`` environments (one machine): KVM when a VM
        layer's guests ran under KVM, False when one ran under TCG; the most cores recorded."""
        kvm: bool | None = None
        cores = 0
        for env in environments:
            layers = env.get("layers")
            for facts in (layers.values() if isinstance(layers, Mapping) else ()):
                vm = facts.get("vm") if isinstance(facts, Mapping) else None
                if isinstance(vm, Mapping) and vm.get("accel") in ("kvm", "tcg"):
                    ran_kvm = vm["accel"] == "kvm"
                    kvm = ran_kvm if kvm is None else (kvm and ran_kvm)
            count = env.get("cores")
            if isinstance(count, int) and not isinstance(count, bool) and count > cores:
                cores = count
        return cls(kvm, cores)


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

Bound = Literal["link.rate", "link.delay", "link.jitter", "bitrate"]
"""A lab setting that can hold a measurement at one value: the link's rate (a throughput at
the cap), its delay (a round trip that is the configured delay), its jitter (a stream's jitter
that is the configured jitter), a workload's offered bit rate (a stream paced at it)."""
LevelBound = Literal["link.rate", "bitrate"]
"""A lab setting a ``reaches`` check may take its level from (a line rate, a pace)."""


class Check(Strict):
    workload: str
    metric: str
    layer: str
    baseline: str = "host"
    expect: Literal["lower", "higher", "same", "within", "reaches", "warned",
                    "decreases", "increases", "sublinear", "knee", "rises-with"]
    """``lower``/``higher``/``same``: the layer against the baseline (a paired ratio);
    ``within``: what the layer adds to the baseline (layer - baseline, in the metric's unit)
    lies in ``added``; ``reaches``: the layer's level reaches ``share`` of ``level`` (or of the
    lab's ``level_bound``); ``warned``: the run's detectors flag the layer on this workload
    (``warning`` names the kind); with ``along``, the trend of the layer's metric along that
    axis (``trend.judge_trend``); ``rises-with``: the layer's ratio to the baseline rises with
    ``predictor`` across ``across``'s values."""
    warning: str | None = None
    band: tuple[float, float] | None = None
    band_from: str = ""
    margin: float | None = Field(default=None, gt=1.0, le=4.0)
    """The smallest ratio the claim means (``same``: the equivalence margin, required without
    a band: "no difference" means the ratio's interval, widened by the run's floor, lies inside
    [1/margin, margin]; ``lower``/``higher``: "no difference" contradicts them only inside
    that margin, 1.05 by default)."""
    margin_from: str = ""
    """Where the margin comes from (the study's words or resolution)."""
    added: tuple[float, float] | None = None
    """``within``: the band of what the layer adds to the baseline, in the metric's unit
    (µs for a latency), from the study's numbers or its resolution (``band_from``)."""
    level: float | None = Field(default=None, gt=0)
    """``reaches``: the level the layer must reach (the study's line rate, in the metric's
    unit)."""
    level_bound: LevelBound | None = None
    """``reaches``: take the level from the lab's setting (the link's rate, the offered bit
    rate) instead of ``level``."""
    share: float = Field(default=0.95, gt=0.0, le=1.0)
    """``reaches``: the share of the level the layer's median must reach."""
    construction: str = ""
    """Why the lab's own construction decides this comparison (the layer shares the
    baseline's path, the pack's assumption forces the effect): the verdict is "set by the
    lab", with this reason, never agreement."""
    untestable: str = ""
    """Why the published claim cannot be tested here (the study's own set-up was broken, a
    system the lab does not model): the verdict is "not comparable", with this reason."""
    where: dict[str, str] = Field(default_factory=dict)
    """Labels the samples must carry (``""``: the label must be absent); together they must
    select exactly one configuration."""
    baseline_where: dict[str, str] = Field(default_factory=dict)
    """Labels that select the baseline's samples in place of ``where``'s same keys (e.g. the
    same layer's ``cgroup: n0`` against ``where``'s ``cgroup: infra``)."""
    along: Literal["nodes"] | None = None
    """Judge a trend along this swept axis (one layer; ``baseline`` unused)."""
    across: str | None = None
    """With ``rises-with``: the label whose values are the points (``kernel``)."""
    predictor: str | None = None
    """With ``rises-with``: the baseline's metric each point is placed at (its median)."""
    predictor_per: str | None = None
    """Divide ``predictor`` by this metric of the same trial first (messages per second)."""
    bound: Bound | None = None
    """The lab setting that may decide the comparison (``verdict``: "set by the lab")."""

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
        if (self.expect == "rises-with") != (self.across is not None and
                                             self.predictor is not None):
            raise ValueError("expect: rises-with goes with across: <label> and predictor: "
                             "<metric> (and only with them)")
        if self.predictor_per is not None and self.predictor is None:
            raise ValueError("predictor_per needs predictor")
        if self.bound is not None and self.expect != "same":
            raise ValueError("bound applies to a claim of no difference (expect: same): a "
                             "lower/higher claim is judged whatever the lab sets")
        if self.expect == "same" and self.band is None and self.margin is None \
                and self.bound is None and not (self.construction or self.untestable):
            raise ValueError("expect: same needs margin: <ratio> (the difference the claim "
                             "calls none, from the study) or a band")
        if (self.expect == "within") != (self.added is not None):
            raise ValueError("expect: within goes with added: [low, high] (and only with it)")
        if self.added is not None and self.added[0] > self.added[1]:
            raise ValueError(f"added {self.added} must be [low, high]")
        if (self.expect == "reaches") != (self.level is not None or self.level_bound is not None):
            raise ValueError("expect: reaches goes with level: <value> or level_bound: "
                             "<setting> (and only with them)")
        if self.level is not None and self.level_bound is not None:
            raise ValueError("give level or level_bound, not both")
        return self


class Cause(Strict):
    """The pack's explanation of a contradiction and the measurement that tests it."""

    text: str
    measure: Literal["cpu-saturated", "no-softirq-saturation", "drops-retransmits"] | None = None
    """What the run measured that would support ``text`` (``causes``); none: untested."""


class Finding(Strict):
    id: str
    claim: str
    source: str
    published: list[Published] = Field(default_factory=list)
    quote: str = ""
    check: Check
    needs: list[str] = Field(default_factory=list)
    cause: Cause | None = None
    """Why the lab may contradict the finding, shown (with its test) when it does."""

    @model_validator(mode="after")
    def _known_needs(self) -> Finding:
        unknown = [n for n in self.needs if n not in CAPABILITIES]
        if unknown:
            raise ValueError(f"finding {self.id}: unknown needs {unknown}; known: "
                             f"{', '.join(CAPABILITIES)}")
        return self

    def missing(self, host: HostFacts | None = None) -> list[str]:
        """Why vnetbench cannot check this finding on ``host`` (empty: it can). A detected
        need (``DETECTED``) is answered by the machine's facts; unknown facts lack it."""
        facts = host or HostFacts()
        out = []
        for need in self.needs:
            if need in DETECTED:
                why = facts.lacks(need)
                if why:
                    out.append(why)
            elif need not in AVAILABLE:
                out.append(CAPABILITIES[need])
        return out


class Study(Strict):
    id: str
    name: str
    title: str
    seed: str
    mapping: list[Mapped]
    scenarios: dict[Size, str | list[str]]
    """The scenario files of each size (``standard`` optional), in the order they run."""
    kvm_scenarios: dict[Size, list[str]] = Field(default_factory=dict)
    """Scenarios of VM layers whose figures mean something only at hardware speed (Hadoop in
    guests): run when the VM backend's guests get KVM; under TCG left out, with one line
    saying so (``--emulated`` runs them anyway: measured, labelled emulated, never judged)."""
    differences: list[str] = Field(default_factory=list)
    findings: list[Finding]
    folder: Path = Path()

    @model_validator(mode="after")
    def _kvm_sizes_known(self) -> Study:
        extra = [size for size in self.kvm_scenarios if size not in self.scenarios]
        if extra:
            raise ValueError(f"kvm_scenarios: size {extra[0]} is not one of the pack's "
                             f"scenarios sizes ({', '.join(self.sizes)})")
        return self

    @property
    def sizes(self) -> list[Size]:
        """The sizes the pack has, smallest first."""
        return [size for size in SIZES if size in self.scenarios]

    def scenario_paths(self, size: Size | bool = "quick", *, full: bool = False) -> list[Path]:
        """The pack's scenario files of one size, in the order they run (``full=True``, or a
        bool ``size``, as the older flag); ScenarioError when the pack lacks the size."""
        chosen = "full" if full else as_size(size)
        names = self.scenarios.get(chosen)
        if names is None:
            raise ScenarioError(f"study {self.id} ({self.name}) has no {chosen} size; its "
                                f"sizes: {', '.join(self.sizes)}")
        return [self.folder / n for n in ([names] if isinstance(names, str) else names)]

    def kvm_scenario_paths(self, size: Size | bool = "quick", *,
                           full: bool = False) -> list[Path]:
        """The pack's scenarios of one size that need KVM to mean something (``kvm_scenarios``;
        none when the size names none)."""
        chosen = "full" if full else as_size(size)
        return [self.folder / n for n in self.kvm_scenarios.get(chosen, [])]


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


def study_listing(studies: Iterable[Study]) -> list[str]:
    """``vnetbench reproduce --list``: each study's id, name and title, then its scenario
    files of each size it has (quick, standard, full) and the folder they are in (as the packs
    say, never a fixed list)."""
    lines: list[str] = []
    for study in sorted({s.id: s for s in studies}.values(), key=lambda s: s.id):
        lines.append(f"{study.id} {study.name:12} {study.title}")
        for size in study.sizes:
            names = study.scenarios[size]
            shown = [names] if isinstance(names, str) else names
            kvm = [f"{n} (with KVM)" for n in study.kvm_scenarios.get(size, [])]
            lines.append(f"    {size + ':':9} {', '.join([*shown, *kvm])}")
        lines.append(f"    in        {study.folder}")
    return lines


def find_study(name: str) -> Study:
    studies = all_studies()
    if name not in studies:
        known = sorted({s.name for s in studies.values()})
        from vnetbench.scenario.loading import did_you_mean

        raise ScenarioError(f"unknown study {name!r}{did_you_mean(name, known)}; known: "
                            f"{', '.join(known)} (or their ids; `vnetbench reproduce --list`)")
    return studies[name]
