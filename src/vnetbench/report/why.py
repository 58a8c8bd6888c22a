"""The report's answer to "why": a why cell beside each layer's headline ratios, and a section
with the breakdown figure, the attribution per workload, the devices crossed, the path's
facts and the studies' hypotheses tested on the run.

The numbers come from ``explain``; each attribution splits the headline's own difference
(the added p50 round trip, the added CPU per transaction or per Gbit/s, the goodput ratio)
and judges what its parts leave against the headline's noise floor, so nothing here can
disagree with the table beside it. A remainder beyond the floor is printed as unexplained.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

from vnetbench.explain.attribution import REST, Attribution, Part
from vnetbench.explain.breakdown import PathCost
from vnetbench.explain.facts import crossing_parts
from vnetbench.explain.hypotheses import CLAIMS, Check
from vnetbench.explain.profile import hot_functions
from vnetbench.explain.run import (
    CPU_METRICS,
    ROUND_TRIP_METRIC,
    THROUGHPUT_METRICS,
    ConditionWhy,
    LayerWhy,
    Measured,
    explain_run,
)
from vnetbench.report.answer import path_notes
from vnetbench.report.figures.breakdown import chosen
from vnetbench.report.tables import HeadlineTable, layer_sort_key
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.units import counted

SHORT = {"client": "client", "server": "server", "daemons": "daemons",
         "other nodes": "other nodes", REST: "kernel+other"}
"""A part's name in the why cell."""
HYPOTHESIS_SHORT = {"softirq_saturation": "a core saturated by softirq",
                    "drops_behind_retransmissions": "bridge drops behind retransmissions",
                    "forwarder_bound": "the forwarder's CPU bounds throughput"}
VERDICT_MARK = {"supported": "\u2714", "contradicted": "\u2718", "not testable": "?"}
_PRIORITY = {"supported": 0, "contradicted": 1, "not testable": 2}


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def headline_measured(table: HeadlineTable) -> dict[tuple[str, str, str], Measured]:
    """The headline's differences by (layer, workload, metric): added µs (or cores per
    Gbit/s) with the floor in the same unit; for a throughput, the ratio with its relative
    floor."""
    out: dict[tuple[str, str, str], Measured] = {}
    wanted = {ROUND_TRIP_METRIC, *CPU_METRICS.values(), *THROUGHPUT_METRICS.values()}
    for (layer, col), cell in table.cells.items():
        if cell.ratio is None or col.metric not in wanted:
            continue
        floor = table.floors[col].floor if col in table.floors else math.nan
        if col.metric in THROUGHPUT_METRICS.values():
            out[(layer, col.workload, col.metric)] = Measured(cell.ratio.ratio.value, floor)
        else:
            out[(layer, col.workload, col.metric)] = Measured(
                cell.ratio.added, floor * cell.ratio.baseline_median)
    return out


def explain_table(samples: Sequence[Sample], scenario: RecordedScenario,
                  environment: Mapping[str, object], table: HeadlineTable) -> list[ConditionWhy]:
    """The explanation of every workload of the headline table, at its configuration."""
    workloads = {c.workload for c in table.columns}
    return [why for why in explain_run(samples, scenario, environment, baseline=table.baseline,
                                       where=table.config, headline=headline_measured(table),
                                       never_crossed=path_notes(
                                           table, crossing_parts(environment)))
            if why.workload in workloads]


def distinct(explained: Sequence[ConditionWhy]) -> list[ConditionWhy]:
    """Each condition once (two headline configurations can both describe one), first
    kept."""
    seen = set()
    out = []
    for why in explained:
        if why.evidence.condition not in seen:
            seen.add(why.evidence.condition)
            out.append(why)
    return out


def _amount(value: float, attr: Attribution) -> str:
    if attr.unit.startswith("µs"):
        return f"{value:+.0f}\u00a0µs" if abs(value) >= 10 else f"{value:+.1f}\u00a0µs"
    return f"{value:+.2g}\u00a0cores/Gbps"


