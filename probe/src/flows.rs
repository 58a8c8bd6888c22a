//! `rr` over many connections (`--flows N`), closed or open loop (`--rate R`).
//!
//! Closed loop (no `--rate`): each flow runs its own thread, `--burst` transactions in flight
//! on its connection, as neper's many-flow request/response does.
//!
//! Open loop (`--rate R`): requests arrive on their own schedule, R a second in all (Poisson
//! or evenly spaced, `--arrivals`, seeded), and go to the flows in turn. One scheduler thread
//! sends each request at its arrival time whether or not earlier replies came back (a TCP
//! connection carries the requests back to back: the server answers them in order), and one
//! reader thread per flow takes the replies. Each reply's latency is taken from the request's
//! *intended* send time, its arrival time, not from when it was actually written: a layer that
//! stalls, or a client that fell behind, delays every request scheduled meanwhile, and the
//! histogram shows it (the coordinated-omission correction of wrk2). Beside it the end event
//! reports the latency from the actual write (`service_us`, what a fixed-rate tool such as
//! sockperf reports), how late the writes left (`send_late_us`), the offered and the achieved
//! rate (`tps`: replies received within the measured window per second), `achieved_share`
//! (those replies over the requests scheduled in the window) and `behind` when that share is
//! below 95 %: the latencies are then those of a queue that kept growing, not of the offered
//! load.
//!
//! With `--wait spin` the open loop runs in one thread that never sleeps: between send times
//! it polls every flow (`poll` with no timeout, then non-blocking reads and writes), as
//! sockperf's fixed-rate mode busy-waits its pacing. Its latencies then hold no idle CPU's
//! wake-up (on a VM tens of microseconds), at the price of one CPU kept busy for the run;
//! `--wait block` (the default) sleeps to each send time and blocks a reader per flow.
//!
//! Requests the scheduler could not send before the window ended, and replies still owed
//! `DRAIN_NS` after it, are counted (`unanswered`), never given a latency.

use crate::cli::{Arrivals, RrArgs, Wait};
use crate::client::{connect, event, request};
use crate::stats::{r3, Recorder};
use crate::util::{emit, is_timeout, mono_ns, sleep_until_ns, tight_timer_slack, Rng};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

/// How long replies still owed at the end of the window are awaited.
const DRAIN_NS: i64 = 2_000_000_000;

/// One transaction as the collector sees it (CLOCK_MONOTONIC ns).
#[derive(Clone, Copy, Debug)]
struct Sample {
    intended: i64,
    sent: i64,
    received: i64,
}

/// The arrival times of an open loop from `t0` for `secs` seconds at `rate` a second.
pub fn arrival_times(rate: f64, arrivals: Arrivals, seed: u64, t0: i64, secs: f64) -> Vec<i64> {
    let mut rng = Rng::new(seed);
    let end = t0 as f64 + secs * 1e9;
    let mean_gap = 1e9 / rate;
    let mut out = Vec::with_capacity((secs * rate * 1.1) as usize + 16);
    let mut t = t0 as f64;
    loop {
        t += match arrivals {
            Arrivals::Constant => mean_gap,
            // exponential gaps: -ln(U) times the mean, U uniform in (0, 1]
            Arrivals::Poisson => -(1.0 - rng.uniform()).ln() * mean_gap,
        };
        if t >= end {
            return out;
        }
        out.push(t as i64);
    }
}

fn open_flows(a: &RrArgs, server: SocketAddr, secs: f64) -> Result<Vec<TcpStream>, String> {
    (0..a.flows)
        .map(|_| {
            let mut s = connect(server)?;
            request(
                &mut s,
                &json!({"op": "rr", "proto": "tcp", "request": a.request, "response": a.response,
                        "duration": secs + DRAIN_NS as f64 / 1e9}),
            )?;
            Ok(s)
        })
        .collect()
}

