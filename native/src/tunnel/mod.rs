//! Userspace UDP encapsulation forwarder over tun (Weave sleeve / flannel-udp).
//!
//! * `routes` — SUBNET=PEER parsing and longest-prefix-match lookup (pure).
//! * `tun`    — open/create a tun device (IFF_TUN | IFF_NO_PI) and set its MTU.
//! * `stats`  — shared atomic counters and their JSON rendering.

pub mod routes;
pub mod stats;
pub mod tun;
