//! vnetbench-linkem: userspace link emulator (delay, jitter, loss) over NFQUEUE.
//!
//! One thread. Each queued packet gets a decision from `Scheduler`; delayed
//! packets wait in a FIFO of (release time, id) — release times are
//! non-decreasing, so the FIFO front is always the next packet due. The loop
//! sleeps in `ppoll` on the netlink socket until the next release (timer slack
//! set to 1 ns for precision), optionally spinning for the last `--spin-us`.
//! SIGTERM/SIGINT are blocked except inside `ppoll`, so they wake it at once.

use std::collections::VecDeque;
use vnetbench_native::common::{self, Args};
use vnetbench_native::linkem::nfq::{self, Queue, QueueConfig};
use vnetbench_native::linkem::sched::{Decision, Scheduler};
use vnetbench_native::linkem::stats::Stats;

const USAGE: &str = "usage: vnetbench-linkem --queue N --delay-us D [--jitter-us J] [--loss P] [--seed S]
       [--queue-maxlen 65536] [--stats-file PATH] [--copy-range BYTES(0=meta)]
       [--rcvbuf BYTES] [--spin-us US|auto] [--gso]";

struct Opts {
    queue: u16,
    delay_us: u64,
    jitter_us: u64,
    loss: f64,
    seed: u64,
    maxlen: u32,
    stats_file: Option<String>,
    copy_range: u32,
    rcvbuf: usize,
    /// None = auto (learn the wakeup latency of ppoll and spin just that long).
    spin_us: Option<u64>,
    gso: bool,
}

