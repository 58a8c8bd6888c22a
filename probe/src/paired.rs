//! `paired`: one client measuring several network paths in alternation (interleaved paths).
//!
//! Each path is a server reached from a network namespace of its own (a lab's client node).
//! At set-up the client joins each path's namespace in turn (`setns`) and makes that path's
//! sockets there: a socket stays in the namespace it was made in, so after set-up one thread
//! holds connections into every lab. It then measures in rounds: every round runs one slice
//! per path, in a fresh random order (seeded), so a path and its baseline are measured within
//! the same second and slow changes of the machine (hypervisor modes, a neighbour's load)
//! fall on every path alike. The first `--settle` seconds of each slice are run but not
//! recorded (the path warms up after its idle time); warm-up rounds are run and not reported.
//!
//! Per slice it reports what an `end` event of the single-path mode reports (rr/crr:
//! transactions, tps, the latency summary with its histogram; stream: bytes, goodput,
//! retransmits), plus the CPU spent during the slice: this process's own (`cpu_user_s`,
//! `cpu_sys_s`), each of the path's cgroup CPU counters (`cgroup_cpu_s`, in the order the
//! path lists its files: the server's node and the layer's daemons, idle while other paths
//! run) and the machine's `/proc/stat` totals (`proc_stat_s`).
//!
//! Modes: `rr` (TCP, one transaction in flight), `crr` (a connection per transaction: the
//! client joins the path's namespace at the start of each of its slices), `stream` (TCP bulk
//! transfer on the path's data connections; a slice ends once the server has read every byte
//! written in it, so its goodput is bytes delivered over the time to deliver them).

use crate::client::{connect, connect_with, request, resolve};
use crate::proto;
use crate::stats::{cpu_times, r3, Recorder};
use crate::util::{emit, mono_ns, tcp_total_retrans, Rng};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// One path as given on the command line (`--paths` is a JSON list of these).
#[derive(Clone, Debug)]
pub struct PathSpec {
    pub name: String,
    /// File of the client's network namespace (`/run/netns/NAME`); empty: this process's own.
    pub netns: String,
    /// HOST:PORT of the path's server as the client reaches it.
    pub server: String,
    /// CPU counters read before and after each slice: cgroup v1 `cpuacct.usage` (ns) or
    /// cgroup v2 `cpu.stat` (`usage_usec`).
    pub cpu_files: Vec<String>,
}

/// Parse `--paths`: `[{"name": ..., "netns": ..., "server": ..., "cpu_files": [...]}, ...]`.
pub fn parse_paths(text: &str) -> Result<Vec<PathSpec>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("--paths: malformed JSON: {e}"))?;
    let items = v.as_array().ok_or("--paths must be a JSON list")?;
    if items.len() < 2 {
        return Err("--paths needs at least 2 paths (a path and its baseline)".into());
    }
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let text = |key: &str| -> Result<String, String> {
            item.get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("--paths[{i}]: missing string {key:?}"))
        };
        let cpu_files = match item.get("cpu_files") {
            None => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|f| f.as_str().map(str::to_owned).ok_or(format!("--paths[{i}].cpu_files: strings only")))
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(format!("--paths[{i}].cpu_files must be a list")),
        };
        let spec = PathSpec { name: text("name")?, netns: item.get("netns").and_then(Value::as_str).unwrap_or("").into(), server: text("server")?, cpu_files };
        if out.iter().any(|p: &PathSpec| p.name == spec.name) {
            return Err(format!("--paths: name {:?} given twice", spec.name));
        }
        out.push(spec);
    }
    Ok(out)
}

/// What the paired client measures and how (see `cli::PairedArgs`).
#[derive(Clone, Debug)]
pub struct Plan {
    pub mode: String,
    pub paths: Vec<PathSpec>,
    pub slice: f64,
    /// Seconds of one visit to a path; 0 (or the slice): one visit a round.
    pub piece: f64,
    pub settle: f64,
    /// rr/crr: transactions at the start of each visit run and not recorded.
    pub warm: u32,
    pub rounds: u32,
    pub warmup_rounds: u32,
    pub seed: u64,
    pub request: u32,
    pub response: u32,
    pub streams: u32,
    pub send_size: usize,
    pub nodelay: bool,
    pub cpu: Option<usize>,
    pub fifo: Option<i32>,
}

// ------------------------------------------------------------------- namespaces and CPU

