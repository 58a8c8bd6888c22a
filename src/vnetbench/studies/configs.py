"""Configurations of a run's samples, so that a finding's filter selects exactly one and two
configurations never meet in one ratio or one curve.

A configuration is what a sample's labels say about how it was measured: the workload's
variant labels (``placement``, ``direction``, ``protocol``, an MPI ``test``), sweep axes,
``hosts``/``nodes``, a collector's ``cgroup`` or ``cpu``. Labels that tell replicates apart
(``trial``, ``repetition``, the A/A group) are no part of it; labels that tell the members of
one trial apart (a media ``stream``, an ``interval``) count by their presence only, so a
stream's per-interval or per-stream samples never pool with its totals, while the members
themselves do. A label a sample lacks reads as ``""``: ``where: {stream: ""}`` pins the total.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from vnetbench.results.model import DESIGN_LABEL, PAIR_LABEL, Sample

REPLICATE_LABELS = frozenset({"trial", "repetition", "aa", "t", "layer", "cores", PAIR_LABEL,
                              DESIGN_LABEL})
"""Labels that vary between replicates of one configuration (and ``layer``, compared apart;
``cores``, derived from labels already in the key)."""
MEMBER_LABELS = frozenset({"interval", "stream", "rank", "node", "role", "kind", "flow"})
"""Labels that tell members of one trial apart: part of a configuration by presence only."""
DERIVED_PREFIX = "lab."
"""Labels the judging adds (``bounds``): facts of the configuration, never part of its key."""

Key = tuple[tuple[str, str], ...]


def matches(labels: Mapping[str, str], where: Mapping[str, str]) -> bool:
    """``labels`` carry every pair of ``where`` (``""`` matching an absent label)."""
    return all(labels.get(k, "") == v for k, v in where.items())


def config_key(labels: Mapping[str, str], drop: Iterable[str] = ()) -> Key:
    """The configuration ``labels`` describe, without the labels in ``drop``."""
    skip = set(drop)
    return tuple(sorted((k, "*" if k in MEMBER_LABELS else v) for k, v in labels.items()
                        if k not in REPLICATE_LABELS and k not in skip
                        and not k.startswith(DERIVED_PREFIX)))


def configurations(samples: Iterable[Sample], drop: Iterable[str] = ()
                   ) -> dict[Key, list[Sample]]:
    """``samples`` by configuration (``config_key``)."""
    skip = tuple(drop)
    out: dict[Key, list[Sample]] = {}
    for s in samples:
        out.setdefault(config_key(s.labels, skip), []).append(s)
    return out


def differing(keys: Sequence[Key]) -> str:
    """What tells ``keys`` apart: ``placement=client-host|in-layer``, one label per part."""
    maps = [dict(k) for k in keys]
    names = sorted({n for m in maps for n in m})
    parts = []
    for name in names:
        values = sorted({m.get(name, "") for m in maps})
        if len(values) > 1:
            parts.append(f"{name}={'|'.join(v or '(none)' for v in values)}")
    return ", ".join(parts) or "(identical labels)"


def pin_hint(keys: Sequence[Key]) -> str:
    """The refusal for a filter that selects several configurations."""
    return (f"the finding's filter selects {len(keys)} configurations ({differing(keys)}); "
            "a ratio or a curve pools none: pin one with where")
