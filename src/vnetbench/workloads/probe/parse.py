"""Pure parsers for ``vnetbench-probe`` output (JSON lines) into typed results and Samples.

The probe prints ``start``, ``interval``, ``end`` and ``error`` events, one JSON object per
line (see ``probe/src/client.rs``). :func:`parse_output` turns that text into a
:class:`ProbeResult` (an ``error`` event or a missing ``end`` event raises WorkloadError with
the probe's message); :func:`to_samples` turns a result into one Sample per statistic:
``rtt_p50_us``, ``tps``, ``goodput_bps``, ``send_gap_p50_us``, ``recv_gap_dev_p99_us``,
``sync_p50_us``, per-stream media ``jitter_us`` / ``bitrate_bps`` / ``loss`` (label
``stream``), stream ``goodput_min_interval_bps`` / ``goodput_max_interval_bps``, the
per-interval time series (each full interval's value, label ``interval``: its number from 0):
``goodput_interval_bps`` (stream), ``tps_interval``, ``rtt_p50_interval_us`` and
``rtt_p99_interval_us`` (rr, crr), ``bitrate_interval_bps`` (media), and ``cpu_user_s`` /
``cpu_sys_s`` for every mode; an open-loop rr adds ``offered_tps``, ``achieved_share``,
``unanswered``, ``behind`` (1: fewer than 95 % of the requests scheduled in the window were
answered in it),
``service_p50_us``... (from the actual write) and ``send_late_p50_us``... (how late the
writes left). :func:`histogram_records` turns the latency
histograms of the ``end`` event (the ``"hist"`` beside a summary: ``rtt_us``, ``sync_us``,
``send_gap_us``, ``recv_gap_us``) into HistogramRecords, so percentiles can be computed from
histograms merged across trials. No I/O, no processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vnetbench.errors import WorkloadError
from vnetbench.results.histogram import UNIT, HistogramRecord, LatencyHistogram
from vnetbench.results.model import Sample
from vnetbench.workloads.jsonlines import json_objects

STAT_KEYS: tuple[str, ...] = (
    "min", "mean", "stddev", "p1", "p25", "p50", "p75", "p90", "p99", "p999", "max",
)
"""The keys of every latency distribution object (values in microseconds)."""

MODES: tuple[str, ...] = ("rr", "crr", "stream", "gaps", "barrier", "media")


@dataclass(frozen=True)
class LatencyStats:
    """A distribution summary in microseconds."""

    min: float
    mean: float
    stddev: float
    p1: float
    p25: float
    p50: float
    p75: float
    p90: float
    p99: float
    p999: float
    max: float

    @staticmethod
    def from_dict(data: object, what: str = "distribution") -> LatencyStats:
        """Parse ``{"min":..,"mean":..,...}`` (other keys such as ``"hist"`` are ignored);
        WorkloadError if a key is missing."""
        if not isinstance(data, dict):
            raise WorkloadError(f"probe output: {what} is not an object: {data!r}")
        missing = [k for k in STAT_KEYS if not isinstance(data.get(k), int | float)]
        if missing:
            raise WorkloadError(f"probe output: {what} lacks {', '.join(missing)}")
        return LatencyStats(**{k: float(data[k]) for k in STAT_KEYS})

    def as_dict(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in STAT_KEYS}


@dataclass(frozen=True)
class MediaStream:
    """One media stream's delivery as the client saw it."""

    stream: int
    sent: int
    received: int
    lost: int
    loss: float
    bitrate_bps: float
    jitter_us: float