fn parse() -> Result<Opts, String> {
    let a = Args::parse(std::env::args().skip(1), &["--gso", "--help"])?;
    if a.has("--help") {
        return Err(String::new());
    }
    a.check_known(&[
        "--queue", "--delay-us", "--jitter-us", "--loss", "--seed", "--queue-maxlen", "--stats-file",
        "--copy-range", "--rcvbuf", "--spin-us", "--gso", "--help",
    ])?;
    let o = Opts {
        queue: a.get("--queue").ok_or("--queue is required")?.parse().map_err(|_| "bad --queue")?,
        delay_us: a.num("--delay-us", 0)?,
        jitter_us: a.num("--jitter-us", 0)?,
        loss: a.num("--loss", 0.0)?,
        seed: a.num("--seed", 0x5eed)?,
        maxlen: a.num("--queue-maxlen", 65536)?,
        stats_file: a.get("--stats-file").map(String::from),
        copy_range: a.num("--copy-range", 0)?,
        rcvbuf: a.num("--rcvbuf", 32 << 20)?,
        spin_us: match a.get("--spin-us") {
            None | Some("auto") => None,
            Some(v) => Some(v.parse().map_err(|_| "bad --spin-us")?),
        },
        gso: a.has("--gso"),
    };
    if !(0.0..=1.0).contains(&o.loss) {
        return Err("--loss must be in [0, 1]".into());
    }
    Ok(o)
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("vnetbench-linkem: {}", e);
            }
            eprintln!("{}", USAGE);
            std::process::exit(2);
        }
    };
    // Precise sleeps: default timer slack (50 us) would add to every release.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let _blocked = common::block_term_signals();
    common::install_term_flag_handler();
    // SAFETY: empty signal mask used inside ppoll (unblocks SIGTERM/SIGINT there only).
    let mut wait_mask: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe { libc::sigemptyset(&mut wait_mask) };

    let cfg = QueueConfig {
        copy_mode: if o.copy_range == 0 { nfq::NFQNL_COPY_META } else { nfq::NFQNL_COPY_PACKET },
        copy_range: o.copy_range,
        maxlen: o.maxlen,
        flags: if o.gso { nfq::NFQA_CFG_F_GSO } else { 0 },
        rcvbuf: o.rcvbuf,
    };
    let mut q = match Queue::open(o.queue, &cfg) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("vnetbench-linkem: cannot bind NFQUEUE {}: {}", o.queue, e);
            std::process::exit(1);
        }
    };
    let mut sched = Scheduler::new(o.delay_us * 1000, o.jitter_us * 1000, o.loss, o.seed);
    let mut fifo: VecDeque<(u64, u32, u64)> = VecDeque::with_capacity(o.maxlen as usize);
    let mut st = Stats::default();
    let mut buf = vec![0u8; 256 * 1024];
    let mut drops: Vec<u32> = Vec::with_capacity(1024); // ids to DROP, reused
    // Oversleep estimate of ppoll (EWMA, ns); used for the auto spin budget.
    let mut oversleep_ns: u64 = 100_000;
    let mut next_stats = common::now_ns() + 1_000_000_000;
    common::emit_line(&format!("{{\"event\":\"ready\",\"queue\":{}}}", o.queue));

    loop {
        // 1. Release everything that is due (one batched verdict datagram).
        let now = common::now_ns();
        while let Some(&(t, id, arr)) = fifo.front() {
            if t > now {
                break;
            }
            fifo.pop_front();
            q.push_verdict(id, nfq::NF_ACCEPT);
            st.accepted += 1;
            st.delayed_sum_ns += (now - arr) as u128;
            let late = now - t;
            st.late_sum_ns += late as u128;
            st.late_max_ns = st.late_max_ns.max(late);
        }
        if let Err(e) = q.flush() {
            eprintln!("vnetbench-linkem: verdict send: {}", e);
        }
        st.held = fifo.len() as u64;
        if common::term_requested() {
            break;
        }
        if now >= next_stats {
            if let Some(p) = &o.stats_file {
                let _ = common::write_stats_file(p, &st.to_json("stats", o.queue));
            }
            next_stats = now + 1_000_000_000;
        }

        // 2. Wait for a packet or the next release/stats tick.
        let deadline = fifo.front().map_or(next_stats, |f| f.0.min(next_stats));
        let wait = deadline.saturating_sub(now);
        let spin_ns = match o.spin_us {
            Some(us) => us * 1000,
            None if fifo.is_empty() => 0,
            None => oversleep_ns + oversleep_ns / 2 + 10_000,
        };
        let mut readable = true;
        if wait > spin_ns {
            let sleep = wait - spin_ns;
            let ts = libc::timespec { tv_sec: (sleep / 1_000_000_000) as _, tv_nsec: (sleep % 1_000_000_000) as _ };
            let mut pfd = libc::pollfd { fd: q.fd(), events: libc::POLLIN, revents: 0 };
            let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, &wait_mask) };
            readable = r > 0;
            if r == 0 && o.spin_us.is_none() {
                // Timed out: learn how late ppoll woke us (EWMA, weight 1/8).
                let over = common::now_ns().saturating_sub(now + sleep).min(2_000_000);
                oversleep_ns = (oversleep_ns * 7 + over) / 8;
            }
            if r <= 0 && spin_ns == 0 {
                continue; // timeout or signal: go release / exit
            }
        }
        // 3. Drain the socket (bounded) — also the busy-wait for the last spin_ns.
        let mut rounds = 0;
        loop {
            let t_arr = common::now_ns();
            let got = q.recv_packets(&mut buf, |id| {
                st.packets += 1;
                match sched.on_packet(t_arr) {
                    Decision::Drop => {
                        st.dropped += 1;
                        drops.push(id);
                    }
                    Decision::Release(t) => fifo.push_back((t, id, t_arr)),
                }
            });
            for id in drops.drain(..) {
                q.push_verdict(id, nfq::NF_DROP);
            }
            match got {
                Ok(true) => {
                    rounds += 1;
                    if rounds < 512 {
                        continue;
                    }
                }
                Ok(false) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    st.enobufs += 1;
                    continue;
                }
                Err(e) => eprintln!("vnetbench-linkem: recv: {}", e),
            }
            // Spin only while a release is imminent and nothing else to do.
            if !readable || spin_ns > 0 {
                let front = fifo.front().map_or(u64::MAX, |f| f.0);
                if front.saturating_sub(common::now_ns()) < spin_ns && !common::term_requested() {
                    if front <= common::now_ns() {
                        break;
                    }
                    std::hint::spin_loop();
                    continue;
                }
            }
            break;
        }
    }

    // Shutdown: accept everything held plus anything still waiting in the socket.
    while let Some((_, id, arr)) = fifo.pop_front() {
        q.push_verdict(id, nfq::NF_ACCEPT);
        st.accepted += 1;
        st.delayed_sum_ns += common::now_ns().saturating_sub(arr) as u128;
    }
    let mut ids = Vec::new();
    while let Ok(true) = q.recv_packets(&mut buf, |id| ids.push(id)) {}
    for id in ids {
        st.packets += 1;
        st.accepted += 1;
        q.push_verdict(id, nfq::NF_ACCEPT);
    }
    let _ = q.flush();
    st.held = 0;
    let line = st.to_json("end", o.queue);
    if let Some(p) = &o.stats_file {
        let _ = common::write_stats_file(p, &line);
    }
    common::emit_line(&line);
}
