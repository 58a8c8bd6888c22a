//! Latency statistics: an HDR histogram (nanoseconds, 3 significant digits) plus exact
//! count / sum / sum of squares / min / max, summarised in microseconds.
//!
//! End events carry [`Recorder::end_json`]: the summary plus `"hist"`, the histogram's
//! recorded buckets `[[value_ns, count], ...]` (value: the bucket's highest equivalent value,
//! ascending), so that histograms of several runs can be merged and their percentiles
//! computed exactly as `value_at_quantile` would.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// Records durations in nanoseconds; no allocation per record.
#[derive(Clone)]
pub struct Recorder {
    hist: Histogram<u64>,
    count: u64,
    sum: f64,
    sumsq: f64,
    min: u64,
    max: u64,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// A recorder for values from 1 ns to 1000 s (larger values saturate).
    pub fn new() -> Self {
        Recorder {
            hist: Histogram::new_with_bounds(1, 1_000_000_000_000, 3).expect("valid bounds"),
            count: 0,
            sum: 0.0,
            sumsq: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns);
        self.count += 1;
        let v = ns as f64;
        self.sum += v;
        self.sumsq += v * v;
        if ns < self.min {
            self.min = ns;
        }
        if ns > self.max {
            self.max = ns;
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Add everything `other` recorded (its histogram merged into this one).
    pub fn add(&mut self, other: &Recorder) {
        if other.count == 0 {
            return;
        }
        let _ = self.hist.add(&other.hist);
        self.count += other.count;
        self.sum += other.sum;
        self.sumsq += other.sumsq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn reset(&mut self) {
        self.hist.reset();
        self.count = 0;
        self.sum = 0.0;
        self.sumsq = 0.0;
        self.min = u64::MAX;
        self.max = 0;
    }

    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// Population standard deviation in ns.
    pub fn stddev_ns(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.sum / n;
        let var = (self.sumsq / n - mean * mean).max(0.0);
        var.sqrt()
    }

    /// Value at quantile q (0..1) in ns, clamped to the exact min/max.
    pub fn quantile_ns(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let v = self.hist.value_at_quantile(q) as f64;
        // the histogram reports the highest equivalent value of a bucket: keep inside [min, max]
        v.clamp(self.min as f64, self.max as f64)
    }

    /// The recorded buckets, ascending: `[[highest equivalent value in ns, count], ...]`.
    pub fn hist_json(&self) -> Value {
        Value::Array(
            self.hist
                .iter_recorded()
                .map(|b| json!([b.value_iterated_to(), b.count_at_value()]))
                .collect(),
        )
    }

    /// The summary object (see [`Summary::to_json`]) plus `"hist"` (see [`Recorder::hist_json`]):
    /// what end events carry; interval events carry the summary alone.
    pub fn end_json(&self) -> Value {
        with_hist(self.summary().to_json(), self.hist_json())
    }

    pub fn summary(&self) -> Summary {
        if self.count == 0 {
            return Summary::default();
        }
        let us = |ns: f64| ns / 1000.0;
        Summary {
            min: us(self.min as f64),
            mean: us(self.mean_ns()),
            stddev: us(self.stddev_ns()),
            p1: us(self.quantile_ns(0.01)),
            p25: us(self.quantile_ns(0.25)),
            p50: us(self.quantile_ns(0.50)),
            p75: us(self.quantile_ns(0.75)),
            p90: us(self.quantile_ns(0.90)),
            p99: us(self.quantile_ns(0.99)),
            p999: us(self.quantile_ns(0.999)),
            max: us(self.max as f64),
        }
    }
}

/// A distribution summary in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    pub min: f64,
    pub mean: f64,
    pub stddev: f64,
    pub p1: f64,
    pub p25: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Summary {
    /// The JSON object with exactly the keys min, mean, stddev, p1..p999, max.
    pub fn to_json(&self) -> Value {
        json!({
            "min": r3(self.min), "mean": r3(self.mean), "stddev": r3(self.stddev),
            "p1": r3(self.p1), "p25": r3(self.p25), "p50": r3(self.p50), "p75": r3(self.p75),
            "p90": r3(self.p90), "p99": r3(self.p99), "p999": r3(self.p999), "max": r3(self.max),
        })
    }

    /// The same distribution shifted by `-offset_us` (deviation from a nominal value);
    /// stddev is unchanged.
    pub fn shifted(&self, offset_us: f64) -> Summary {
        Summary {
            min: self.min - offset_us,
            mean: self.mean - offset_us,
            stddev: self.stddev,
            p1: self.p1 - offset_us,
            p25: self.p25 - offset_us,
            p50: self.p50 - offset_us,
            p75: self.p75 - offset_us,
            p90: self.p90 - offset_us,
            p99: self.p99 - offset_us,
            p999: self.p999 - offset_us,
            max: self.max - offset_us,
        }
    }

    /// Parse a summary object (as produced by `to_json`; other keys such as "hist" are ignored).
    pub fn from_json(v: &Value) -> Option<Summary> {
        let g = |k: &str| v.get(k).and_then(Value::as_f64);
        Some(Summary {
            min: g("min")?,
            mean: g("mean")?,
            stddev: g("stddev")?,
            p1: g("p1")?,
            p25: g("p25")?,
            p50: g("p50")?,
            p75: g("p75")?,
            p90: g("p90")?,
            p99: g("p99")?,
            p999: g("p999")?,
            max: g("max")?,
        })
    }
}

/// `summary` (a JSON object) with `"hist": hist` added; `hist` is dropped if it is not an
/// array (e.g. absent from an older server's reply).
pub fn with_hist(summary: Value, hist: Value) -> Value {
    let mut v = summary;
    if let (Value::Object(m), Value::Array(_)) = (&mut v, &hist) {
        m.insert("hist".into(), hist);
    }
    v
}

/// Round to 3 decimals (nanosecond resolution for microsecond values).
pub fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// RFC 3550 section 6.4.1 interarrival jitter estimator, in nanoseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Jitter {
    prev: Option<(i64, i64)>,
    j: f64,
}

impl Jitter {
    /// `send_ns`: sender timestamp; `recv_ns`: arrival time (any clock, only differences used).
    pub fn update(&mut self, send_ns: i64, recv_ns: i64) {
        if let Some((ps, pr)) = self.prev {
            let d = (recv_ns - pr) - (send_ns - ps);
            self.j += ((d.unsigned_abs() as f64) - self.j) / 16.0;
        }
        self.prev = Some((send_ns, recv_ns));
    }

    pub fn value_ns(&self) -> f64 {
        self.j
    }
}

/// CPU time of this process: (user seconds, system seconds).
pub fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage fills the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_summary_is_zero() {
        let r = Recorder::new();
        assert_eq!(r.summary(), Summary::default());
    }

    #[test]
    fn uniform_values() {
        let mut r = Recorder::new();
        for v in 1..=10_000u64 {
            r.record(v * 1000); // 1 us .. 10 ms
        }
        let s = r.summary();
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 10_000.0);
        assert!((s.mean - 5000.5).abs() < 1e-6);
        assert!((s.p50 - 5000.0).abs() / 5000.0 < 0.002, "p50 {}", s.p50);
        assert!((s.p99 - 9900.0).abs() / 9900.0 < 0.002, "p99 {}", s.p99);
        assert!((s.p1 - 100.0).abs() / 100.0 < 0.002, "p1 {}", s.p1);
        // stddev of discrete uniform 1..n is sqrt((n^2-1)/12)
        let expect = ((10_000f64.powi(2) - 1.0) / 12.0).sqrt();
        assert!((s.stddev - expect).abs() / expect < 1e-6);
        assert!(s.p1 <= s.p25 && s.p25 <= s.p50 && s.p50 <= s.p75);
        assert!(s.p75 <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.p999 && s.p999 <= s.max);
    }

