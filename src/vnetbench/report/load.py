"""The report's "Latency under load" section: for an open-loop ``rr`` swept over offered
rates, each layer's curve (p50, p99 and the achieved rate at each offered rate, a rate it fell
behind at marked), its knee and capacity, and both as ratios to the baseline's with their
intervals (``results.load``), the knee of the p50 beside the p99's. The figure of p99
against the offered rate is the sweep figure's (one line per layer along ``rr.rate``)."""

from __future__ import annotations

import html
import math
import statistics
from collections.abc import Mapping, Sequence

from vnetbench.explain.run import ConditionWhy, explain_run
from vnetbench.report.tables import layer_sort_key
from vnetbench.report.why import HYPOTHESIS_SHORT, VERDICT_MARK, attribution_sentence
from vnetbench.results.load import (
    KNEE_FACTOR,
    OFFERED_LABEL,
    LoadCurve,
    LoadRatio,
    analyse_load,
    by_layer,
    capacities_found,
    knee_point,
    offered_label,
)
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario


def _rate(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x / 1000:.3g} k/s" if x >= 1000 else f"{x:.3g}/s"


def _ratio(r: LoadRatio | None) -> str:
    if r is None or r.ratio is None:
        return "-"
    interval = "" if r.low is None or r.high is None else f" [{r.low:.2f}, {r.high:.2f}]"
    censored = f" ({r.censored:.0%} of draws beyond the rates)" if r.censored >= 0.05 else ""
    return f"x{r.ratio:.2f}{interval}{censored}"


def _knee(c: LoadCurve, knee: float | None) -> str:
    return _rate(knee) if knee is not None else f"> {_rate(c.points[-1].offered)}"


def _curve_row(c: LoadCurve) -> str:
    cells = "".join(
        f"<td>{p.p50_us:.1f} / {p.p99_us:.1f} us, {_rate(p.achieved)}"
        + (" <b>behind</b>" if p.behind_share >= 0.5 else "") + "</td>" for p in c.points)
    return f"<tr><td>{html.escape(c.layer)}</td>{cells}</tr>"


def knee_why(curve: LoadCurve, samples: Sequence[Sample], scenario: RecordedScenario,
             environment: Mapping[str, object], baseline: str = "host") -> str:
    """Why the layer costs what it does at its knee (``knee_point``: the first load whose
    p99 reached the knee's multiple, else the highest): the CPU per transaction it adds over
    the baseline's at that load, by who spent it, and the studies' hypotheses tested there
    (``explain``); empty when that load has no evidence of both."""
    at = knee_point(curve)
    explained: Sequence[ConditionWhy] = explain_run(
        samples, scenario, environment, baseline=baseline,
        where={OFFERED_LABEL: offered_label(at.offered)})
    for why in explained:
        lw = why.layer(curve.layer)
        if lw is None or lw.cpu is None:
            continue
        where = "at its knee" if curve.knee is not None else "at the highest load"
        checks = "; ".join(f"{VERDICT_MARK[c.verdict]} {HYPOTHESIS_SHORT[c.hypothesis]}"
                           for c in lw.checks if c.hypothesis in HYPOTHESIS_SHORT)
        return (f"{where} ({_rate(at.offered)}): {attribution_sentence(lw.cpu)}"
                + (f"; {checks}" if checks else ""))
    return ""


def render_load(samples: Sequence[Sample], baseline: str = "host",
                scenario: RecordedScenario | None = None,
                environment: Mapping[str, object] | None = None) -> str:
    """The section's HTML (empty when no open-loop rr was measured at two rates or more);
    with the run's ``scenario`` and ``environment``, each layer's why at its knee."""
    curves, ratios = analyse_load(samples, baseline)
    if not curves:
        return ""
    esc = html.escape
    parts = []
    for config in sorted({c.config for c in curves}):
        mine = sorted((c for c in curves if c.config == config),
                      key=lambda c: layer_sort_key(c.layer))
        rates = sorted({p.offered for c in mine for p in c.points})
        rows = "".join(_curve_row(c) for c in mine if len(c.points) == len(rates))
        table = by_layer(ratios.get(config, []))
        why = {c.layer: knee_why(c, samples, scenario, environment, baseline)
               for c in mine if scenario is not None and environment is not None
               and c.layer != baseline}
        summary = "".join(
            f"<tr><td>{esc(c.layer)}</td><td>{esc(_knee(c, c.knee))}</td>"
            f"<td>{esc(_ratio(table.get(c.layer, {}).get('knee')))}</td>"
            f"<td>{esc(_knee(c, c.knee_p50))}</td>"
            f"<td>{esc(_ratio(table.get(c.layer, {}).get('knee-p50')))}</td>"
            f"<td>{'&ge; ' if c.kept_up else ''}{esc(_rate(c.capacity))}</td>"
            f"<td>{esc(_ratio(table.get(c.layer, {}).get('capacity')))}</td>"
            + (f"<td>{esc(why.get(c.layer, ''))}</td>" if why else "") + "</tr>"
            for c in mine)
        parts.append(
            (f"<h3>{esc(config)}</h3>" if config else "")
            + '<table class="detail"><thead><tr><th>layer</th><th>knee</th>'
            f"<th>knee / {esc(baseline)}</th><th>knee (p50)</th>"
            f"<th>knee (p50) / {esc(baseline)}</th><th>capacity</th><th>capacity / {esc(baseline)}"
            + ("</th><th>why (CPU per transaction over the baseline's at the same load)"
               if why else "")
            + f"</th></tr></thead><tbody>{summary}</tbody></table>"
            + '<table class="detail"><thead><tr><th>layer</th>'
            + "".join(f"<th>offered {esc(_rate(r))}</th>" for r in rates)
            + f"</tr></thead><tbody>{rows}</tbody></table>")
    return ('<section id="load"><h2>Latency under load</h2><p class="lead">An open loop: '
            "requests arrive at the offered rate whatever the replies, each one's latency "
            "counted from its arrival time. Per layer, the p50 / p99 and the achieved rate at "
            "each offered rate (medians over the repetitions; <b>behind</b>: the layer did not "
            f"keep up, so its latencies are a growing queue's); the knee is where the p99 first "
            f"reaches {KNEE_FACTOR:g} times its low-load value (its lowest p99 at the loads "
            "below), the knee (p50) the same rule on the p50 (a low-load p99 on a VM is "
            "often its wake-ups, which move the p99's knee; the p50's repeats), the capacity "
            "the highest achieved rate (&ge;: it kept up at the highest offered rate, so only a "
            "lower bound, with no ratio); ratios to the baseline with 95% bootstrap intervals."
            "</p>" + _capacities(samples, baseline) + "".join(parts) + "</section>")


def _capacities(samples: Sequence[Sample], baseline: str) -> str:
    """The baseline's capacities the offered loads are shares of (none: rates were given)."""
    found = capacities_found(samples)
    if not found:
        return ""
    said = "; ".join(
        f"{html.escape(where)}: {_rate(statistics.median(values))} (median of "
        f"{len(values)} runs, {_rate(min(values))} to {_rate(max(values))})"
        for where, values in sorted(found.items()))
    return (f"<p>The offered loads are shares of {html.escape(baseline)}'s capacity, found "
            "first in the run: the rate its path sustains as a closed loop over the same "
            f"flows, one request in flight on each. {said}.</p>")