/// Join the network namespace in `file` (this thread only).
fn join(file: &File) -> Result<(), String> {
    // SAFETY: setns on an open namespace file descriptor.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(format!("setns: {}", io::Error::last_os_error()));
    }
    Ok(())
}

/// The open namespace files of the paths (None: the process's own namespace).
struct Namespaces {
    home: File,
    paths: Vec<Option<File>>,
}

impl Namespaces {
    fn open(paths: &[PathSpec]) -> Result<Namespaces, String> {
        let home = File::open("/proc/thread-self/ns/net").map_err(|e| format!("cannot open own netns: {e}"))?;
        let mut out = Vec::new();
        for p in paths {
            out.push(if p.netns.is_empty() {
                None
            } else {
                Some(File::open(&p.netns).map_err(|e| format!("path {}: cannot open netns {}: {e}", p.name, p.netns))?)
            });
        }
        Ok(Namespaces { home, paths: out })
    }

    /// Run `f` inside path `k`'s namespace, then return to this process's own.
    fn inside<T>(&self, k: usize, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
        self.enter(k)?;
        let out = f();
        join(&self.home)?;
        out
    }

    fn enter(&self, k: usize) -> Result<(), String> {
        match &self.paths[k] {
            Some(ns) => join(ns),
            None => join(&self.home),
        }
    }
}

/// Run this process (and the threads it makes from now on) under SCHED_FIFO at `priority`.
fn fifo(priority: i32) -> Result<(), String> {
    if !(1..=99).contains(&priority) {
        return Err("--fifo must be in 1..=99".into());
    }
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: a valid sched_param for this process.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(format!("cannot run under SCHED_FIFO: {}", io::Error::last_os_error()));
    }
    Ok(())
}

fn pin(cpu: usize) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t with one bit set, passed by pointer with its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("cannot pin to CPU {cpu}: {}", io::Error::last_os_error()));
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------- CPU counters

/// Seconds of CPU in a cgroup counter file (v1 `cpuacct.usage`: ns; v2 `cpu.stat`).
fn read_cgroup_cpu(path: &str) -> f64 {
    let Ok(text) = std::fs::read_to_string(path) else { return f64::NAN };
    if path.ends_with("cpu.stat") {
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("usage_usec ") {
                return v.trim().parse::<f64>().map(|us| us / 1e6).unwrap_or(f64::NAN);
            }
        }
        return f64::NAN;
    }
    text.trim().parse::<f64>().map(|ns| ns / 1e9).unwrap_or(f64::NAN)
}

const STAT_FIELDS: [&str; 8] = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"];