@dataclass(frozen=True)
class ProbeResult:
    """Everything one probe run printed, typed where it matters."""

    mode: str
    start: dict[str, Any]
    end: dict[str, Any]
    intervals: list[dict[str, Any]] = field(default_factory=list)

    @property
    def t_ns(self) -> int:
        return int(self.end.get("t_ns", 0))

    @property
    def cpu_user_s(self) -> float:
        return float(self.end.get("cpu_user_s", 0.0))

    @property
    def cpu_sys_s(self) -> float:
        return float(self.end.get("cpu_sys_s", 0.0))

    def number(self, key: str) -> float:
        """A numeric field of the ``end`` event; WorkloadError if absent."""
        value = self.end.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise WorkloadError(f"probe {self.mode}: end event has no number {key!r}")
        return float(value)

    def stats(self, key: str) -> LatencyStats:
        """A distribution of the ``end`` event (``rtt_us``, ``sync_us``, ``recv_gap_us``...)."""
        return LatencyStats.from_dict(self.end.get(key), f"{self.mode} {key}")

    def histogram(self, key: str) -> LatencyHistogram | None:
        """The histogram beside a distribution of the ``end`` event; None if it has none."""
        value = self.end.get(key)
        if not isinstance(value, dict) or "hist" not in value:
            return None
        try:
            return LatencyHistogram.from_buckets_ns(value["hist"])
        except WorkloadError as exc:
            raise WorkloadError(f"probe {self.mode} {key}: {exc}") from exc

    @property
    def rtt(self) -> LatencyStats:
        return self.stats("rtt_us")

    @property
    def media_streams(self) -> list[MediaStream]:
        out: list[MediaStream] = []
        for raw in self.end.get("streams", []) if self.mode == "media" else []:
            if not isinstance(raw, dict):
                raise WorkloadError(f"probe media: bad stream entry {raw!r}")
            out.append(MediaStream(
                stream=int(raw["stream"]), sent=int(raw["sent"]), received=int(raw["received"]),
                lost=int(raw["lost"]), loss=float(raw["loss"]),
                bitrate_bps=float(raw["bitrate_bps"]), jitter_us=float(raw["jitter_us"]),
            ))
        return out


def parse_events(text: str) -> list[dict[str, Any]]:
    """The JSON objects of the output, in order; other lines (stray stderr) are skipped."""
    return [event for event in json_objects(text) if isinstance(event.get("event"), str)]


def _tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def parse_output(text: str, mode: str | None = None, stderr: str = "") -> ProbeResult:
    """The result of one probe run; WorkloadError on an ``error`` event or no ``end`` event."""
    events = parse_events(text)
    for event in events:
        if event["event"] == "error":
            message = str(event.get("message", "unknown error"))
            raise WorkloadError(f"vnetbench-probe {event.get('mode', mode or '?')}: {message}")
    ends = [e for e in events if e["event"] == "end"]
    if not ends:
        detail = _tail(stderr) or _tail(text) or "no output"
        raise WorkloadError(
            f"vnetbench-probe {mode or '?'}: no end event (did it crash or time out?): {detail}"
        )
    end = ends[-1]
    found = str(end.get("mode", mode or ""))
    if mode is not None and found != mode:
        raise WorkloadError(f"vnetbench-probe: expected {mode} output, got {found}")
    starts = [e for e in events if e["event"] == "start"]
    intervals = [e for e in events if e["event"] == "interval"]
    return ProbeResult(mode=found, start=starts[0] if starts else {}, end=end,
                       intervals=intervals)


def _stat_samples(prefix: str, stats: LatencyStats, labels: dict[str, str],
                  t_ns: int) -> list[Sample]:
    return [Sample(f"{prefix}_{k}_us", v, "us", dict(labels), t_ns)
            for k, v in stats.as_dict().items()]


