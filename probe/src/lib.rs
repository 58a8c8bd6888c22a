//! vnetbench-probe: a network measurement probe (rr, crr, stream, gaps, barrier, media) whose
//! numbers are the product. Blocking sockets, TCP_NODELAY (except on stream data connections,
//! where Nagle stays on unless --nodelay), no allocation per transaction.

// NaN-rejecting `!(x > 0.0)` checks are deliberate; tv_sec casts matter on 32-bit targets.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::unnecessary_cast, clippy::needless_range_loop)]

pub mod barrier;
pub mod cli;
pub mod client;
pub mod flows;
pub mod paired;
pub mod proto;
pub mod server;
pub mod stats;
pub mod util;
