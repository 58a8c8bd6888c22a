"""``vnetbench clean --kubernetes CONTEXT``: what killed runs of this machine left in a cluster.

Everything a Kubernetes lab creates lives in its namespace ``vnb<id>``, labelled with the run
and this machine (``manifests``). Cleaning lists the namespaces vnetbench manages and deletes
those made by this machine (its hostname and, where the namespace has one, its machine id's
hash: two machines sharing a hostname are told apart) whose run is no longer alive here
(waiting until each is gone);
a live run's namespace is never touched, and another machine's is left to that machine
(named in the output). Nothing outside those namespaces is ever created, so nothing else is
removed.
"""

from __future__ import annotations

import os

from vnetbench.backends.kubernetes import manifests
from vnetbench.backends.kubernetes.backend import delete_namespace
from vnetbench.backends.kubernetes.kubectl import Kubectl, find_kubectl
from vnetbench.errors import VnetbenchError
from vnetbench.host.cleaned import CleanResult


def live_runs() -> set[str]:
    """Short ids of this machine's runs that are still going."""
    from vnetbench.host.state import all_states
    return {s.short_id for s in all_states() if s.owner_alive()}


def clean_clusters(contexts: list[str], kubeconfig: str | None = None) -> CleanResult:
    """``vnetbench clean --kubernetes``: every context's killed runs (``clean_cluster``); a
    cluster that cannot be listed, or a namespace that would not go, is a failure line (it
    may still hold a killed run's objects)."""
    result = CleanResult()
    for context in contexts:
        try:
            result.done += clean_cluster(context, kubeconfig, result.failed)
        except VnetbenchError as exc:
            result.failed.append(f"cluster of context {context} not cleaned: {exc}")
    return result


def clean_cluster(context: str, kubeconfig: str | None = None,
                  failed: list[str] | None = None) -> list[str]:
    """Delete killed runs' namespaces in the cluster of ``context``; a line per namespace
    deleted or left alone, one in ``failed`` per namespace that would not go (VnetbenchError
    when the cluster cannot be listed)."""
    kubeconfig = os.path.expanduser(kubeconfig) if kubeconfig else None
    kubectl = Kubectl(find_kubectl(), kubeconfig, context)
    listed = kubectl.objects(["get", "namespaces", "-l", f"{manifests.MANAGED_BY}=vnetbench"])
    me, machine, live = manifests.host_label(), manifests.machine_label(), live_runs()
    done: list[str] = []
    for ns in listed.get("items", []):
        name = ns.get("metadata", {}).get("name", "")
        labels = ns.get("metadata", {}).get("labels", {})
        run, host = labels.get(manifests.RUN, ""), labels.get(manifests.HOST, "")
        if name != f"vnb{run}":
            continue  # not one of ours after all
        if host != me:
            done.append(f"left namespace {name}: made by vnetbench on {host or 'another machine'}"
                        " (clean it there)")
            continue
        theirs = labels.get(manifests.MACHINE, "")
        if theirs and theirs != machine:
            done.append(f"left namespace {name}: made by vnetbench on another machine named "
                        f"{host} (machine {theirs}; clean it there)")
            continue
        if run in live:
            continue
        try:
            if delete_namespace(kubectl, name, run):
                done.append(f"deleted namespace {name} of {kubectl.cluster} (killed run {run})")
        except VnetbenchError as exc:
            (failed if failed is not None else done).append(
                f"namespace {name} of {kubectl.cluster} not deleted: {exc}")
    return done