# (end-event key, metric name, unit) of plain numbers, per mode; absent keys are skipped
_NUMBERS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "rr": (("tps", "tps", "1/s"), ("transactions", "transactions", "count"),
           ("lost", "lost", "count"), ("offered_tps", "offered_tps", "1/s"),
           ("achieved_share", "achieved_share", "fraction"),
           ("unanswered", "unanswered", "count")),
    "crr": (("tps", "tps", "1/s"), ("transactions", "transactions", "count"),
            ("connect_errors", "connect_errors", "count")),
    "stream": (("goodput_bps", "goodput_bps", "bps"), ("bytes", "bytes", "B"),
               ("retransmits", "retransmits", "count"), ("lost", "lost", "count"),
               ("loss", "loss", "fraction")),
    "gaps": (("sent", "sent", "count"), ("received", "received", "count"),
             ("lost", "lost", "count"), ("loss", "loss", "fraction")),
    "barrier": (("rounds", "rounds", "count"), ("rounds_per_s", "rounds_per_s", "1/s")),
    "media": (("bitrate_bps", "total_bitrate_bps", "bps"), ("loss", "total_loss", "fraction"),
              ("lost", "total_lost", "count"), ("jitter_us", "mean_jitter_us", "us")),
}

# (end-event key, metric prefix) of distributions, per mode
_DISTRIBUTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "rr": (("rtt_us", "rtt"), ("service_us", "service"), ("send_late_us", "send_late")),
    "crr": (("rtt_us", "rtt"),),
    "stream": (),
    "gaps": (("send_gap_us", "send_gap"), ("send_gap_dev_us", "send_gap_dev"),
             ("recv_gap_us", "recv_gap"), ("recv_gap_dev_us", "recv_gap_dev")),
    "barrier": (("sync_us", "sync"),),
    "media": (),
}


INTERVAL_MIN_FRACTION = 0.8
"""Interval events shorter than this fraction of the nominal interval are left out of the
per-interval goodput figures (a cut-short last interval)."""


def _base_labels(result: ProbeResult, labels: Mapping[str, str] | None) -> dict[str, str]:
    if result.mode not in _NUMBERS:
        raise WorkloadError(f"vnetbench-probe: unknown mode {result.mode!r}")
    base = {"workload": f"probe-{result.mode}", **dict(labels or {})}
    for key in ("protocol",):
        if key in result.end and key not in base:
            base[key] = str(result.end[key])
    if result.mode == "barrier" and "rank" in result.end:
        base.setdefault("rank", str(result.end["rank"]))
    return base


def _number_of(event: Mapping[str, object], key: str) -> float | None:
    value = event.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def interval_goodputs(result: ProbeResult) -> list[float]:
    """Goodput (bps) of the interval events lasting at least 80 % of the nominal interval.

    The nominal interval is the start event's ``interval_s``; outputs without it (older probes)
    use the median interval duration.
    """
    return [g for _, g in timed_goodputs(result)]


def timed_goodputs(result: ProbeResult) -> list[tuple[int, float]]:
    """(interval number, goodput in bps) of the full intervals (see ``interval_goodputs``)."""
    return timed_values(result, "goodput_bps")


