"""One measuring run of a prepared workload, its samples and histograms labelled for the run.

The runner (a trial) and a session (a round of a rotating workload) both measure a workload
that ``prepare`` has set up and label what it returns with the trial's or round's labels: the
workload's own labels win only for ``workload`` when it names its members itself (a group of
workloads run at once, ``concurrent``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vnetbench.results.histogram import HistogramRecord
from vnetbench.results.model import Sample
from vnetbench.workloads.base import Workload

if TYPE_CHECKING:
    from vnetbench.workloads.labview import LabView


def labelled_run(workload: Workload, lab: LabView, raw_dir: Path, labels: dict[str, str]
                 ) -> tuple[list[Sample], list[HistogramRecord]]:
    """``workload.run`` in ``lab``: its samples and latency histograms with ``labels``."""
    keep = ("workload",) if workload.names_members else ()
    samples = [sample.with_labels(**_kept(labels, sample.labels, keep))
               for sample in workload.run(lab, raw_dir)]
    hists = list(workload.histograms)
    return samples, [h.with_labels(**_kept(labels, h.labels, keep)) for h in hists]


def _kept(labels: dict[str, str], own: dict[str, str], keep: tuple[str, ...]) -> dict[str, str]:
    """The trial's ``labels``, except those in ``keep`` the sample already has."""
    return {k: v for k, v in labels.items() if k not in keep or k not in own}
