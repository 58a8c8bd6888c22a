//! Userspace link emulator over NFQUEUE.
//!
//! * `sched` — pure delay/jitter/loss decision and non-reordering release times.
//! * `nfq`   — raw nfnetlink_queue socket: bind, config, receive ids, send verdicts.
//! * `stats` — counters and their JSON rendering.

pub mod nfq;
pub mod sched;
pub mod stats;