def timed_values(result: ProbeResult, key: str, stat: str | None = None
                 ) -> list[tuple[int, float]]:
    """(interval number, value) of ``key`` (of its ``stat`` for a distribution such as
    ``rtt_us``) in the full intervals: those lasting at least 80 % of the nominal interval
    (see ``interval_goodputs``)."""
    timed: list[tuple[int, float, float]] = []
    for k, event in enumerate(result.intervals):
        duration = _number_of(event, "duration_s")
        holder = event.get(key) if stat is not None else event
        value = _number_of(holder, stat or key) if isinstance(holder, Mapping) else None
        if duration is not None and value is not None:
            timed.append((k, duration, value))
    if not timed:
        return []
    nominal = _number_of(result.start, "interval_s")
    if nominal is None or nominal <= 0:
        durations = sorted(d for _, d, _ in timed)
        nominal = durations[len(durations) // 2]
    return [(k, v) for k, d, v in timed if d >= INTERVAL_MIN_FRACTION * nominal]


_RR_SERIES = (("tps", None, "tps_interval", "1/s"),
              ("rtt_us", "p50", "rtt_p50_interval_us", "us"),
              ("rtt_us", "p99", "rtt_p99_interval_us", "us"))
SERIES: dict[str, tuple[tuple[str, str | None, str, str], ...]] = {
    "rr": _RR_SERIES, "crr": _RR_SERIES,
    "stream": (("goodput_bps", None, "goodput_interval_bps", "bps"),),
    "media": (("bitrate_bps", None, "bitrate_interval_bps", "bps"),),
}
"""Per mode: (interval-event key, statistic of a distribution or None, metric, unit) of the
per-interval time series kept as samples (label ``interval``)."""


def interval_samples(result: ProbeResult, base: Mapping[str, str]) -> list[Sample]:
    """The per-interval time series of ``result`` (see ``SERIES``), one Sample per full
    interval labelled ``interval`` (its number from 0)."""
    return [Sample(metric, value, unit, {**base, "interval": str(k)}, result.t_ns)
            for key, stat, metric, unit in SERIES.get(result.mode, ())
            for k, value in timed_values(result, key, stat)]


def to_samples(result: ProbeResult, labels: Mapping[str, str] | None = None) -> list[Sample]:
    """One Sample per statistic of the result's ``end`` event, the per-interval time series
    (``interval_samples``) and, for ``stream``, the smallest and largest goodput of its full
    intervals when it has at least two."""
    base = _base_labels(result, labels)
    t_ns = result.t_ns
    samples: list[Sample] = []
    for key, metric, unit in _NUMBERS[result.mode]:
        if key in result.end:
            samples.append(Sample(metric, result.number(key), unit, dict(base), t_ns))
    for key, prefix in _DISTRIBUTIONS[result.mode]:
        if key == "rtt_us" or key in result.end:
            samples.extend(_stat_samples(prefix, result.stats(key), base, t_ns))
    if isinstance(result.end.get("behind"), bool):  # an open loop that fell behind its rate
        samples.append(Sample("behind", float(result.end["behind"]), "flag", dict(base), t_ns))
    for stream in result.media_streams:
        lab = {**base, "stream": str(stream.stream)}
        samples.extend([
            Sample("jitter_us", stream.jitter_us, "us", dict(lab), t_ns),
            Sample("bitrate_bps", stream.bitrate_bps, "bps", dict(lab), t_ns),
            Sample("loss", stream.loss, "fraction", dict(lab), t_ns),
            Sample("lost", float(stream.lost), "count", dict(lab), t_ns),
        ])
    samples += interval_samples(result, base)
    if result.mode == "stream":
        goodputs = interval_goodputs(result)
        if len(goodputs) >= 2:
            samples.append(Sample("goodput_min_interval_bps", min(goodputs), "bps", dict(base),
                                  t_ns))
            samples.append(Sample("goodput_max_interval_bps", max(goodputs), "bps", dict(base),
                                  t_ns))
    samples.append(Sample("cpu_user_s", result.cpu_user_s, "s", dict(base), t_ns))
    samples.append(Sample("cpu_sys_s", result.cpu_sys_s, "s", dict(base), t_ns))
    return samples


def parse_samples(text: str, mode: str | None = None,
                  labels: Mapping[str, str] | None = None, stderr: str = "") -> list[Sample]:
    """``to_samples(parse_output(text, mode))`` in one call."""
    return to_samples(parse_output(text, mode, stderr), labels)


def histogram_records(result: ProbeResult,
                      labels: Mapping[str, str] | None = None) -> list[HistogramRecord]:
    """One HistogramRecord per latency object of the ``end`` event that carries ``"hist"``.

    The metric is the object's key (``rtt_us``, ``sync_us``, ``send_gap_us``, ``recv_gap_us``:
    the base names of ``to_samples``' ``rtt_p50_us``...); labels are those ``to_samples``
    gives the result's samples.
    """
    base = _base_labels(result, labels)
    records: list[HistogramRecord] = []
    for key, value in result.end.items():
        if isinstance(value, dict) and "hist" in value:
            hist = result.histogram(key)
            if hist is not None:
                records.append(HistogramRecord(key, UNIT, dict(base), hist))
    return records
