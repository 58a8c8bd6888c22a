//! Tunnel counters: shared between the two forwarding threads (relaxed atomics,
//! each counter written by one thread only) and rendered as one JSON line.

use crate::common::{json_object, JVal};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Debug, Default)]
pub struct Counters {
    pub tun_to_udp_packets: AtomicU64,
    pub tun_to_udp_bytes: AtomicU64,
    pub udp_to_tun_packets: AtomicU64,
    pub udp_to_tun_bytes: AtomicU64,
    pub drop_no_route: AtomicU64,
    pub drop_oversized: AtomicU64,
    pub drop_send_error: AtomicU64,
    pub drop_write_error: AtomicU64,
    pub drop_not_peer: AtomicU64,
}

impl Counters {
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }
    pub fn to_json(&self, event: &str) -> String {
        let g = |c: &AtomicU64| JVal::U(c.load(Relaxed));
        let drops = self.drop_no_route.load(Relaxed)
            + self.drop_oversized.load(Relaxed)
            + self.drop_send_error.load(Relaxed)
            + self.drop_write_error.load(Relaxed)
            + self.drop_not_peer.load(Relaxed);
        json_object(&[
            ("event", JVal::S(event.into())),
            ("tun_to_udp_packets", g(&self.tun_to_udp_packets)),
            ("tun_to_udp_bytes", g(&self.tun_to_udp_bytes)),
            ("udp_to_tun_packets", g(&self.udp_to_tun_packets)),
            ("udp_to_tun_bytes", g(&self.udp_to_tun_bytes)),
            ("drops", JVal::U(drops)),
            ("drop_no_route", g(&self.drop_no_route)),
            ("drop_oversized", g(&self.drop_oversized)),
            ("drop_send_error", g(&self.drop_send_error)),
            ("drop_write_error", g(&self.drop_write_error)),
            ("drop_not_peer", g(&self.drop_not_peer)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_json() {
        let c = Counters::default();
        Counters::add(&c.tun_to_udp_packets, 2);
        Counters::add(&c.tun_to_udp_bytes, 168);
        Counters::add(&c.drop_no_route, 1);
        Counters::add(&c.drop_write_error, 1);
        assert_eq!(
            c.to_json("end"),
            "{\"event\":\"end\",\"tun_to_udp_packets\":2,\"tun_to_udp_bytes\":168,\"udp_to_tun_packets\":0,\
             \"udp_to_tun_bytes\":0,\"drops\":2,\"drop_no_route\":1,\"drop_oversized\":0,\
             \"drop_send_error\":0,\"drop_write_error\":1,\"drop_not_peer\":0}"
        );
    }
}
