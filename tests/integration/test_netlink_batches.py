"""The lab's ``ip``/``bridge`` lines carried out over netlink (``vnetbench.host.iplines``) leave the
kernel exactly as the ``ip -batch`` processes do: every interface (kind, its options, MTU,
master, flags), address, route and VXLAN flood entry of every lab namespace compared, layer
by layer, with the same lab built the old way; and a line the kernel refuses is named."""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from vnetbench.backends.catalog import LAYERS
from vnetbench.backends.lab import Lab, open_lab
from vnetbench.errors import LabError
from vnetbench.host import kernel
from vnetbench.host.features import kernel_features
from vnetbench.host.netns import NETNS_DIR, delete_netns, in_netns, read_in_netns
from vnetbench.host.state import root_networks
from vnetbench.lab.plan import IpBatch
from vnetbench.lab.spec import LabSpec

pytestmark = pytest.mark.root

LAYERS_COMPARED = ("bridge", "routed", "vxlan", "macvlan", "nat")
VOLATILE = re.compile(r"timer|_id$|^root_port$|^topology_change|^address$|^gso|^gro|^tso|"
                      r"^num_|^parentbus|^parentdev|^link_netnsid|^min_mtu|^max_mtu|^mac$")
"""Fields that differ between two builds of the same lab (random MACs, timers, ids)."""


def _ip_json(netns: str, *args: str) -> list[dict[str, Any]]:
    out = subprocess.run(["ip", "-n", netns, "-j", *args], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out) if out.strip() else []


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in sorted(value.items()) if not VOLATILE.search(k)}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def kernel_state(lab: Lab) -> dict[str, Any]:
    """Links, addresses, routes and FDB entries of every lab namespace, with the run's
    prefix and address block replaced so two runs compare."""
    state: dict[str, Any] = {}
    for ns in lab.namespaces():
        links = [{k: v for k, v in link.items() if k in ("ifname", "mtu", "flags", "master",
                                                            "link", "linkinfo", "link_type")}
                 for link in _ip_json(ns, "-d", "link", "show")]
        addrs = [(a["ifname"], [(i["local"], i["prefixlen"], i.get("scope"), i.get("broadcast"))
                                for i in a.get("addr_info", [])])
                 for a in _ip_json(ns, "addr", "show")]
        routes = _ip_json(ns, "route", "show", "table", "all")
        fdb = json.loads(subprocess.run(["bridge", "-n", ns, "-j", "fdb", "show"],
                                        capture_output=True, text=True, check=True).stdout or "[]")
        fdb = [e for e in fdb if e.get("dst") and e.get("state") == "permanent"]  # ours
        state[ns] = {"links": _clean(sorted(links, key=lambda x: x["ifname"])),
                     "addrs": addrs, "routes": _clean(routes), "fdb": _clean(fdb)}
    text = json.dumps(state, sort_keys=True)
    text = text.replace(lab.prefix, "PFX").replace(lab.topo.addresses.net + ".", "NET.")
    return dict(json.loads(text))


@pytest.mark.parametrize("layer", LAYERS_COMPARED)
def test_netlink_builds_what_ip_batch_builds(layer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if not all(kernel_features().get(f) for f in LAYERS[layer].requires):
        pytest.skip(f"{layer} unsupported on this kernel")
    with open_lab(LabSpec(layer, hosts=2, nodes=4)) as lab:
        ours = kernel_state(lab)
    with monkeypatch.context() as m:  # the same lab, every batch by an `ip` process
        m.setattr(kernel, "compile_batch", lambda tool, lines: None)
        m.setattr(kernel, "created_namespaces", lambda action: None)
        with open_lab(LabSpec(layer, hosts=2, nodes=4)) as lab:
            theirs = kernel_state(lab)
    assert ours.keys() == theirs.keys()
    for ns in ours:
        assert ours[ns] == theirs[ns], ns
    assert any(e for s in ours.values() for e in s["fdb"]) == (layer == "vxlan")


def test_a_refused_line_is_named_and_nothing_is_left() -> None:
    with open_lab(LabSpec("bridge", hosts=1, nodes=1)) as lab:
        ns = lab.names.node_ns(0)
        with pytest.raises(LabError) as info:
            kernel.apply_batch(IpBatch(ns, ("link set lo up", "route add 10.99.0.0/16 via "
                                                              "10.98.0.1")))
        assert "route add 10.99.0.0/16 via 10.98.0.1" in str(info.value)
        assert ns in str(info.value)
        names = lab.namespaces()
    assert not [n for n in names if (NETNS_DIR / n).exists()]


def _ip_networks(ns: str) -> set[str]:
    """What ``state.root_networks`` used to ask ``ip`` (routes of every table, addresses)."""
    nets = set()
    for entry in _ip_json(ns, "-4", "route", "show", "table", "all"):
        if entry.get("dst") and entry["dst"] != "default":
            nets.add(str(ipaddress.ip_network(entry["dst"], strict=False)))
    for entry in _ip_json(ns, "-4", "addr"):
        for a in entry.get("addr_info", []):
            nets.add(str(ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}", strict=False)))
    return nets


def test_the_netlink_dump_lists_what_ip_lists() -> None:
    """The networks a lab must not overlap, read over rtnetlink, are those ``ip`` shows: in a
    lab host's namespace (routes of the main and local tables, addresses, a route via a
    gateway) and in the root namespace (``state.root_networks``)."""
    with open_lab(LabSpec("bridge", hosts=2, nodes=2)) as lab:
        ns = lab.names.host_ns(0)
        found = in_netns(ns, root_networks)
        assert {str(n) for n in found} == _ip_networks(ns)
        assert ipaddress.ip_network(lab.topo.addresses.host_subnet(1)) in found  # via gw
    assert {str(n) for n in root_networks()} == _ip_networks_root()


def _ip_networks_root() -> set[str]:
    nets = set()
    for argv in (["ip", "-4", "-j", "route", "show", "table", "all"], ["ip", "-4", "-j", "addr"]):
        for entry in json.loads(subprocess.run(argv, capture_output=True, text=True,
                                               check=True).stdout or "[]"):
            dests = [entry.get("dst")] if "dst" in entry else [
                f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", [])]
            nets |= {str(ipaddress.ip_network(d, strict=False)) for d in dests
                     if d and d != "default"}
    return nets


def test_a_namespace_deleted_in_process_is_gone() -> None:
    """``netns.delete_netns`` does what ``ip netns del`` does: the name is gone, and the
    kernel frees the namespace with its links (a veth peer left in another one goes too)."""
    with open_lab(LabSpec("bridge", hosts=1, nodes=2)) as lab:
        node, host = lab.names.node_ns(0), lab.names.host_ns(0)
        veth = lab.names.veth_host(0)

        def host_links() -> str:
            return read_in_netns(host, "net/dev")

        assert veth in host_links()
        delete_netns(node)
        assert not (NETNS_DIR / node).exists()
        assert node not in {line.split()[1].rsplit("/", 1)[-1]
                            for line in Path("/proc/mounts").read_text().splitlines()
                            if "/run/netns/" in line}
        deadline = time.monotonic() + 10
        while veth in host_links() and time.monotonic() < deadline:
            time.sleep(0.01)  # the kernel frees a namespace in the background
        assert veth not in host_links()
        with pytest.raises(FileNotFoundError):
            delete_netns(node)
    assert not (NETNS_DIR / host).exists()  # teardown deletes the rest (the gone one too)
