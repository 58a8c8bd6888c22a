"""The lab's own settings that can decide a comparison, written on each sample so a verdict
can tell "the layer behaves as the study's system" from "the lab held both sides at a value
it was given".

    lab.rate_bps     the link's rate (``link.rate``): a stream at the cap measures the cap
    lab.rtt_us       twice the one-way delay between the sample's two hosts (``link.delay``,
                     or the ``link.pairs`` entry of its ``circuit``): a round trip across a
                     WAN delay measures the delay
    lab.jitter_us    the link's configured jitter (``link.jitter``): a stream's jitter across
                     a jittered link measures the configuration
    lab.bitrate_bps  the bit rate a workload offers (a UDP stream's ``bitrate``, a media
                     stream's, times ``streams`` for the total): a paced stream measures its
                     pace

A claim of no difference whose check names a ``bound`` (``model.Check``) is "set by the lab"
when both its layer's and its baseline's medians sit at that value, within ``SHARE`` of it
on either side (``at_bound``): a study's number copied into the lab (a rate from a chart's
axis, a delay from the table being checked) then comes back out, and agreement would be the
lab agreeing with itself. A claim of a difference is never set by the lab: a layer that
added what the study found would show above the configured value. ``reaches`` checks take
their level from these labels too (``level_bound``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from vnetbench.errors import VnetbenchError
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.scenario.model import LinkModel, Scenario
from vnetbench.scenario.sweep import expand
from vnetbench.workloads.base import Offer

RATE = "lab.rate_bps"
RTT = "lab.rtt_us"
JITTER = "lab.jitter_us"
BITRATE = "lab.bitrate_bps"
LABEL_OF = {"link.rate": RATE, "link.delay": RTT, "link.jitter": JITTER, "bitrate": BITRATE}
"""A check's ``bound`` -> the label carrying its value."""

SHARE = 0.85
"""A median sits at its bound when it lies within this share of it on either side (both
edges): TCP/IP and encapsulation headers take 3-9% of a rate-limited wire (VXLAN's 50 bytes
of 1500, TCP/IP's 52), jitter adds about 1 ms to a 17 ms round trip's p99."""


def at_bound(limit: float, value: float) -> bool:
    """``value`` (a median) is held at the lab's ``limit``: within ``SHARE`` of it, above
    and below (every setting has both edges)."""
    if not (math.isfinite(limit) and math.isfinite(value)) or limit <= 0 or value <= 0:
        return False
    return SHARE * limit <= value <= limit / SHARE


def with_bounds(samples: Sequence[Sample], scenario: RecordedScenario) -> list[Sample]:
    """``samples`` of a run labelled with the bounds its scenario (``run.json``'s, with its
    ``file``) sets; unchanged when the scenario no longer loads here."""
    try:
        sf = expand(scenario.without_file(), scenario.file or "<run scenario>")
    except (VnetbenchError, ValueError):
        return list(samples)
    offered = [_offers(point.scenario) for point in sf.points]
    out = []
    for s in samples:
        at = next((i for i, point in enumerate(sf.points)
                   if all(s.labels.get(k) == v for k, v in point.axes.items())), None)
        extra = _bounds(sf.points[at].scenario, offered[at], s.labels) if at is not None else {}
        out.append(s.with_labels(**extra) if extra else s)
    return out


WorkloadOffer = tuple[str, dict[str, str], Offer]
"""A workload of a sweep point: kind, variant labels, what it offers."""


def _offers(scenario: Scenario) -> list[WorkloadOffer]:
    out = []
    for kind, options in scenario.workload_options():
        out.append((kind, options.labels(), options.offer()))
    return out


def _bounds(scenario: Scenario, offers: list[WorkloadOffer], labels: Mapping[str, str]
            ) -> dict[str, str]:
    out: dict[str, str] = {}
    link = scenario.link
    if link.rate > 0:
        out[RATE] = f"{link.rate:g}"
    rtt = _round_trip_s(link, labels, scenario.hosts)
    if rtt > 0:
        out[RTT] = f"{rtt * 1e6:g}"
    if link.jitter > 0 and scenario.hosts >= 2:
        out[JITTER] = f"{link.jitter * 1e6:g}"
    bitrate = _offered(offers, labels)
    if bitrate > 0:
        out[BITRATE] = f"{bitrate:g}"
    return out


def _round_trip_s(link: LinkModel, labels: Mapping[str, str], hosts: int) -> float:
    """Twice the one-way delay between the sample's hosts: its ``circuit`` (``i-k``), else
    hosts 0 and 1 (a pair of nodes 0 and 1, placed round-robin); 0 on one host."""
    if hosts < 2:
        return 0.0
    ends = labels.get("circuit", "0-1").split("-")
    try:
        pair = frozenset(int(e) for e in ends)
    except ValueError:
        return 0.0
    for p in link.pairs:
        if frozenset(p.hosts) == pair:
            return 2 * p.delay
    return 2 * link.delay


def _offered(offers: list[WorkloadOffer], labels: Mapping[str, str]) -> float:
    """The bit rate the sample's workload offers (0: unpaced, or not one workload)."""
    found = set()
    for kind, own, offer in offers:
        if kind != labels.get("workload") or any(labels.get(k) != v for k, v in own.items()):
            continue
        if offer.protocol is not None and labels.get("protocol", offer.protocol) != offer.protocol:
            continue
        found.add(offer.bitrate_bps * (offer.summed_senders if "stream" not in labels else 1))
    return found.pop() if len(found) == 1 else 0.0