/// The machine's `/proc/stat` totals (first line), in clock ticks.
fn read_proc_stat() -> [u64; 8] {
    let mut out = [0u64; 8];
    if let Ok(text) = std::fs::read_to_string("/proc/stat") {
        if let Some(line) = text.lines().next() {
            for (slot, field) in out.iter_mut().zip(line.split_whitespace().skip(1)) {
                *slot = field.parse().unwrap_or(0);
            }
        }
    }
    out
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf with a constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// CPU readings at the start of a slice.
struct CpuMark {
    own: (f64, f64),
    cgroups: Vec<f64>,
    stat: [u64; 8],
}

impl CpuMark {
    fn take(files: &[String]) -> CpuMark {
        CpuMark { own: cpu_times(), cgroups: files.iter().map(|f| read_cgroup_cpu(f)).collect(), stat: read_proc_stat() }
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

// ------------------------------------------------------------------------ connections

/// A path's open connections.
enum Conn {
    Rr(TcpStream),
    Crr(SocketAddr),
    Stream { ctl: TcpStream, data: Vec<TcpStream> },
}

fn open(plan: &Plan, k: usize, ns: &Namespaces, session_s: f64) -> Result<Conn, String> {
    let p = &plan.paths[k];
    let server = resolve(&p.server)?;
    let what = |e: String| format!("path {}: {e}", p.name);
    ns.inside(k, || match plan.mode.as_str() {
        "rr" => {
            let mut s = connect(server)?;
            request(
                &mut s,
                &json!({"op": "rr", "proto": "tcp", "request": plan.request, "response": plan.response,
                        "duration": session_s}),
            )?;
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            Ok(Conn::Rr(s))
        }
        "crr" => {
            let mut s = connect(server)?;
            request(&mut s, &json!({"op": "hello"}))?;
            Ok(Conn::Crr(server))
        }
        _ => {
            let mut ctl = connect(server)?;
            let reply = request(
                &mut ctl,
                &json!({"op": "stream", "proto": "tcp", "streams": plan.streams, "duration": session_s}),
            )?;
            let session = reply.get("session").and_then(Value::as_u64).ok_or("control: reply without session")?;
            let mut data = Vec::new();
            for i in 0..plan.streams {
                let mut d = connect_with(server, plan.nodelay)?;
                request(&mut d, &json!({"op": "data", "session": session, "stream": i}))?;
                data.push(d);
            }
            Ok(Conn::Stream { ctl, data })
        }
    })
    .map_err(what)
}

fn close(conn: Conn) {
    match conn {
        Conn::Rr(s) => {
            let _ = s.shutdown(Shutdown::Both);
        }
        Conn::Crr(_) => {}
        Conn::Stream { mut ctl, data } => {
            for d in &data {
                let _ = d.shutdown(Shutdown::Write);
            }
            let _ = request(&mut ctl, &json!({"op": "finish"}));
        }
    }
}

// ----------------------------------------------------------------------------- slices

/// What one path measured in one round: the sum of its pieces (one piece when the slice is
/// not cut).
struct Tally {
    mode: Mode,
    rec: Recorder,
    /// rr/crr: seconds from the first recorded transaction's start to the last one's end,
    /// summed over the pieces; stream: seconds from the start of writing to the last byte
    /// read, summed.
    measured: f64,
    connect_errors: u64,
    /// rr/crr: seconds of the pieces run before their first recorded transaction.
    unrecorded: f64,
    bytes: u64,
    retransmits: u64,
    drain: f64,
    own: (f64, f64),
    cgroups: Vec<f64>,
    stat: [u64; 8],
    start_ns: Option<i64>,
    end_ns: i64,
    pieces: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Rr,
    Crr,
    Stream,
}

impl Tally {
    fn new(mode: Mode, files: usize) -> Tally {
        Tally { mode, rec: Recorder::new(), measured: 0.0, connect_errors: 0, unrecorded: 0.0, bytes: 0, retransmits: 0,
                drain: 0.0, own: (0.0, 0.0), cgroups: vec![0.0; files], stat: [0; 8], start_ns: None,
                end_ns: 0, pieces: 0 }
    }

    /// Add the CPU spent since `mark` (one piece's).
    fn add_cpu(&mut self, mark: &CpuMark, files: &[String]) {
        let now = CpuMark::take(files);
        self.own.0 += now.own.0 - mark.own.0;
        self.own.1 += now.own.1 - mark.own.1;
        for ((sum, a), b) in self.cgroups.iter_mut().zip(&now.cgroups).zip(&mark.cgroups) {
            let d = a - b;
            // an unreadable counter makes the slice's value unknown (null), not zero
            *sum = if d.is_finite() { *sum + d.max(0.0) } else { f64::NAN };
        }
        for (k, slot) in self.stat.iter_mut().enumerate() {
            *slot += now.stat[k].saturating_sub(mark.stat[k]);
        }
    }

    /// The slice's event fields: what a single-path `end` event says, and the CPU fields.
    fn fields(&self, hz: f64) -> Value {
        let mut out = match self.mode {
            Mode::Rr | Mode::Crr => latency_fields(&self.rec, self.measured),
            Mode::Stream => json!({"bytes": self.bytes, "duration_s": r3(self.measured),
                                   "goodput_bps": r3(self.bytes as f64 * 8.0 / self.measured.max(1e-9)),
                                   "retransmits": self.retransmits, "drain_s": r3(self.drain)}),
        };
        if self.mode == Mode::Crr {
            out["connect_errors"] = json!(self.connect_errors);
        }
        if self.mode != Mode::Stream {
            out["unrecorded_s"] = json!(round6(self.unrecorded));
        }
        out["cpu_user_s"] = json!(round6(self.own.0));
        out["cpu_sys_s"] = json!(round6(self.own.1));
        let cg: Vec<Value> =
            self.cgroups.iter().map(|v| if v.is_finite() { json!(round6(*v)) } else { Value::Null }).collect();
        out["cgroup_cpu_s"] = json!(cg);
        let mut stat = serde_json::Map::new();
        for (k, name) in STAT_FIELDS.iter().enumerate() {
            stat.insert((*name).into(), json!(round6(self.stat[k] as f64 / hz)));
        }
        out["proc_stat_s"] = Value::Object(stat);
        if self.pieces > 1 {
            out["pieces"] = json!(self.pieces);
        }
        out
    }
}

/// Run one piece of path `k` for `length` seconds, adding what it measured to `tally`.
fn piece(plan: &Plan, k: usize, length: f64, conn: &mut Conn, ns: &Namespaces, bufs: &mut Bufs,
         tally: &mut Tally) -> Result<(), String> {
    match conn {
        Conn::Rr(s) => rr_piece(plan, length, s, bufs, tally),
        Conn::Crr(addr) => {
            ns.enter(k)?;
            let out = crr_piece(plan, length, *addr, bufs, tally);
            join(&ns.home)?;
            out
        }
        Conn::Stream { ctl, data } => stream_piece(plan.send_size, length, ctl, data, tally),
    }
}

struct Bufs {
    req: Vec<u8>,
    resp: Vec<u8>,
    crr: Vec<u8>,
}

fn latency_fields(rec: &Recorder, measured: f64) -> Value {
    let n = rec.count();
    json!({"transactions": n, "duration_s": r3(measured), "tps": r3(n as f64 / measured.max(1e-9)),
           "rtt_us": rec.end_json()})
}

/// The clock of one piece: when it ends, and which transactions it records (those begun
/// after the settling time).
struct PieceClock {
    start: Instant,
    settled: Instant,
    /// Transactions still to run unrecorded (the path's first after its idle time).
    skip: u32,
    end: Instant,
    first: Option<Instant>,
    last: Instant,
    rec: Recorder,
}

impl PieceClock {
    fn start(plan: &Plan, length: f64) -> PieceClock {
        let start = Instant::now();
        let settled = start + Duration::from_secs_f64(plan.settle);
        PieceClock { start, settled, skip: plan.warm, end: start + Duration::from_secs_f64(length), first: None, last: settled,
                     rec: Recorder::new() }
    }

    /// Record a transaction begun at `t0` and done at `now`; whether the piece is over.
    fn done(&mut self, t0: Instant, now: Instant) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
        } else if t0 >= self.settled {
            self.first.get_or_insert(t0);
            self.rec.record((now - t0).as_nanos() as u64);
            self.last = now;
        }
        now >= self.end
    }

    fn add_to(&self, tally: &mut Tally) {
        tally.rec.add(&self.rec);
        tally.measured += (self.last - self.first.unwrap_or(self.last)).as_secs_f64();
        // the visit's time before its first recorded transaction: settling and warm-up
        tally.unrecorded += (self.first.unwrap_or_else(Instant::now) - self.start).as_secs_f64();
    }
}

fn rr_piece(plan: &Plan, length: f64, s: &mut TcpStream, b: &mut Bufs, tally: &mut Tally) -> Result<(), String> {
    let mut clock = PieceClock::start(plan, length);
    loop {
        let t0 = Instant::now();
        s.write_all(&b.req).map_err(|e| format!("send request: {e}"))?;
        s.read_exact(&mut b.resp).map_err(|e| format!("server stopped answering: {e}"))?;
        if clock.done(t0, Instant::now()) {
            clock.add_to(tally);
            return Ok(());
        }
    }
}

fn crr_piece(plan: &Plan, length: f64, server: SocketAddr, b: &mut Bufs, tally: &mut Tally) -> Result<(), String> {
    let mut clock = PieceClock::start(plan, length);
    let mut errors = 0u64;
    let mut eof = [0u8; 16];
    loop {
        let t0 = Instant::now();
        match TcpStream::connect(server) {
            Ok(mut c) => {
                let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                c.write_all(&b.crr).map_err(|e| format!("send request: {e}"))?;
                c.read_exact(&mut b.resp).map_err(|e| format!("server stopped answering: {e}"))?;
                let _ = c.read(&mut eof);
                drop(c);
                if clock.done(t0, Instant::now()) {
                    break;
                }
            }
            Err(e) => {
                errors += 1;
                if errors > 100 || e.kind() == io::ErrorKind::ConnectionRefused {
                    return Err(format!("cannot connect to {server}: {e}"));
                }
                std::thread::sleep(Duration::from_millis(1));
                if Instant::now() >= clock.end {
                    break;
                }
            }
        }
    }
    clock.add_to(tally);
    tally.connect_errors += errors;
    Ok(())
}

fn server_bytes(ctl: &mut TcpStream) -> Result<u64, String> {
    let r = request(ctl, &json!({"op": "mark"}))?;
    Ok(r.get("bytes").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_u64).sum()).unwrap_or(0))
}

