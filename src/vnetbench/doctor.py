"""``vnetbench doctor``: what this host can and cannot do, and what that means for a run."""

from __future__ import annotations

import os

from vnetbench.backends.registry import check_layer
from vnetbench.catalog import LAYERS
from vnetbench.cgroups import V1_CONTROLLERS, cgroup_version
from vnetbench.errors import VnetbenchError
from vnetbench.features import FEATURE_ADVICE, kernel_features, tool_statuses


def doctor_report() -> tuple[str, bool]:
    """(text, everything essential present)."""
    lines: list[str] = []
    root = os.geteuid() == 0
    lines.append(f"root: {'yes' if root else 'NO: run as root (namespaces, links, cgroups)'}")
    if not root:
        return "\n".join(lines), False
    features = kernel_features()
    lines.append("kernel features:")
    for name, present in features.items():
        mark = "yes" if present else "no "
        note = "" if present else f"  -> {FEATURE_ADVICE.get(name, '')}"
        lines.append(f"  {mark} {name}{note}")
    version = cgroup_version()
    ctrls = ", ".join(c for c in V1_CONTROLLERS if os.path.isdir(f"/sys/fs/cgroup/{c}"))
    lines.append(f"cgroups: v{version}" + (f" ({ctrls})" if version == 1 else ""))
    lines.append("layers:")
    for name, cls in LAYERS.items():
        try:
            check_layer(cls())
            state = "ok"
        except VnetbenchError as exc:
            state = f"unavailable: {exc}"
        lines.append(f"  {name:17} {state}")
    lines += vm_lines()
    lines.append("tools:")
    essential_ok = features.get("veth", False) and features.get("bridge", False)
    for tool in tool_statuses():
        where = tool.path or f"MISSING ({tool.note})"
        lines.append(f"  {tool.name:17} {where}")
        if tool.name in ("ip", "tc", "iptables-restore", "vnetbench-probe") and not tool.path:
            essential_ok = False
    return "\n".join(lines), essential_ok


def vm_lines() -> list[str]:
    """How the vm backends would run guests here: KVM or TCG, and why (a short boot test,
    cached until the kernel, QEMU or /dev/kvm change)."""
    from vnetbench.backends.vm.accel import choose_accel

    try:
        choice = choose_accel()
    except VnetbenchError as exc:
        return [f"virtual machines: unavailable: {exc}"]
    speed = ("" if choice.accel == "kvm" else
             "; figures from guests are for function, not speed: emulated CPU, not comparable "
             "with KVM or native")
    return [f"virtual machines: {choice.accel} ({choice.reason}; KVM: {choice.kvm}){speed}"]