def _short(value: float, attr: Attribution) -> str:
    """A part in the why cell: ``+82µs``, or ``+0.47 cores`` per Gbit/s (the headline's CPU
    per Gbit/s column shows cores too)."""
    if attr.unit.startswith("µs"):
        return f"{value:+.0f}µs" if abs(value) >= 10 else f"{value:+.1f}µs"
    return f"{value:+.2g}\u00a0cores"


def resolved(part: Part) -> bool:
    """The part's 95% interval excludes zero (or it has none: one unit a side)."""
    if math.isnan(part.low) or math.isnan(part.high):
        return part.value != 0.0
    return part.low > 0.0 or part.high < 0.0


SMALL = 0.01
"""Parts smaller than this share of the baseline's own cost are not named in the why cell."""


def _top(attr: Attribution, base: float) -> str:
    """The resolved part that explains most (by size; at least ``SMALL`` of the baseline's
    cost ``base``), or that none is."""
    floor = SMALL * abs(base) if not math.isnan(base) else 0.0
    parts = sorted((p for p in attr.parts if not math.isnan(p.value) and resolved(p)
                    and abs(p.value) >= floor), key=lambda p: -abs(p.value))
    if not parts:
        return "within noise"
    best = parts[0]
    return f"{SHORT.get(best.name, best.name)} {_short(best.value, attr)}"


def _shown(explained: Sequence[ConditionWhy], order: Sequence[str]) -> list[ConditionWhy]:
    """The conditions the why cell speaks of, as the answer does: the first request/response
    workload (in the scenario's order) and the first stream; else the first workload."""
    ranked = sorted(explained, key=lambda w: (order.index(w.workload) if w.workload in order
                                              else len(order)))
    first_rr = next((w for w in ranked if chosen_kind(w) == "round trip"), None)
    first_stream = next((w for w in ranked if w.evidence.per == "gigabit"), None)
    shown = [w for w in (first_rr, first_stream) if w is not None]
    return shown or ranked[:1]  # an application (OLTP...): its CPU per transaction


def why_lines(explained: Sequence[ConditionWhy], layer: str,
              order: Sequence[str] = ()) -> list[str]:
    """The why cell of ``layer`` in plain text: for the first request/response workload and
    the first stream, the resolved part that explains most of the added time or CPU; then the
    studies' hypotheses the run supports for it."""
    lines = []
    for why in _shown(explained, order):
        attr = chosen(why, layer)
        if attr is not None:
            base = why.baseline.time if attr.quantity == "round trip" else why.baseline.cpu
            lines.append(f"{why.name}: {_top(attr, base)}")
    supported = {c.hypothesis for why in explained for lw in why.layers if lw.layer == layer
                 for c in lw.checks if c.verdict == "supported"}
    lines += [f"\u2714 {HYPOTHESIS_SHORT[h]}" for h in sorted(supported)]
    return lines


def why_cells(explained: Sequence[ConditionWhy], layers: Sequence[str],
              order: Sequence[str] = ()) -> dict[str, str]:
    """HTML of the why cell per layer (hover: every attribution in words)."""
    out = {}
    for layer in layers:
        lines = why_lines(explained, layer, order)
        detail = _hover(explained, layer)
        if lines:
            out[layer] = (f'<td class="why" title="{_esc(detail)}">'
                          + "<br>".join(_esc(line) for line in lines) + "</td>")
    return out


def _hover(explained: Sequence[ConditionWhy], layer: str) -> str:
    """Every attribution of ``layer`` in words (the cell's hover text)."""
    out = []
    for why in explained:
        lw = why.layer(layer)
        if lw is None:
            continue
        for attr in (lw.round_trip, lw.cpu):
            if attr is not None:
                out.append(f"{why.name} {attribution_sentence(attr)}")
    return "\n".join(out)


