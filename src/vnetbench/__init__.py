"""vnetbench: measure what a virtual network layer costs a distributed system.

Public API is small: `vnetbench.scenario` (load scenarios), `vnetbench.lab` (build a
virtual cluster and run things inside its nodes), `vnetbench.runner` (run a scenario), and
`vnetbench.load(run_dir, ...)` (runs as a pandas DataFrame, every label a typed column:
see `vnetbench.results.frame`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

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
    """
    # imported by name when called: the package itself depends on none of its modules, so
    # `import vnetbench` (which every CLI start does) stays free of pandas and pydantic
    frame = importlib.import_module("vnetbench.results.frame")
    sources: list[str | os.PathLike[str]] = []
    for item in run_dirs:
        if isinstance(item, str | os.PathLike):
            sources.append(item)
        else:
            sources.extend(item)
    if not sources:
        raise TypeError("vnetbench.load() needs at least one run directory")
    result: pd.DataFrame = frame.load_frame(sources)
    return result
