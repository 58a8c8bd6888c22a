//! Linkem counters and their JSON line (stdout `end` event and --stats-file).

use crate::common::{json_object, JVal};

#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Packets received from the queue.
    pub packets: u64,
    /// Packets given DROP by the loss model.
    pub dropped: u64,
    /// Packets given ACCEPT.
    pub accepted: u64,
    /// Sum of actual held time (verdict time - receive time) of accepted packets.
    pub delayed_sum_ns: u128,
    /// Sum / max of lateness (verdict time - scheduled release time).
    pub late_sum_ns: u128,
    pub late_max_ns: u64,
    /// Receive errors of ENOBUFS kind (kernel could not deliver: packets lost).
    pub enobufs: u64,
    /// Packets currently held.
    pub held: u64,
}

impl Stats {
    pub fn delayed_mean_us(&self) -> f64 {
        if self.accepted == 0 { 0.0 } else { self.delayed_sum_ns as f64 / self.accepted as f64 / 1000.0 }
    }
    pub fn late_mean_us(&self) -> f64 {
        if self.accepted == 0 { 0.0 } else { self.late_sum_ns as f64 / self.accepted as f64 / 1000.0 }
    }
    /// One-line JSON; `event` is "stats" for periodic writes and "end" at exit.
    pub fn to_json(&self, event: &str, queue: u16) -> String {
        json_object(&[
            ("event", JVal::S(event.into())),
            ("queue", JVal::U(queue as u64)),
            ("packets", JVal::U(self.packets)),
            ("dropped", JVal::U(self.dropped)),
            ("accepted", JVal::U(self.accepted)),
            ("delayed_mean_us", JVal::F(self.delayed_mean_us())),
            ("late_mean_us", JVal::F(self.late_mean_us())),
            ("late_max_us", JVal::F(self.late_max_ns as f64 / 1000.0)),
            ("enobufs", JVal::U(self.enobufs)),
            ("held", JVal::U(self.held)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_json() {
        let s = Stats {
            packets: 10,
            dropped: 1,
            accepted: 9,
            delayed_sum_ns: 9 * 20_010_000,
            late_sum_ns: 9 * 10_000,
            late_max_ns: 15_000,
            enobufs: 0,
            held: 0,
        };
        assert_eq!(
            s.to_json("end", 3),
            "{\"event\":\"end\",\"queue\":3,\"packets\":10,\"dropped\":1,\"accepted\":9,\
             \"delayed_mean_us\":20010.000,\"late_mean_us\":10.000,\"late_max_us\":15.000,\
             \"enobufs\":0,\"held\":0}"
        );
        assert_eq!(Stats::default().delayed_mean_us(), 0.0);
    }
}