/// Run `rr` over `a.flows` connections (closed loop, or open loop when `a.rate > 0`) and
/// return the end event's fields; interval events are emitted as replies come in.
pub fn rr_flows(a: &RrArgs, server: SocketAddr) -> Result<Value, String> {
    let secs = a.warmup + a.common.duration;
    let flows = open_flows(a, server, secs)?;
    let open = a.rate > 0.0;
    let spin = open && a.wait == Wait::Spin;
    // each flow's writing and reading ends for its threads (a reader per flow in the open
    // loop); the spinning loop uses the flows themselves, in this thread
    let ends = if spin { Vec::new() } else {
        flows
            .iter()
            .map(|s| Ok((s.try_clone().map_err(|e| e.to_string())?, s.try_clone().map_err(|e| e.to_string())?)))
            .collect::<Result<Vec<(TcpStream, TcpStream)>, String>>()?
    };
    tight_timer_slack();
    let t0 = mono_ns() + 2_000_000;
    let measure_from = t0 + (a.warmup * 1e9) as i64;
    let end = measure_from + (a.common.duration * 1e9) as i64;
    let (tx, rx) = mpsc::channel::<Sample>();
    let arrivals = if open { arrival_times(a.rate, a.arrivals, a.seed, t0, secs) } else { Vec::new() };
    let scheduled = arrivals.iter().filter(|&&t| t >= measure_from && t < end).count() as u64;
    let mut out = Collected::new(measure_from, end, a.common.interval);
    let (req, resp, burst) = (a.request as usize, a.response as usize, a.burst as usize);
    let errors: Vec<String> = if spin {
        let spun = spin_open_loop(&arrivals, &flows, req, resp, end, &mut out);
        out.finish();
        spun.err().into_iter().collect()
    } else { std::thread::scope(|scope| -> Vec<String> {
        let mut handles = Vec::new();
        if open {
            let mut writers = Vec::new();
            for (w, r) in ends {
                let (times_tx, times_rx) = mpsc::channel::<(i64, i64)>();
                let tx = tx.clone();
                handles.push(scope.spawn(move || read_replies(r, times_rx, tx, resp, end)));
                writers.push((w, times_tx));
            }
            let arrivals = &arrivals;
            handles.push(scope.spawn(move || schedule(arrivals, writers, req, end)));
        } else {
            for (s, _) in ends {
                let tx = tx.clone();
                handles.push(scope.spawn(move || closed_flow(s, tx, req, resp, burst, t0, end)));
            }
        }
        drop(tx);
        for sample in rx {
            out.add(sample);
        }
        out.finish();
        handles.into_iter().filter_map(|h| h.join().unwrap_or_else(|_| Err("a flow's thread panicked".into())).err()).collect()
    }) };
    for s in &flows {
        let _ = s.shutdown(Shutdown::Both);
    }
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    Ok(out.end_fields(a, open, scheduled))
}

/// The scheduler: each request written at its arrival time to the next flow in turn, its
/// intended and actual send times handed to that flow's reader; it stops at `end` (a client
/// that fell behind leaves the rest unsent, counted as unanswered: the run is bounded).
fn schedule(arrivals: &[i64], mut writers: Vec<(TcpStream, mpsc::Sender<(i64, i64)>)>,
            req: usize, end: i64) -> Result<(), String> {
    let buf = vec![0u8; req];
    let n = writers.len();
    for (k, &intended) in arrivals.iter().enumerate() {
        sleep_until_ns(intended);
        let (w, times) = &mut writers[k % n];
        let sent = mono_ns();
        if sent >= end {
            return Ok(());
        }
        w.write_all(&buf).map_err(|e| format!("send request: {e}"))?;
        if times.send((intended, sent)).is_err() {
            return Ok(()); // the reader gave up (its error is reported)
        }
    }
    Ok(())
}

/// A flow's reader: one reply per request the scheduler sent, in order; gives up on the
/// replies still owed `DRAIN_NS` after `end`.
fn read_replies(mut s: TcpStream, times: mpsc::Receiver<(i64, i64)>, out: mpsc::Sender<Sample>,
                resp: usize, end: i64) -> Result<(), String> {
    let mut buf = vec![0u8; resp];
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    for (intended, sent) in times {
        let mut got = 0;
        while got < resp {
            match s.read(&mut buf[got..]) {
                Ok(0) => return Err("the server closed the connection".into()),
                Ok(n) => got += n,
                Err(e) if is_timeout(&e) => {
                    if mono_ns() > end + DRAIN_NS {
                        return Ok(()); // the rest stay unanswered
                    }
                }
                Err(e) => return Err(format!("server stopped answering: {e}")),
            }
        }
        let _ = out.send(Sample { intended, sent, received: mono_ns() });
    }
    Ok(())
}

/// One flow of the spinning open loop: the requests not written yet (their intended times,
/// `partial` bytes of the first one written), those written and owed a reply (intended,
/// sent: when the write that took its last byte began), the reply bytes read toward the next
/// reply.
#[derive(Default)]
struct SpunFlow {
    unsent: VecDeque<i64>,
    partial: usize,
    owed: VecDeque<(i64, i64)>,
    read: usize,
}

