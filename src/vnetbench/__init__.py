"""vnetbench: measure what a virtual network layer costs a distributed system.

Public API is small: `vnetbench.scenario.model` (load scenarios), `vnetbench.backends.lab` (build a
virtual cluster and run things inside its nodes), `vnetbench.run.runner` (run a scenario), and
`vnetbench.load(run_dir, ...)` (runs as a pandas DataFrame, every label a typed column:
see `vnetbench.results.frame`) and `vnetbench.load_histograms(run_dir, ...)` (their latency
histograms, one row per bucket, labelled alike).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__version__ = "0.1.0"


def load(*run_dirs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> pd.DataFrame:
    """The samples of one or more run directories as a pandas DataFrame: one row per sample,
    columns ``run_id``, ``metric``, ``value``, ``unit``, ``t_ns`` and one typed column per
    label (sweep axes included; numbers as numbers, unit axes in their base unit, listed in
    ``frame.attrs["units"]``). Give directories as arguments or as one list::

        df = vnetbench.load("results/2026-...-quick-ab12")
        df = vnetbench.load(["results/a", "results/b"])
        df = vnetbench.load("history.db")  # every run of a history store
    """
    # imported by name when called: the package itself depends on none of its modules, so
    # `import vnetbench` (which every CLI start does) stays free of pandas and pydantic
    frame = importlib.import_module("vnetbench.results.frame")
    result: pd.DataFrame = frame.load_frame(_with_stores(_sources(run_dirs, "load")),
                                            _unit_kinds)
    return result


def load_histograms(*run_dirs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
                    ) -> pd.DataFrame:
    """The latency histograms of one or more run directories (the probe's HDR buckets, one
    histogram per trial or interleaved slice) as a pandas DataFrame, one row per bucket:
    ``run_id``, ``metric`` (``rtt_us``, ``sync_us``...), ``histogram`` (its number within its
    run), ``value`` (the bucket's value in ``unit``, µs), ``count`` (int), ``unit``, and one
    typed column per label as in :func:`load`. Merging trials is adding counts::

        h = vnetbench.load_histograms("results/2026-...-quick-ab12")
        rtt = h[h.metric == "rtt_us"].groupby(["layer", "value"])["count"].sum()
    """
    frame = importlib.import_module("vnetbench.results.frame")
    result: pd.DataFrame = frame.load_histogram_frame(_sources(run_dirs, "load_histograms"),
                                                      _unit_kinds)
    return result


def _unit_kinds() -> dict[str, str]:
    """Label name -> unit kind of every scenario key and workload option with a unit."""
    schema = importlib.import_module("vnetbench.scenario.schema")
    kinds: dict[str, str] = schema.label_unit_kinds()
    return kinds


def _with_stores(sources: list[str | os.PathLike[str]]) -> list[Any]:
    """``sources`` with each history store (``vnetbench history``) replaced by its runs."""
    out: list[Any] = []
    for source in sources:
        if not os.path.isfile(source):
            out.append(source)
            continue
        store = importlib.import_module("vnetbench.history.store")
        if not store.is_store(source):
            out.append(source)  # load_run names what is wrong with it
            continue
        opened = store.HistoryStore.open(source, create=False)
        try:
            out += list(opened.run_data())
        finally:
            opened.close()
    return out


def _sources(run_dirs: tuple[str | os.PathLike[str] | Iterable[str | os.PathLike[str]], ...],
             name: str) -> list[str | os.PathLike[str]]:
    sources: list[str | os.PathLike[str]] = []
    for item in run_dirs:
        if isinstance(item, str | os.PathLike):
            sources.append(item)
        else:
            sources.extend(item)
    if not sources:
        raise TypeError(f"vnetbench.{name}() needs at least one run directory")
    return sources
