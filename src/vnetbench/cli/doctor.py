"""``vnetbench doctor``: what this host can and cannot do, and what that means for a run."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Required, TypedDict

from vnetbench.backends.catalog import LAYERS
from vnetbench.backends.registry import check_layer
from vnetbench.errors import VnetbenchError
from vnetbench.host.cgroups import V1_CONTROLLERS, cgroup_version
from vnetbench.host.features import FEATURE_ADVICE, kernel_features, tool_statuses
from vnetbench.layers.registry import layer_programs

ESSENTIAL_TOOLS = ("ip", "tc", "iptables-restore", "vnetbench-probe")
"""Programs without which no run can start (``doctor`` fails without them)."""


class CgroupFacts(TypedDict):
    """The cgroup hierarchy: its version and, for v1, the controllers mounted."""

    version: int
    controllers: list[str]


class ToolFacts(TypedDict):
    """A program: where it is (None: missing) and what lacking it means."""

    name: str
    path: str | None
    note: str


class DoctorFacts(TypedDict, total=False):
    """What ``doctor_facts`` found (all but ``root`` and ``ok`` as root only)."""

    root: Required[bool]
    ok: Required[bool]
    kernel_features: dict[str, bool]
    cgroups: CgroupFacts
    layers: dict[str, str]
    virtual_machines: dict[str, str]
    tools: list[ToolFacts]


def doctor_facts() -> DoctorFacts:
    """What ``doctor`` found, as data (``vnetbench doctor --json``): ``root``, ``ok``
    (everything essential present) and, as root, ``kernel_features`` (name -> present),
    ``cgroups`` (version, v1 controllers), ``layers`` (name -> ``ok`` or why unavailable),
    ``virtual_machines`` and ``tools`` (name, path or null, note)."""
    root = os.geteuid() == 0
    facts: DoctorFacts = {"root": root, "ok": False}
    if not root:
        return facts
    features = kernel_features()
    facts["kernel_features"] = features
    version = cgroup_version()
    facts["cgroups"] = {"version": version, "controllers": [
        c for c in V1_CONTROLLERS if os.path.isdir(f"/sys/fs/cgroup/{c}")] if version == 1 else []}
    layers: dict[str, str] = {}
    for name, cls in LAYERS.items():
        try:
            check_layer(cls())
            layers[name] = "ok"
        except VnetbenchError as exc:
            layers[name] = f"unavailable: {exc}"
    facts["layers"] = layers
    facts["virtual_machines"] = vm_facts()
    tools = tool_statuses(layer_programs())
    facts["tools"] = [{"name": t.name, "path": t.path, "note": t.note} for t in tools]
    facts["ok"] = (features.get("veth", False) and features.get("bridge", False)
                   and all(t.path for t in tools if t.name in ESSENTIAL_TOOLS))
    return facts


def doctor_text(facts: DoctorFacts) -> str:
    """``doctor_facts`` as the lines ``vnetbench doctor`` prints."""
    lines = [f"root: {'yes' if facts['root'] else 'NO: run as root (namespaces, links, cgroups)'}"]
    if not facts["root"]:
        return "\n".join(lines)
    lines.append("kernel features:")
    for name, present in facts["kernel_features"].items():
        mark = "yes" if present else "no "
        note = "" if present else f"  -> {FEATURE_ADVICE.get(name, '')}"
        lines.append(f"  {mark} {name}{note}")
    cgroups = facts["cgroups"]
    lines.append(f"cgroups: v{cgroups['version']}" + (
        f" ({', '.join(cgroups['controllers'])})" if cgroups["version"] == 1 else ""))
    lines.append("layers:")
    lines += [f"  {name:17} {state}" for name, state in facts["layers"].items()]
    lines += vm_lines(facts["virtual_machines"])
    lines.append("tools:")
    for tool in facts["tools"]:
        where = tool["path"] or f"MISSING ({tool['note']})"
        lines.append(f"  {tool['name']:17} {where}")
    return "\n".join(lines)


def vm_facts() -> dict[str, str]:
    """How the vm backends would run guests here: ``accel`` (kvm or tcg), ``reason``,
    ``kvm`` (what the KVM test did), or ``unavailable`` (why) -- a short boot test, cached
    until the kernel, QEMU or /dev/kvm change."""
    from vnetbench.backends.vm.accel import choose_accel

    try:
        choice = choose_accel()
    except VnetbenchError as exc:
        return {"unavailable": str(exc)}
    return {"accel": choice.accel, "reason": choice.reason, "kvm": choice.kvm}


def vm_lines(vm: Mapping[str, str]) -> list[str]:
    """``vm_facts`` as ``doctor`` prints them."""
    if "unavailable" in vm:
        return [f"virtual machines: unavailable: {vm['unavailable']}"]
    speed = ("" if vm["accel"] == "kvm" else
             "; figures from guests are for function, not speed: emulated CPU, not comparable "
             "with KVM or native")
    return [f"virtual machines: {vm['accel']} ({vm['reason']}; KVM: {vm['kvm']}){speed}"]