/// The open loop in this thread, busy-polling: the requests due queued on the flows in turn
/// at their arrival times, written as far as each socket takes them, the replies read as
/// they come, until every reply came or `DRAIN_NS` after `end`. A loop that fell behind
/// still reads between its writes (the queue shows in `send_late_us`).
fn spin_open_loop(arrivals: &[i64], flows: &[TcpStream], req: usize, resp: usize, end: i64,
                  out: &mut Collected) -> Result<(), String> {
    for s in flows {
        s.set_nonblocking(true).map_err(|e| format!("non-blocking socket: {e}"))?;
    }
    let zeros = vec![0u8; req.max(1) * 16];
    let mut buf = vec![0u8; (resp * 64).max(65536)];
    let mut state: Vec<SpunFlow> = flows.iter().map(|_| SpunFlow::default()).collect();
    let mut fds: Vec<libc::pollfd> = flows
        .iter()
        .map(|s| libc::pollfd { fd: s.as_raw_fd(), events: 0, revents: 0 })
        .collect();
    let mut next = 0usize;
    loop {
        let now = mono_ns();
        while next < arrivals.len() && arrivals[next] <= now && now < end {
            state[next % flows.len()].unsent.push_back(arrivals[next]);
            next += 1;
        }
        if now >= end {
            next = arrivals.len(); // the rest are never sent (counted unanswered)
        }
        for (s, f) in flows.iter().zip(state.iter_mut()) {
            if !f.unsent.is_empty() {
                write_some(s, f, req, &zeros)?;
            }
        }
        if next >= arrivals.len() && state.iter().all(|f| f.owed.is_empty() && f.unsent.is_empty()) {
            return Ok(());
        }
        if now > end + DRAIN_NS {
            return Ok(()); // the rest stay unanswered
        }
        for (fd, f) in fds.iter_mut().zip(&state) {
            fd.events = if f.owed.is_empty() { 0 } else { libc::POLLIN };
            fd.revents = 0;
        }
        // SAFETY: `fds` is a live array of `fds.len()` pollfd structs; timeout 0: no wait.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        if ready < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("poll: {e}"));
        }
        if ready == 0 {
            std::hint::spin_loop();
            continue;
        }
        for (i, fd) in fds.iter().enumerate() {
            if fd.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0 {
                read_some(&flows[i], &mut state[i], &mut buf, resp, out)?;
            }
        }
    }
}

