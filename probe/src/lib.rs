//! vnetbench-probe: a network measurement probe (rr, crr, stream, gaps, barrier, media) whose
//! numbers are the product. Blocking sockets, TCP_NODELAY, no allocation per transaction.

pub mod barrier;
pub mod cli;
pub mod client;
pub mod proto;
pub mod server;
pub mod stats;
pub mod util;