def attribution_sentence(attr: Attribution) -> str:
    """``round trip +21.6 µs = daemons +51 µs, client -17 µs, ...; remainder -11.6 µs
    (beyond the floor ±8.2 µs: unexplained)``."""
    parts = ", ".join(f"{p.title} {_amount(p.value, attr)}" for p in attr.parts
                      if p.value != 0.0)
    floor = "" if math.isnan(attr.floor) else f"\u00b1{abs(attr.floor):.3g}"
    state = ("within the noise floor " + floor if attr.within_floor
             else f"beyond the floor {floor}: unexplained" if floor else "no floor: unjudged")
    what = "round trip" if attr.quantity == "round trip" else "CPU"
    return (f"{what} {_amount(attr.measured, attr)}: {parts}; remainder "
            f"{_amount(attr.remainder, attr)} ({state})")


def _number(value: float, attr: Attribution) -> str:
    """A part in a table cell: its sign and value, the unit being in the header."""
    if attr.unit.startswith("µs"):
        return f"{value:+.0f}" if abs(value) >= 10 else f"{value:+.1f}"
    return f"{value:+.2g}"


def _cell(value: float | None, attr: Attribution | None, sign: str = "") -> str:
    if value is None or math.isnan(value) or attr is None:
        return '<td class="num">&ndash;</td>'
    text = _number(value, attr)
    if sign:
        text = sign + text.lstrip("+-")
    return f'<td class="num">{_esc(text)}</td>'


def _part(attr: Attribution | None, name: str) -> float | None:
    if attr is None:
        return None
    return next((p.value for p in attr.parts if p.name == name), None)


def _condition_table(why: ConditionWhy) -> str:
    """One workload: per layer the measured difference, its parts and remainder, the
    throughput's two factors, the machine's added cores (outside the lab's processes and by
    state), and the path's devices and losses."""
    per = "transaction" if why.evidence.per == "transaction" else "Gbit/s"
    kind = chosen_kind(why)
    unit = ("µs" if kind == "round trip" else "µs CPU"
            if why.evidence.per == "transaction" else "cores per Gbit/s")
    others = any(_part(chosen(why, lw.layer), "other nodes") for lw in why.layers)
    who = ["client", "server", "daemons", *(["other nodes"] if others else [])]
    lab_cpu = kind == "round trip"
    head = ("<tr><th>layer</th><th>measured</th>"
            + ("<th>of it CPU</th>" if lab_cpu else "")
            + "".join(f"<th>{_esc(w)}</th>" for w in who)
            + "<th>unexplained</th><th>floor</th>"
            '<th title="the throughput ratio = the lab\'s CPU per unit of work (native\'s '
            "over the layer's) x the lab's CPU kept busy (the layer's over native's)\">"
            "throughput = CPU/unit &times; busy</th>"
            '<th title="added cores busy while the layer ran, outside the lab\'s processes">'
            "outside the lab</th><th>softirq</th><th>system</th><th>user</th>"
            "<th>path: devices crossed (vs native), packets, losses</th></tr>")
    rows = [_baseline_row(why, len(who) + (5 if lab_cpu else 4))]
    for lw in sorted(why.layers, key=lambda lw: layer_sort_key(lw.layer)):
        attr = chosen(why, lw.layer)
        if attr is None:
            continue
        rest = None if attr.within_floor else attr.remainder
        state = lw.by_state
        rows.append(
            f'<tr><td><b>{_esc(lw.layer)}</b></td>' + _cell(attr.measured, attr)
            + (_cell(lw.cpu.measured if lw.cpu else None, attr) if lab_cpu else "")
            + "".join(_cell(_part(attr, n), attr) for n in who)
            + _cell(rest, attr)
            + _cell(None if math.isnan(attr.floor) else abs(attr.floor), attr, "\u00b1")
            + f'<td class="num wrap narrow">{_esc(_throughput_text(lw))}</td>'
            + _cell(lw.outside.value if lw.outside is not None else None, state)
            + "".join(_cell(_part(state, s), state) for s in ("softirq", "system", "user"))
            + f'<td class="wrap">{_esc(_path_text(lw.cost, why.baseline))}</td></tr>')
    what = ("the added p50 round trip (the headline's) and of it the lab's added CPU (the "
            "headline's CPU per transaction), split into the CPU each of the lab's processes "
            "added per transaction" if kind == "round trip" else
            "the CPU the lab added (the headline's), split by who spent it")
    return (f"<h3>{_esc(why.name)} <span class=at>{_esc(_condition_words(why))}</span></h3>"
            f'<p class="lead">Per {per}, in {_esc(unit)}: {_esc(what)}. Beside it the '
            "throughput ratio's two factors, and the machine's added cores busy (outside the "
            "lab's processes; softirq, system, user) while the layer ran.</p>"
            f'<div class="scroll"><table class="detail why-table"><thead>{head}</thead><tbody>'
            f'{"".join(rows)}</tbody></table></div>')