    #[test]
    fn constant_values_have_zero_spread() {
        let mut r = Recorder::new();
        for _ in 0..1000 {
            r.record(12_345);
        }
        let s = r.summary();
        assert_eq!(s.min, 12.345);
        assert_eq!(s.p50, 12.345);
        assert_eq!(s.p999, 12.345);
        assert_eq!(s.stddev, 0.0);
    }

    #[test]
    fn zero_and_huge_values_do_not_panic() {
        let mut r = Recorder::new();
        r.record(0);
        r.record(u64::MAX / 4);
        assert_eq!(r.count(), 2);
        let _ = r.summary();
    }

    #[test]
    fn summary_json_has_exact_keys() {
        let mut r = Recorder::new();
        r.record(1000);
        let v = r.summary().to_json();
        let mut keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        let mut want = vec![
            "min", "mean", "stddev", "p1", "p25", "p50", "p75", "p90", "p99", "p999", "max",
        ];
        want.sort();
        assert_eq!(keys, want);
        assert_eq!(Summary::from_json(&v), Some(r.summary()));
        let end = r.end_json();
        let mut keys: Vec<_> = end.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        want.push("hist");
        want.sort();
        assert_eq!(keys, want);
        assert_eq!(end["hist"], json!([[1000, 1]]));
    }

