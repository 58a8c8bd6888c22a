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
use crate::util::{emit, mono_ns, tcp_total_retrans};
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
    pub settle: f64,
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

    /// The slice's CPU fields (added to its event).
    fn since(&self, files: &[String], hz: f64, out: &mut Value) {
        let now = CpuMark::take(files);
        out["cpu_user_s"] = json!(round6(now.own.0 - self.own.0));
        out["cpu_sys_s"] = json!(round6(now.own.1 - self.own.1));
        let cg: Vec<Value> = now
            .cgroups
            .iter()
            .zip(&self.cgroups)
            .map(|(a, b)| if (a - b).is_finite() { json!(round6((a - b).max(0.0))) } else { Value::Null })
            .collect();
        out["cgroup_cpu_s"] = json!(cg);
        let mut stat = serde_json::Map::new();
        for (k, name) in STAT_FIELDS.iter().enumerate() {
            stat.insert((*name).into(), json!(round6(now.stat[k].saturating_sub(self.stat[k]) as f64 / hz)));
        }
        out["proc_stat_s"] = Value::Object(stat);
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

// ------------------------------------------------------------------------------ order

/// xorshift64*: a small seeded generator for the order of paths in each round.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A random permutation of 0..n (Fisher-Yates).
    fn order(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
        v
    }
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

/// Run one slice of path `k`; its event fields (the CPU fields are added by the caller).
fn slice(plan: &Plan, k: usize, conn: &mut Conn, ns: &Namespaces, bufs: &mut Bufs) -> Result<Value, String> {
    match conn {
        Conn::Rr(s) => rr_slice(plan, s, bufs),
        Conn::Crr(addr) => {
            ns.enter(k)?;
            let out = crr_slice(plan, *addr, bufs);
            join(&ns.home)?;
            out
        }
        Conn::Stream { ctl, data } => stream_slice(plan, ctl, data),
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

/// The clock of one slice: when it ends, and which transactions it records (those begun
/// after the settling time).
struct SliceClock {
    settled: Instant,
    end: Instant,
    first: Option<Instant>,
    last: Instant,
    rec: Recorder,
}

impl SliceClock {
    fn start(plan: &Plan) -> SliceClock {
        let start = Instant::now();
        let settled = start + Duration::from_secs_f64(plan.settle);
        SliceClock { settled, end: start + Duration::from_secs_f64(plan.slice), first: None, last: settled, rec: Recorder::new() }
    }

    /// Record a transaction begun at `t0` and done at `now`; whether the slice is over.
    fn done(&mut self, t0: Instant, now: Instant) -> bool {
        if t0 >= self.settled {
            self.first.get_or_insert(t0);
            self.rec.record((now - t0).as_nanos() as u64);
            self.last = now;
        }
        now >= self.end
    }

    fn fields(&self) -> Value {
        latency_fields(&self.rec, (self.last - self.first.unwrap_or(self.last)).as_secs_f64())
    }
}

fn rr_slice(plan: &Plan, s: &mut TcpStream, b: &mut Bufs) -> Result<Value, String> {
    let mut clock = SliceClock::start(plan);
    loop {
        let t0 = Instant::now();
        s.write_all(&b.req).map_err(|e| format!("send request: {e}"))?;
        s.read_exact(&mut b.resp).map_err(|e| format!("server stopped answering: {e}"))?;
        if clock.done(t0, Instant::now()) {
            return Ok(clock.fields());
        }
    }
}

fn crr_slice(plan: &Plan, server: SocketAddr, b: &mut Bufs) -> Result<Value, String> {
    let mut clock = SliceClock::start(plan);
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
    let mut out = clock.fields();
    out["connect_errors"] = json!(errors);
    Ok(out)
}

fn server_bytes(ctl: &mut TcpStream) -> Result<u64, String> {
    let r = request(ctl, &json!({"op": "mark"}))?;
    Ok(r.get("bytes").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_u64).sum()).unwrap_or(0))
}

/// Write on every data connection until the slice ends, then wait until the server has read
/// every byte: goodput = bytes delivered / (start to last byte read).
fn stream_slice(plan: &Plan, ctl: &mut TcpStream, data: &mut [TcpStream]) -> Result<Value, String> {
    let before = server_bytes(ctl)?;
    let retrans0: u64 = data.iter().map(tcp_total_retrans).sum();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(plan.slice);
    let size = plan.send_size;
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
    let secs = (done - start).as_secs_f64();
    let retrans: u64 = data.iter().map(tcp_total_retrans).sum::<u64>().saturating_sub(retrans0);
    Ok(json!({"bytes": got, "duration_s": r3(secs), "goodput_bps": r3(got as f64 * 8.0 / secs.max(1e-9)),
              "retransmits": retrans, "drain_s": r3((done - stopped).as_secs_f64())}))
}

// -------------------------------------------------------------------------------- run

pub fn check(plan: &Plan) -> Result<(), String> {
    if !matches!(plan.mode.as_str(), "rr" | "crr" | "stream") {
        return Err(format!("--mode must be rr, crr or stream, got {:?}", plan.mode));
    }
    if !(plan.slice >= 0.001 && plan.slice <= 60.0) {
        return Err("--slice must be in [0.001, 60] seconds".into());
    }
    if !(plan.settle >= 0.0 && plan.settle < plan.slice) {
        return Err("--settle must be in [0, --slice)".into());
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
    // the servers keep each session for its duration plus slack: the whole run, generously
    let session_s = (total_rounds as f64 * n as f64 * (plan.slice * 2.0 + 0.05) + 60.0).min(proto::MAX_DURATION);
    emit(&json!({"event": "start", "mode": "paired", "workload": plan.mode, "t_ns": mono_ns(),
                 "paths": plan.paths.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
                 "slice_s": plan.slice, "settle_s": plan.settle, "rounds": plan.rounds,
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
        let order = rng.order(n);
        let warm = round < plan.warmup_rounds;
        for (position, &k) in order.iter().enumerate() {
            let files = &plan.paths[k].cpu_files;
            let mark = CpuMark::take(files);
            let t_start = mono_ns();
            let mut ev = slice(plan, k, &mut conns[k], &ns, &mut bufs)?;
            if warm {
                continue;
            }
            mark.since(files, hz, &mut ev);
            ev["event"] = json!("slice");
            ev["mode"] = json!(plan.mode);
            ev["path"] = json!(plan.paths[k].name);
            ev["round"] = json!(round - plan.warmup_rounds);
            ev["position"] = json!(position);
            ev["start_ns"] = json!(t_start);
            ev["t_ns"] = json!(mono_ns());
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