/// Write what the socket takes of the flow's unsent requests; each request whose last byte
/// went is owed a reply, sent when the write that took that byte began.
fn write_some(mut s: &TcpStream, f: &mut SpunFlow, req: usize, zeros: &[u8]) -> Result<(), String> {
    while !f.unsent.is_empty() {
        let left = (f.unsent.len() * req - f.partial).min(zeros.len());
        // the send time is taken before the write: on loopback the server can run and
        // answer inside it (its wake-up preempts this thread on the same CPU)
        let sent = mono_ns();
        match s.write(&zeros[..left]) {
            Ok(n) => {
                f.partial += n;
                while f.partial >= req {
                    let Some(intended) = f.unsent.pop_front() else { break };
                    f.partial -= req;
                    f.owed.push_back((intended, sent));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("send request: {e}")),
        }
    }
    Ok(())
}

/// Read what the flow's socket holds; every `resp` bytes complete the oldest reply owed.
fn read_some(mut s: &TcpStream, f: &mut SpunFlow, buf: &mut [u8], resp: usize,
             out: &mut Collected) -> Result<(), String> {
    loop {
        match s.read(buf) {
            Ok(0) => return Err("the server closed the connection".into()),
            Ok(n) => {
                let received = mono_ns();
                f.read += n;
                while f.read >= resp {
                    let Some((intended, sent)) = f.owed.pop_front() else {
                        return Err("the server sent a reply nobody asked for".into());
                    };
                    f.read -= resp;
                    out.add(Sample { intended, sent, received });
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("server stopped answering: {e}")),
        }
    }
}

/// A closed-loop flow: `burst` transactions in flight until `end` (each one's intended
/// time is its send time).
fn closed_flow(mut s: TcpStream, out: mpsc::Sender<Sample>, req: usize, resp: usize, burst: usize,
               t0: i64, end: i64) -> Result<(), String> {
    let rbuf = vec![0u8; req];
    let mut buf = vec![0u8; resp];
    let mut ring = std::collections::VecDeque::with_capacity(burst);
    sleep_until_ns(t0);
    for _ in 0..burst {
        ring.push_back(mono_ns());
        s.write_all(&rbuf).map_err(|e| format!("send request: {e}"))?;
    }
    while let Some(sent) = ring.pop_front() {
        s.read_exact(&mut buf).map_err(|e| format!("server stopped answering: {e}"))?;
        let now = mono_ns();
        if now < end {
            ring.push_back(mono_ns());
            s.write_all(&rbuf).map_err(|e| format!("send request: {e}"))?;
        }
        let _ = out.send(Sample { intended: sent, sent, received: now });
    }
    Ok(())
}

/// The collector's histograms and counts (the measured window only).
struct Collected {
    from: i64,
    to: i64,
    rtt: Recorder,
    service: Recorder,
    late: Recorder,
    interval: Recorder,
    interval_ns: i64,
    next_interval: i64,
    interval_index: u64,
    answered: u64,
    in_window: u64,
    last: i64,
}

impl Collected {
    fn new(from: i64, to: i64, interval_s: f64) -> Collected {
        let interval_ns = (interval_s * 1e9) as i64;
        Collected {
            from, to, rtt: Recorder::new(), service: Recorder::new(), late: Recorder::new(),
            interval: Recorder::new(), interval_ns, next_interval: from + interval_ns,
            interval_index: 0, answered: 0, in_window: 0, last: from,
        }
    }

    fn add(&mut self, s: Sample) {
        if s.intended < self.from || s.intended >= self.to {
            return;
        }
        let ns = |d: i64| d.max(0) as u64;
        self.rtt.record(ns(s.received - s.intended));
        self.service.record(ns(s.received - s.sent));
        self.late.record(ns(s.sent - s.intended));
        self.answered += 1;
        if s.received < self.to {
            self.in_window += 1;
        }
        self.last = self.last.max(s.received);
        while s.received >= self.next_interval && self.next_interval <= self.to {
            self.emit_interval();
        }
        self.interval.record(ns(s.received - s.intended));
    }

    /// Emit the intervals of the window not emitted yet (the last one ends with it).
    fn finish(&mut self) {
        while self.next_interval <= self.to {
            self.emit_interval();
        }
    }

    fn emit_interval(&mut self) {
        let secs = self.interval_ns as f64 / 1e9;
        let n = self.interval.count();
        emit(&event("interval", "rr", json!({"index": self.interval_index, "duration_s": r3(secs),
            "transactions": n, "tps": r3(n as f64 / secs), "rtt_us": self.interval.summary().to_json()})));
        self.interval.reset();
        self.interval_index += 1;
        self.next_interval += self.interval_ns;
    }

    fn end_fields(&self, a: &RrArgs, open: bool, scheduled: u64) -> Value {
        let window = (self.to - self.from) as f64 / 1e9;
        let achieved = self.in_window as f64 / window;
        let mut v = json!({
            "protocol": "tcp", "request": a.request, "response": a.response, "burst": a.burst,
            "flows": a.flows, "duration_s": r3(window), "transactions": self.answered,
            "tps": r3(achieved), "rtt_us": self.rtt.end_json(),
        });
        if open {
            v["open_loop"] = json!(true);
            v["arrivals"] = json!(a.arrivals.as_str());
            v["wait"] = json!(a.wait.as_str());
            v["offered_tps"] = json!(r3(a.rate));
            v["scheduled"] = json!(scheduled);
            v["unanswered"] = json!(scheduled.saturating_sub(self.answered));
            let share = self.in_window as f64 / scheduled.max(1) as f64;
            v["achieved_share"] = json!(r3(share));
            v["behind"] = json!(share < 0.95);
            v["service_us"] = self.service.end_json();
            v["send_late_us"] = self.late.summary().to_json();
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_arrivals_are_evenly_spaced() {
        let t = arrival_times(1000.0, Arrivals::Constant, 1, 0, 2.0);
        assert_eq!(t.len(), 1999); // 1 ms apart from t0 + 1 ms, the last before 2 s
        assert!(t.windows(2).all(|w| (w[1] - w[0] - 1_000_000).abs() <= 1));
    }

    #[test]
    fn poisson_arrivals_have_the_rate_and_exponential_gaps_and_follow_the_seed() {
        let t = arrival_times(5000.0, Arrivals::Poisson, 7, 0, 4.0);
        let n = t.len() as f64;
        assert!((n - 20_000.0).abs() < 4.0 * 20_000f64.sqrt(), "{n} arrivals");
        let gaps: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        // an exponential's standard deviation equals its mean; evenly spaced would give 0
        assert!((var.sqrt() / mean - 1.0).abs() < 0.05, "cv {}", var.sqrt() / mean);
        assert_eq!(t, arrival_times(5000.0, Arrivals::Poisson, 7, 0, 4.0));
        assert_ne!(t, arrival_times(5000.0, Arrivals::Poisson, 8, 0, 4.0));
    }
}