def _throughput_text(lw: LayerWhy) -> str:
    """``x0.042 = 0.046 x 0.92``: the throughput ratio and its two factors."""
    attr = lw.throughput
    if attr is None or len(attr.parts) != 2:
        return "\u2013"
    per_work, busy = (p.value for p in attr.parts)
    rest = "" if attr.within_floor or math.isnan(attr.remainder) else \
        f" \u00d7 {attr.remainder:.2g} unexplained"
    return (f"\u00d7{attr.measured:.2g} = {per_work:.2g} \u00d7 {busy:.2g}{rest}")


def chosen_kind(why: ConditionWhy) -> str:
    kinds = {a.quantity for lw in why.layers if (a := chosen(why, lw.layer)) is not None}
    return "round trip" if "round trip" in kinds else "CPU"


def _condition_words(why: ConditionWhy) -> str:
    labels = why.evidence.condition.as_dict()
    shown = {k: v for k, v in labels.items()
             if k in ("protocol", "direction", "placement", "nodes", "hosts") and v}
    design = {"interleaved": "interleaved rounds", "blocks": "paired trial blocks",
              "unpaired": "unpaired trials"}[why.evidence.design]
    n = len({u.pair or u.key for u in why.evidence.units})
    unit = "round" if why.evidence.design == "interleaved" else "trial"
    return (", ".join(f"{k} {v}" for k, v in shown.items()) + f"; {design}, "
            + counted(n, unit))


def _baseline_row(why: ConditionWhy, span: int) -> str:
    base = why.baseline
    scale_unit = " µs" if base.per == "transaction" else " cores per Gbit/s"
    who = " \u00b7 ".join(f"{SHORT.get(k, k)} {v:.3g}" for k, v in base.who.items() if v)
    state = (f"{base.busy_share:.0%} of the machine busy" if not math.isnan(base.busy_share)
             else "")
    return (f'<tr class="base"><td><b>{_esc(base.layer)}</b></td><td colspan="{span}">'
            f"{_esc(_time_words(base))}; CPU by who: {_esc(who)}{_esc(scale_unit)}</td>"
            f'<td colspan="4">{_esc(state)}</td>'
            f'<td class="wrap">{_esc(_path_text(base, None))}</td></tr>')


def _time_words(cost: PathCost) -> str:
    if math.isnan(cost.time):
        return "time not measured"
    if cost.per == "transaction":
        return f"{cost.time:.3g} µs per transaction"
    return f"{1 / cost.time:.3g} Gbit/s" if cost.time > 0 else ""


def _devices_text(cost: PathCost, base: PathCost | None) -> str:
    """``8 devices, 2.0 packets per transaction each; +4 on native's; 266 B per packet on
    the underlay``."""
    crossed = cost.crossed
    if not crossed:
        return "no device counters"
    per = "tx" if cost.per == "transaction" else "Gbit"
    packets = max(d.packets for d in crossed)
    text = f"{len(crossed)}"
    if base is not None and base.crossed:
        text += f" ({len(crossed) - len(base.crossed):+d})"
    text += f" devices, {packets:,.3g} packets/{per}"
    underlay = [d for d in crossed if d.device.startswith("u")]
    if underlay and not math.isnan(underlay[0].mean_packet):
        text += f", {underlay[0].mean_packet:,.0f} B/packet on the wire"
    return text


