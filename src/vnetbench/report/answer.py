"""The answer a report gives on its first screen: one sentence per layer, computed from the
headline table, and a note where a layer's own path is not crossed.

A layer's sentence takes its numbers from the run: the time it adds to a round trip (the
median of the first latency workload the scenario lists) with the ratio and its 95%
interval, the CPU it adds per transaction of that workload, and the goodput ratio of a
stream; an amount whose difference the run did not call says so (``not resolved``, ``no
difference``), and the line's mark is the round trip's verdict. A path note comes from
facts, not a list of names: the layer's ``between_hosts`` (what only traffic between
emulated hosts crosses: a tunnel, an overlay) and the topology's placement
(``topology.host_of_node``): when the client and server of the configuration are on one
emulated host, that part of the layer is never crossed.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence

from vnetbench.lab.topology import host_of_node
from vnetbench.report.tables import Cell, Column, HeadlineTable, signed_us
from vnetbench.results.recorded import RecordedScenario

_NODE = re.compile(r"^n(\d+)$")
"""A node's name (``Node.name``: ``n<index>``), as the client and server labels carry it."""


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _node_index(name: str) -> int | None:
    found = _NODE.match(name)
    return int(found.group(1)) if found else None


def one_host(config: Mapping[str, str]) -> str:
    """Why the client and server of ``config`` share one emulated host, in words (empty
    when they do not, or when the configuration does not say)."""
    try:
        hosts = int(config.get("hosts", ""))
    except ValueError:
        return ""
    if hosts == 1:
        return "every node is on the one emulated host"
    client = _node_index(config.get("client", ""))
    server = _node_index(config.get("server", ""))
    if client is None or server is None or hosts < 1:
        return ""
    if host_of_node(client, hosts) == host_of_node(server, hosts):
        return (f"client n{client} and server n{server} are both on emulated host "
                f"{host_of_node(client, hosts)}")
    return ""


def path_note(layer: str, config: Mapping[str, str], parts: Mapping[str, str]) -> str:
    """``the WireGuard tunnel is never crossed here: every node is on the one emulated
    host`` for a layer whose part between hosts (``parts``: the run's,
    ``explain.facts.crossing_parts``) the configuration does not reach (empty otherwise)."""
    part = parts.get(layer, "")
    why = one_host(config) if part else ""
    return f"{part} is never crossed here: {why}" if why else ""


def path_notes(table: HeadlineTable, parts: Mapping[str, str]) -> dict[str, str]:
    """The layers of ``table`` whose own path its configuration does not cross, with why."""
    notes = {layer: path_note(layer, table.config, parts) for layer in table.layers}
    return {layer: note for layer, note in notes.items() if note}


def _first(table: HeadlineTable, metric: str, order: Sequence[str]) -> Column | None:
    """The column of ``metric`` of the first workload in ``order`` (the scenario's), else
    the table's first."""
    columns = [c for c in table.columns if c.metric == metric]
    ranked = sorted(columns, key=lambda c: order.index(c.workload) if c.workload in order
                    else len(order) + table.columns.index(c))
    return ranked[0] if ranked else None


def _interval(cell: Cell) -> str:
    assert cell.ratio is not None
    r = cell.ratio.ratio
    if math.isnan(r.ci.low):
        return f"&times;{r.value:.2f}"
    return f"&times;{r.value:.2f}, 95% CI {r.ci.low:.2f}&ndash;{r.ci.high:.2f}"


QUALIFIER = {"not resolved": ", not resolved", "same": ", no difference",
             "emulated": ", emulated CPU: not comparable"}
"""What follows an amount whose difference the run did not call (better/worse: nothing)."""


def _latency_clause(cell: Cell, col: Column, factor: float) -> str:
    """``+82.7 µs per round trip (rr p50 x9.07, 95% CI 3.74-10.34)``."""
    assert cell.ratio is not None
    where = f"{_esc(col.workload)} p50" if col.workload else "p50"
    return (f"{_esc(signed_us(cell.ratio.added))} per round trip"
            f"{QUALIFIER.get(cell.verdict(factor), '')} ({where} {_interval(cell)})")


def _cpu_clause(cell: Cell, factor: float) -> str:
    """``+83.7 µs CPU per transaction (x8.50)``."""
    assert cell.ratio is not None
    return (f"{_esc(signed_us(cell.ratio.added))} CPU per transaction"
            f"{QUALIFIER.get(cell.verdict(factor), '')} (&times;{cell.ratio.ratio.value:.2f})")


def _goodput_clause(cell: Cell, factor: float) -> str:
    """``goodput x0.20``."""
    assert cell.ratio is not None
    return (f"goodput &times;{cell.ratio.ratio.value:.2f}"
            f"{QUALIFIER.get(cell.verdict(factor), '')}")


def layer_sentences(table: HeadlineTable, scenario: RecordedScenario,
                    parts: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(layer, verdict of its round trip, HTML sentence) for every layer but the baseline,
    in the table's order (``parts``: each layer's part between hosts, ``path_notes``). The
    sentence is built from the cells of the table: nothing is said that the table does not
    hold."""
    order = [kind for kind, _ in scenario.workloads]
    latency = _first(table, "rtt_p50_us", order)
    cpu_col = None
    if latency is not None:
        cpu_col = next((c for c in table.columns if c.metric == "cpu_us_per_tx"
                        and c.workload == latency.workload), None)
    cpu_col = cpu_col or _first(table, "cpu_us_per_tx", order)
    goodput = _first(table, "goodput_bps", order)
    notes = path_notes(table, parts)
    out: list[tuple[str, str, str]] = []
    for layer in table.layers:
        if layer == table.baseline:
            continue
        clauses: list[str] = []
        verdict = ""
        if latency is not None and (cell := table.cells.get((layer, latency))) is not None:
            clauses.append(_latency_clause(cell, latency, table.factor))
            verdict = cell.verdict(table.factor)
        if cpu_col is not None and (cell := table.cells.get((layer, cpu_col))) is not None:
            clauses.append(_cpu_clause(cell, table.factor))
        if goodput is not None and (cell := table.cells.get((layer, goodput))) is not None:
            clauses.append(_goodput_clause(cell, table.factor))
        if not clauses:
            continue
        note = notes.get(layer)
        tail = f' <span class="note">(\u2020 {_esc(note)})</span>' if note else ""
        out.append((layer, verdict or "same",
                    f'<b class="layer" data-layer="{_esc(layer)}">{_esc(layer)}</b>: '
                    f"{'; '.join(clauses)}.{tail}"))
    return out