/// Write on every data connection for `length` seconds, then wait until the server has read
/// every byte: goodput = bytes delivered / (start to last byte read).
fn stream_piece(size: usize, length: f64, ctl: &mut TcpStream, data: &mut [TcpStream], tally: &mut Tally) -> Result<(), String> {
    let before = server_bytes(ctl)?;
    let retrans0: u64 = data.iter().map(tcp_total_retrans).sum();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(length);
    let written: Vec<Result<u64, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = data
            .iter_mut()
            .map(|d| {
                scope.spawn(move || {
                    let buf = vec![0x5au8; size];
                    let mut n = 0u64;
                    while Instant::now() < end {
                        match d.write(&buf) {
                            Ok(w) => n += w as u64,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(format!("stream send: {e}")),
                        }
                    }
                    Ok(n)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("sender panicked".into()))).collect()
    });
    let mut sent = 0u64;
    for w in written {
        sent += w?;
    }
    let stopped = Instant::now();
    let deadline = stopped + Duration::from_secs(30);
    let mut got;
    loop {
        got = server_bytes(ctl)?.saturating_sub(before);
        if got >= sent {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("stream: the server read {got} of {sent} bytes within 30 s"));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let done = Instant::now();
    tally.bytes += got;
    tally.measured += (done - start).as_secs_f64();
    tally.drain += (done - stopped).as_secs_f64();
    tally.retransmits += data.iter().map(tcp_total_retrans).sum::<u64>().saturating_sub(retrans0);
    Ok(())
}

// -------------------------------------------------------------------------------- run

pub fn check(plan: &Plan) -> Result<(), String> {
    if !matches!(plan.mode.as_str(), "rr" | "crr" | "stream") {
        return Err(format!("--mode must be rr, crr or stream, got {:?}", plan.mode));
    }
    if !(plan.slice >= 0.001 && plan.slice <= 60.0) {
        return Err("--slice must be in [0.001, 60] seconds".into());
    }
    if !(plan.piece == 0.0 || (plan.piece >= 0.001 && plan.piece <= plan.slice)) {
        return Err("--piece must be 0 (the whole slice) or in [0.001, --slice]".into());
    }
    if !(plan.settle >= 0.0 && plan.settle < plan.piece_s()) {
        return Err("--settle must be in [0, --piece) (or [0, --slice) without pieces)".into());
    }
    if plan.rounds == 0 || plan.rounds > 1_000_000 {
        return Err("--rounds must be in 1..=1000000".into());
    }
    if plan.mode == "crr" && plan.request < proto::CRR_HEADER as u32 {
        return Err(format!("crr --request must be at least {} bytes (the header)", proto::CRR_HEADER));
    }
    if plan.request == 0 || plan.response == 0 || plan.request as u64 > proto::MAX_TCP_MSG || plan.response as u64 > proto::MAX_TCP_MSG {
        return Err("--request and --response must be in 1..=67108864".into());
    }
    if plan.streams == 0 || plan.streams as u64 > proto::MAX_STREAMS {
        return Err(format!("--streams must be in 1..={}", proto::MAX_STREAMS));
    }
    if !(1..=(64 << 20)).contains(&plan.send_size) {
        return Err("--send-size must be in 1..=67108864".into());
    }
    Ok(())
}

impl Plan {
    /// Seconds of one visit to a path.
    pub fn piece_s(&self) -> f64 {
        if self.piece > 0.0 {
            self.piece.min(self.slice)
        } else {
            self.slice
        }
    }

    /// The lengths of a path's pieces in one round: equal pieces adding up to the slice.
    pub fn pieces(&self) -> Vec<f64> {
        let count = ((self.slice / self.piece_s()) - 1e-9).ceil().max(1.0) as usize;
        vec![self.slice / count as f64; count]
    }

    fn mode(&self) -> Mode {
        match self.mode.as_str() {
            "rr" => Mode::Rr,
            "crr" => Mode::Crr,
            _ => Mode::Stream,
        }
    }
}

pub fn run(plan: &Plan) -> Result<(), String> {
    check(plan)?;
    if let Some(cpu) = plan.cpu {
        pin(cpu)?;
    }
    if let Some(priority) = plan.fifo {
        fifo(priority)?;
    }
    let n = plan.paths.len();
    let total_rounds = plan.rounds + plan.warmup_rounds;
    let pieces = plan.pieces();
    // the servers keep each session for its duration plus slack: the whole run, generously
    let session_s = (total_rounds as f64 * n as f64 * (plan.slice * 2.0 + 0.05 + 0.005 * pieces.len() as f64) + 60.0)
        .min(proto::MAX_DURATION);
    emit(&json!({"event": "start", "mode": "paired", "workload": plan.mode, "t_ns": mono_ns(),
                 "paths": plan.paths.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
                 "slice_s": plan.slice, "piece_s": plan.piece_s(), "pieces": pieces.len(),
                 "settle_s": plan.settle, "warm": plan.warm, "rounds": plan.rounds,
                 "warmup_rounds": plan.warmup_rounds, "seed": plan.seed, "request": plan.request,
                 "response": plan.response, "streams": plan.streams, "send_size": plan.send_size,
                 "nodelay": plan.nodelay, "cpu": plan.cpu, "fifo": plan.fifo}));
    let ns = Namespaces::open(&plan.paths)?;
    let mut conns = Vec::new();
    for k in 0..n {
        conns.push(open(plan, k, &ns, session_s)?);
    }
    let mut bufs = Bufs {
        req: vec![0u8; plan.request as usize],
        resp: vec![0u8; plan.response as usize],
        crr: proto::crr_request(plan.request, plan.response),
    };
    let hz = clock_ticks();
    let mut rng = Rng::new(plan.seed);
    let started = Instant::now();
    let mut slices = 0u64;
    for round in 0..total_rounds {
        let mut tallies: Vec<Tally> = plan.paths.iter().map(|p| Tally::new(plan.mode(), p.cpu_files.len())).collect();
        let mut first_order = Vec::new();
        for &length in &pieces {
            // a fresh random order for every cycle over the paths
            let order = rng.order(n);
            if first_order.is_empty() {
                first_order = order.clone();
            }
            for &k in &order {
                let files = &plan.paths[k].cpu_files;
                let mark = CpuMark::take(files);
                let tally = &mut tallies[k];
                tally.start_ns.get_or_insert_with(mono_ns);
                piece(plan, k, length, &mut conns[k], &ns, &mut bufs, tally)?;
                tally.add_cpu(&mark, files);
                tally.end_ns = mono_ns();
                tally.pieces += 1;
            }
        }
        if round < plan.warmup_rounds {
            continue;
        }
        for (position, &k) in first_order.iter().enumerate() {
            let tally = &tallies[k];
            let mut ev = tally.fields(hz);
            ev["event"] = json!("slice");
            ev["mode"] = json!(plan.mode);
            ev["path"] = json!(plan.paths[k].name);
            ev["round"] = json!(round - plan.warmup_rounds);
            ev["position"] = json!(position);
            ev["start_ns"] = json!(tally.start_ns.unwrap_or(tally.end_ns));
            ev["t_ns"] = json!(tally.end_ns);
            emit(&ev);
            slices += 1;
        }
    }
    for c in conns {
        close(c);
    }
    emit(&json!({"event": "end", "mode": "paired", "workload": plan.mode, "t_ns": mono_ns(),
                 "rounds": plan.rounds, "slices": slices, "wall_s": r3(started.elapsed().as_secs_f64())}));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_are_permutations_and_vary() {
        let mut rng = Rng::new(7);
        let a = rng.order(10);
        let b = rng.order(10);
        let mut s = a.clone();
        s.sort_unstable();
        assert_eq!(s, (0..10).collect::<Vec<_>>());
        assert_ne!(a, b);
        assert_eq!(Rng::new(7).order(10), a, "seeded");
    }

    #[test]
    fn every_position_is_taken_by_every_path() {
        // over many rounds each path leads about equally often (no path always first)
        let mut rng = Rng::new(1);
        let mut first = [0u32; 4];
        for _ in 0..4000 {
            first[rng.order(4)[0]] += 1;
        }
        for c in first {
            assert!((800..1200).contains(&c), "{first:?}");
        }
    }

    fn plan(slice: f64, piece: f64, settle: f64) -> Plan {
        Plan { mode: "rr".into(), paths: Vec::new(), slice, piece, settle, warm: 0, rounds: 1, warmup_rounds: 0, seed: 1,
               request: 100, response: 200, streams: 1, send_size: 1024, nodelay: false, cpu: None, fifo: None }
    }

    #[test]
    fn a_slice_is_cut_into_equal_pieces_that_add_up_to_it() {
        assert_eq!(plan(0.1, 0.0, 0.0).pieces(), vec![0.1]);
        assert_eq!(plan(0.1, 0.1, 0.0).pieces(), vec![0.1]);
        let p = plan(0.1, 0.01, 0.0).pieces();
        assert_eq!(p.len(), 10);
        assert!((p.iter().sum::<f64>() - 0.1).abs() < 1e-12);
        // a piece that does not divide the slice: more, shorter pieces (never a longer one)
        let p = plan(0.1, 0.03, 0.0).pieces();
        assert_eq!(p.len(), 4);
        assert!(p.iter().all(|x| (x - 0.025).abs() < 1e-12));
        assert!(check(&plan(0.1, 0.2, 0.0)).is_err(), "a piece longer than its slice");
        assert!(check(&plan(0.1, 0.01, 0.01)).is_err(), "settling as long as a piece");
        assert!(check(&plan(0.1, 0.01, 0.005)).is_ok());
    }

    #[test]
    fn a_round_tally_adds_its_pieces() {
        let mut tally = Tally::new(Mode::Rr, 1);
        for ns in [10_000u64, 20_000] {
            let mut clock = PieceClock::start(&plan(0.1, 0.01, 0.0), 0.01);
            let t0 = Instant::now();
            clock.done(t0, t0 + Duration::from_nanos(ns));
            clock.add_to(&mut tally);
            tally.pieces += 1;
        }
        let f = tally.fields(100.0);
        assert_eq!(f["transactions"], json!(2));
        assert_eq!(f["pieces"], json!(2));
        assert!((f["duration_s"].as_f64().unwrap()) < 0.001);
        assert_eq!(f["rtt_us"]["max"], json!(20.0));
        // the first transactions of a visit warm the path and are not recorded
        let mut warm = plan(0.1, 0.01, 0.0);
        warm.warm = 2;
        let mut clock = PieceClock::start(&warm, 0.01);
        let t0 = Instant::now();
        for us in [50u64, 40, 10] {
            clock.done(t0, t0 + Duration::from_micros(us));
        }
        assert_eq!(clock.rec.count(), 1);
        assert_eq!(clock.rec.summary().max, 10.0);
        let mut t = Tally::new(Mode::Rr, 0);
        clock.add_to(&mut t);
        assert!(t.unrecorded >= 0.0 && t.unrecorded < 0.01, "{}", t.unrecorded);
        // a counter that cannot be read makes the slice's CPU unknown, not zero
        let files = vec!["/nonexistent/vnb-cpu.stat".to_string()];
        let mark = CpuMark::take(&files);
        tally.add_cpu(&mark, &files);
        assert_eq!(tally.fields(100.0)["cgroup_cpu_s"], json!([Value::Null]));
    }

    #[test]
    fn paths_parse_and_refuse() {
        let p = parse_paths(r#"[{"name":"a","netns":"","server":"127.0.0.1:1"},{"name":"b","server":"127.0.0.1:2","cpu_files":["/x"]}]"#).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].cpu_files, vec!["/x".to_string()]);
        assert!(parse_paths(r#"[{"name":"a","server":"x:1"}]"#).is_err());
        assert!(parse_paths(r#"[{"name":"a","server":"x:1"},{"name":"a","server":"x:2"}]"#).is_err());
        assert!(parse_paths(r#"[{"name":"a"},{"name":"b","server":"x:2"}]"#).is_err());
        assert!(parse_paths("{}").is_err());
    }

    #[test]
    fn cgroup_counters_parse() {
        let dir = std::env::temp_dir().join(format!("vnbp-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let v1 = dir.join("cpuacct.usage");
        std::fs::write(&v1, "2500000000\n").unwrap();
        let v2 = dir.join("cpu.stat");
        std::fs::write(&v2, "usage_usec 1500000\nuser_usec 1\n").unwrap();
        assert_eq!(read_cgroup_cpu(v1.to_str().unwrap()), 2.5);
        assert_eq!(read_cgroup_cpu(v2.to_str().unwrap()), 1.5);
        assert!(read_cgroup_cpu(dir.join("none").to_str().unwrap()).is_nan());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