def _path_text(cost: PathCost, base: PathCost | None) -> str:
    return f"{_devices_text(cost, base)}; {_losses(cost)}"


def _losses(cost: PathCost) -> str:
    retrans = cost.tcp.get("tcp_retrans_segs")
    parts = []
    if retrans is not None:
        parts.append(f"{retrans:,.0f} retransmitted")
    parts.append(f"{cost.drops:,.0f} dropped on devices")
    socket = sum(cost.udp_drops.values())
    if socket:
        parts.append(f"{socket:,.0f} lost in UDP socket buffers")
    return ", ".join(parts)


def _facts_html(explained: Sequence[ConditionWhy]) -> str:
    """The path facts and every device crossed, per layer, behind a disclosure."""
    rows = []
    seen: set[str] = set()
    for why in explained:
        members: list[tuple[PathCost, LayerWhy | None]] = [(why.baseline, None)]
        members += [(lw.cost, lw) for lw in why.layers]
        for cost, lw in members:
            facts = lw.facts if lw is not None else why.baseline_facts
            devices = "; ".join(
                f"{d.role} {d.kind or '?'}{' ' + str(d.mtu) if d.mtu else ''}: "
                f"{d.rx_packets:,.3g}/{d.tx_packets:,.3g} packets rx/tx, "
                f"{d.mean_packet:,.0f} B each"
                + (f", {d.rx_drops:,.0f}/{d.tx_drops:,.0f} dropped" if d.rx_drops + d.tx_drops
                   else "") for d in cost.crossed)
            key = f"{why.name}/{cost.layer}"
            if key in seen:
                continue
            seen.add(key)
            rows.append(f"<tr><td>{_esc(why.name)}</td><td><b>{_esc(cost.layer)}</b></td>"
                        f"<td>{_esc(facts.summary())}</td><td>{_esc(devices)}</td></tr>")
    if not rows:
        return ""
    return ("<details><summary>Devices crossed and the path's facts (MTU, MSS, offloads, "
            f"congestion control): {counted(len(rows), 'row')}</summary>"
            '<table class="detail"><thead><tr><th>workload</th><th>layer</th><th>path</th>'
            "<th>devices crossed: per transaction or per Gbit, each way</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></details>")


def pick(checks: Sequence[Check]) -> Check:
    """The check shown for a layer and hypothesis: a supported one, else a contradicted
    one, else one not testable (the first of its kind in workload order)."""
    return min(checks, key=lambda c: _PRIORITY[c.verdict])


