//! Shared library for the two vnetbench native helpers.
//!
//! * `linkem` — userspace link emulator (delay, jitter, loss) over NFQUEUE.
//! * `tunnel` — userspace UDP encapsulation forwarder over a tun device.
//! * `common` — small pieces both binaries use (clock, signals, stats JSON, CLI).
//!
//! Only `libc` is used: netlink, tun and signal handling are done with raw
//! syscalls, so nothing but the C library is needed at run time.

pub mod common;
pub mod linkem;
pub mod tunnel;