    #[test]
    fn end_json_adds_hist_whose_counts_sum_to_the_count() {
        let mut r = Recorder::new();
        let values = [0u64, 1, 999, 1000, 1000, 12_345, 12_346, 2_000_000, 2_010_000, 5_000_000_000];
        for v in values {
            r.record(v);
        }
        let v = r.end_json();
        let obj = v.as_object().unwrap();
        assert_eq!(obj.len(), 12);
        let hist = obj["hist"].as_array().unwrap();
        let pairs: Vec<(u64, u64)> = hist
            .iter()
            .map(|p| {
                let p = p.as_array().unwrap();
                assert_eq!(p.len(), 2);
                (p[0].as_u64().unwrap(), p[1].as_u64().unwrap())
            })
            .collect();
        assert_eq!(pairs.iter().map(|p| p.1).sum::<u64>(), r.count());
        assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0), "ascending: {pairs:?}");
        assert!(pairs.iter().all(|p| p.1 > 0));
        // exact below 2048 ns (3 significant digits), the highest equivalent value above
        assert_eq!(&pairs[..4], &[(0, 1), (1, 1), (999, 1), (1000, 2)]);
        assert_eq!(pairs.len(), 8); // 12345 and 12346 share a bucket
        assert!(pairs.iter().any(|&(v, c)| c == 2 && (12_346..12_400).contains(&v)));
        // the same percentiles as the histogram: walk the buckets like value_at_quantile
        for q in [0.01, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999] {
            let target = ((q * r.count() as f64).ceil() as u64).max(1);
            let mut cum = 0;
            let at = pairs.iter().find(|p| {
                cum += p.1;
                cum >= target
            });
            assert_eq!(at.unwrap().0, r.hist.value_at_quantile(q), "q {q}");
        }
        // from_json ignores "hist"; the summary keys are unchanged
        assert_eq!(Summary::from_json(&v), Summary::from_json(&r.summary().to_json()));
        let mut without = v.clone();
        without.as_object_mut().unwrap().remove("hist");
        assert_eq!(without, r.summary().to_json());
    }

    #[test]
    fn empty_recorder_has_empty_hist() {
        let r = Recorder::new();
        assert_eq!(r.end_json()["hist"], json!([]));
        assert_eq!(with_hist(json!({"a": 1}), Value::Null), json!({"a": 1}));
    }

    #[test]
    fn shifted_summary() {
        let mut r = Recorder::new();
        r.record(1000);
        r.record(3000);
        let s = r.summary().shifted(2.0);
        assert_eq!(s.min, -1.0);
        assert_eq!(s.max, 1.0);
        assert_eq!(s.stddev, r.summary().stddev);
    }

    #[test]
    fn jitter_constant_delay_is_zero() {
        let mut j = Jitter::default();
        for i in 0..100 {
            j.update(i * 1000, i * 1000 + 500);
        }
        assert_eq!(j.value_ns(), 0.0);
    }

    #[test]
    fn jitter_converges_to_alternating_deviation() {
        // arrivals alternate +-100 ns around a constant delay: |D| = 200 each packet
        let mut j = Jitter::default();
        for i in 0..2000i64 {
            let off = if i % 2 == 0 { 100 } else { -100 };
            j.update(i * 1000, i * 1000 + 5000 + off);
        }
        assert!((j.value_ns() - 200.0).abs() < 1.0, "{}", j.value_ns());
    }

    #[test]
    fn cpu_times_are_non_negative() {
        let (u, s) = cpu_times();
        assert!(u >= 0.0 && s >= 0.0);
    }
}