def hypotheses_html(explained: Sequence[ConditionWhy]) -> str:
    """The studies' hypotheses: per hypothesis each layer's verdict (the strongest over its
    workloads, ``pick``) and the numbers of the deciding one in a line; every layer's and
    workload's numbers behind a disclosure."""
    by: dict[tuple[str, str], list[Check]] = {}
    for why in explained:
        for lw in why.layers:
            for check in lw.checks:
                by.setdefault((check.hypothesis, check.layer), []).append(check)
    if not by:
        return ""
    items = []
    for hypothesis, (study, claim) in CLAIMS.items():
        layers = sorted({la for h, la in by if h == hypothesis}, key=layer_sort_key)
        if not layers:
            continue
        shown = [pick(by[(hypothesis, layer)]) for layer in layers]
        chips = " ".join(f'<span class="verdict {c.verdict.replace(" ", "-")}" '
                         f'title="{_esc(c.workload)}: {_esc(c.numbers)}">'
                         f"{VERDICT_MARK[c.verdict]} {_esc(c.layer)} {_esc(c.verdict)}</span>"
                         for c in shown)
        lead = pick(shown)
        every = "".join(f'<li><span class="verdict {c.verdict.replace(" ", "-")}">'
                        f"{VERDICT_MARK[c.verdict]} {_esc(c.verdict)}</span> "
                        f"<b>{_esc(c.layer)}</b> ({_esc(c.workload)}): {_esc(c.numbers)}</li>"
                        for layer in layers for c in by[(hypothesis, layer)])
        items.append(f"<li><b>{_esc(claim)}</b> (study {_esc(study)}): {chips}"
                     f'<div class="lead-check"><b>{_esc(lead.layer)}</b> '
                     f"({_esc(lead.workload)}): {_esc(lead.numbers)}</div>"
                     f"<details><summary>every layer and workload "
                     f"({len([1 for la in layers for _ in by[(hypothesis, la)]])})</summary>"
                     f'<ul class="checks">{every}</ul></details></li>')
    return ('<h3>The studies\' hypotheses, tested on this run</h3><ul class="hypotheses">'
            + "".join(items) + "</ul>")


def profiles_html(samples: Sequence[Sample], baseline: str,
                  where: Mapping[str, str] | None) -> str:
    """The hot functions of each layer's profiled trials beside the baseline's (empty when
    the run recorded no profile: ``$VNETBENCH_PERF`` unset)."""
    found = hot_functions(samples, baseline, where)
    if not found:
        return ""
    rows = []
    for (layer, workload), fns in sorted(found.items(),
                                         key=lambda kv: (kv[0][1], layer_sort_key(kv[0][0]))):
        text = "; ".join(f"{f.function} {f.share:.1%}"
                         + ("" if layer == baseline else f" ({f.added:+.1%})")
                         + ("" if f.kernel else f" [{f.dso}]") for f in fns)
        rows.append(f"<tr><td>{_esc(workload)}</td><td><b>{_esc(layer)}</b></td>"
                    f"<td>{_esc(text)}</td></tr>")
    return ("<details><summary>Hot functions per layer (perf record -e cpu-clock, per trial, "
            "machine-wide; share of the busy samples, median over trials, and the change from "
            f"{_esc(baseline)}'s)</summary>"
            '<p class="lead">A software clock cannot sample code running with interrupts '
            "off: its time shows where they are turned back on (_raw_spin_unlock_irqrestore, "
            "handle_softirqs). Functions of other programs on the machine show too.</p>"
            '<table class="detail"><thead><tr><th>workload</th><th>layer</th>'
            "<th>functions</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></details>")


def section_extra(explained: Sequence[ConditionWhy], profiles: str = "") -> str:
    """What follows the breakdown figure: the tables, the facts, the hypotheses and the
    profiles."""
    shown = [why for why in explained if why.layers]
    tables = ("<details><summary>The breakdown per workload: "
              + _esc(", ".join(why.name for why in shown))
              + " (measured difference, its parts and what they leave, the noise floor, the "
              "throughput's factors, the machine's cores by state, the path)</summary>"
              + "".join(_condition_table(why) for why in shown) + "</details>"
              if shown else "")
    return ('<p class="lead">CPU by who: the server\'s node cgroup, the client\'s (in an '
            "interleaved run the shared client's own usage), the layer's daemons "
            "(wireguard-go, the userspace forwarder, the link emulator): the lab's processes, "
            "with the kernel work done in their time. With one transaction in flight, the CPU "
            "they add per transaction lies on its round trip; what they leave of the added "
            "time is kernel work outside them (softirq on an idle core, ksoftirqd) and waiting "
            "(wake-ups, queues) when positive, work done in parallel when negative. The "
            "machine's CPU is compared in cores busy while each path ran, so the rest of the "
            "machine's load cancels between a layer and the baseline measured beside it.</p>"
            + tables + hypotheses_html(explained) + _facts_html(explained) + profiles)
