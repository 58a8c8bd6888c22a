//! Client side of rr, crr, stream, gaps and media. Every function emits `start`, `interval`
//! and `end` events on stdout and returns Err(message) on failure (main turns it into an
//! `error` event and a non-zero exit).

use crate::cli::{Common, CrrArgs, GapsArgs, MediaArgs, Protocol, RrArgs, StreamArgs};
use crate::proto::{self, kind, UdpHeader};
use crate::stats::{cpu_times, r3, with_hist, Jitter, Recorder, Summary};
use crate::util::{self, emit, is_timeout, mono_ns, read_json, write_json};
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a control request waits for its reply: behind a saturated, delayed WAN link
/// (a UDP stream into a shaped emulated circuit) the reply can queue for seconds.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);

/// Resolve HOST:PORT to one socket address.
pub fn resolve(server: &str) -> Result<SocketAddr, String> {
    server
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {server:?} (want HOST:PORT): {e}"))?
        .next()
        .ok_or_else(|| format!("{server:?} resolves to no address"))
}

/// Open a TCP connection with a connect timeout, TCP_NODELAY and I/O timeouts (control,
/// rr and crr connections: every message leaves at once).
pub fn connect(addr: SocketAddr) -> Result<TcpStream, String> {
    connect_with(addr, true)
}

/// Open a TCP connection with a connect timeout and I/O timeouts; TCP_NODELAY as `nodelay`
/// says (false: Nagle's algorithm on, the kernel default, as for stream data connections).
pub fn connect_with(addr: SocketAddr, nodelay: bool) -> Result<TcpStream, String> {
    let s = TcpStream::connect_timeout(&addr, IO_TIMEOUT)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    s.set_nodelay(nodelay).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
    Ok(s)
}

/// Send a control line and read the reply; an `ok:false` reply becomes Err(its error).
pub fn request(s: &mut TcpStream, msg: &Value) -> Result<Value, String> {
    let _ = s.set_read_timeout(Some(CONTROL_TIMEOUT));
    write_json(s, msg).map_err(|e| format!("control: send failed: {e}"))?;
    let reply = read_json(s).map_err(|e| format!("control: no reply from server: {e}"))?;
    if reply.get("ok").and_then(Value::as_bool) == Some(true) {
        Ok(reply)
    } else {
        let msg = reply.get("error").and_then(Value::as_str).unwrap_or("server refused");
        Err(format!("server error: {msg}"))
    }
}

fn session_of(reply: &Value) -> Result<u32, String> {
    reply
        .get("session")
        .and_then(Value::as_u64)
        .map(|x| x as u32)
        .ok_or_else(|| "control: reply without session".to_string())
}

fn u64s(v: &Value, key: &str) -> Vec<u64> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|x| x.as_u64().unwrap_or(0)).collect())
        .unwrap_or_default()
}

/// Build an event object: {"event": kind, "mode": mode, "t_ns": now, ...fields}.
pub fn event(kind: &str, mode: &str, fields: Value) -> Value {
    let mut m = Map::new();
    m.insert("event".into(), json!(kind));
    m.insert("mode".into(), json!(mode));
    m.insert("t_ns".into(), json!(mono_ns()));
    if let Value::Object(f) = fields {
        m.extend(f);
    }
    Value::Object(m)
}

/// Emit the `end` event, adding the process CPU times.
pub fn emit_end(mode: &str, fields: Value) {
    let (u, s) = cpu_times();
    let mut e = event("end", mode, fields);
    e["cpu_user_s"] = json!((u * 1e6).round() / 1e6);
    e["cpu_sys_s"] = json!((s * 1e6).round() / 1e6);
    emit(&e);
}

fn check_common(c: &Common) -> Result<(), String> {
    if !(c.duration > 0.0 && c.duration <= proto::MAX_DURATION) {
        return Err(format!("--duration must be in (0, {}]", proto::MAX_DURATION));
    }
    if !(c.interval > 0.0) {
        return Err("--interval must be positive".into());
    }
    Ok(())
}

fn check_warmup(w: f64) -> Result<(), String> {
    if !(0.0..=3600.0).contains(&w) {
        return Err("--warmup must be in [0, 3600]".into());
    }
    Ok(())
}

fn udp_socket_to(server: SocketAddr) -> Result<UdpSocket, String> {
    let local: SocketAddr = if server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().unwrap();
    let u = UdpSocket::bind(local).map_err(|e| format!("udp bind: {e}"))?;
    u.connect(server).map_err(|e| format!("udp connect to {server}: {e}"))?;
    Ok(u)
}

// ---------------------------------------------------------------------------------------- rr

pub fn rr(a: &RrArgs) -> Result<(), String> {
    check_common(&a.common)?;
    check_warmup(a.warmup)?;
    if a.burst == 0 || a.burst > 1024 {
        return Err("--burst must be in 1..=1024".into());
    }
    if a.flows == 0 || a.flows > 1024 {
        return Err("--flows must be in 1..=1024".into());
    }
    if !(a.rate >= 0.0 && a.rate <= 1e6) {
        return Err("--rate must be in [0, 1e6] (0: closed loop)".into());
    }
    let many = a.flows > 1 || a.rate > 0.0;
    if many && a.protocol == Protocol::Udp {
        return Err("--flows and --rate apply to TCP only".into());
    }
    if a.rate > 0.0 && a.burst != 1 {
        return Err("--burst applies to the closed loop (an open loop has no fixed number in flight)".into());
    }
    if a.rate == 0.0 && a.wait == crate::cli::Wait::Spin {
        return Err("--wait spin applies to the open loop (give --rate)".into());
    }
    let server = resolve(&a.common.server)?;
    emit(&event(
        "start",
        "rr",
        json!({"server": a.common.server, "protocol": a.protocol.as_str(), "request": a.request,
               "response": a.response, "burst": a.burst, "duration_s": a.common.duration,
               "warmup_s": a.warmup, "flows": a.flows, "rate": a.rate,
               "arrivals": if a.rate > 0.0 { Some(a.arrivals.as_str()) } else { None },
               "wait": if a.rate > 0.0 { Some(a.wait.as_str()) } else { None }}),
    ));
    if many {
        emit_end("rr", crate::flows::rr_flows(a, server)?);
        return Ok(());
    }
    let mut ctl = connect(server)?;
    request(
        &mut ctl,
        &json!({"op": "rr", "proto": a.protocol.as_str(), "request": a.request,
                "response": a.response, "duration": a.common.duration + a.warmup}),
    )?;
    let res = match a.protocol {
        Protocol::Tcp => rr_tcp(a, ctl),
        Protocol::Udp => rr_udp(a, server, ctl),
    }?;
    let (count, elapsed, rec, lost) = res;
    let mut end = json!({
        "protocol": a.protocol.as_str(), "request": a.request, "response": a.response,
        "burst": a.burst, "duration_s": r3(elapsed), "transactions": count,
        "tps": r3(count as f64 / elapsed.max(1e-9)), "rtt_us": rec.end_json(),
    });
    if a.protocol == Protocol::Udp {
        end["lost"] = json!(lost);
    }
    emit_end("rr", end);
    Ok(())
}

struct Intervals {
    period: Duration,
    next: Instant,
    start: Instant,
    index: u64,
}

impl Intervals {
    fn new(period_s: f64) -> Intervals {
        let now = Instant::now();
        let period = Duration::from_secs_f64(period_s);
        Intervals { period, next: now + period, start: now, index: 0 }
    }

    #[inline]
    fn due(&self, now: Instant) -> bool {
        now >= self.next
    }

    /// Seconds covered by the interval ending now; advances to the next one.
    fn advance(&mut self, now: Instant) -> f64 {
        let begin = self.next - self.period;
        self.index += 1;
        while self.next <= now {
            self.next += self.period;
        }
        (now - begin.max(self.start)).as_secs_f64()
    }
}

fn rr_interval(mode: &str, iv: &mut Intervals, now: Instant, irec: &mut Recorder) {
    let idx = iv.index;
    let secs = iv.advance(now);
    let n = irec.count();
    emit(&event(
        "interval",
        mode,
        json!({"index": idx, "duration_s": r3(secs), "transactions": n,
               "tps": r3(n as f64 / secs.max(1e-9)), "rtt_us": irec.summary().to_json()}),
    ));
    irec.reset();
}

type RrResult = (u64, f64, Recorder, u64);

fn rr_tcp(a: &RrArgs, mut s: TcpStream) -> Result<RrResult, String> {
    let req = vec![0u8; a.request as usize];
    let mut resp = vec![0u8; a.response as usize];
    let burst = a.burst as usize;
    let mut ring: VecDeque<Instant> = VecDeque::with_capacity(burst);
    let mut rec = Recorder::new();
    let mut irec = Recorder::new();
    let mut result = (0u64, 0.0f64);
    for (phase, record) in [(a.warmup, false), (a.common.duration, true)] {
        if phase <= 0.0 {
            continue;
        }
        let start = Instant::now();
        let end = start + Duration::from_secs_f64(phase);
        let mut iv = Intervals::new(a.common.interval);
        let (mut count, mut last) = (0u64, start);
        ring.clear();
        for _ in 0..burst {
            ring.push_back(Instant::now());
            s.write_all(&req).map_err(|e| format!("send request: {e}"))?;
        }
        while let Some(sent) = ring.pop_front() {
            s.read_exact(&mut resp).map_err(|e| format!("server stopped answering: {e}"))?;
            let now = Instant::now();
            if now < end {
                ring.push_back(Instant::now());
                s.write_all(&req).map_err(|e| format!("send request: {e}"))?;
            }
            if record {
                let ns = (now - sent).as_nanos() as u64;
                rec.record(ns);
                irec.record(ns);
                count += 1;
                last = now;
                if iv.due(now) {
                    rr_interval("rr", &mut iv, now, &mut irec);
                }
            }
        }
        if record {
            result = (count, (last - start).as_secs_f64());
        }
    }
    let _ = s.shutdown(Shutdown::Both);
    Ok((result.0, result.1, rec, 0))
}

fn rr_udp(a: &RrArgs, server: SocketAddr, ctl: TcpStream) -> Result<RrResult, String> {
    let u = udp_socket_to(server)?;
    util::grow_buffers(u.as_raw_fd(), 1 << 20);
    let tag = std::process::id();
    let mut req = vec![0u8; a.request as usize];
    let mut resp = vec![0u8; 65536];
    let burst = a.burst as u64;
    let mut rec = Recorder::new();
    let mut irec = Recorder::new();
    let mut seq = 0u64;
    let mut lost = 0u64;
    let mut max_rtt_ns = 0u64;
    let mut current_timeout_ms = 0u64;
    let mut result = (0u64, 0.0f64);
    let send = |seq: &mut u64, req: &mut [u8]| -> Result<(), String> {
        let h = UdpHeader { kind: kind::RR_REQ, session: tag, stream: 0, resp: a.response, seq: *seq, ts: mono_ns() as u64 };
        *seq += 1;
        h.write(req);
        match u.send(req) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                Err(format!("server refused UDP on {server} (port unreachable)"))
            }
            Err(_) => Ok(()), // ENOBUFS etc.: counts as loss
        }
    };
    for (phase, record) in [(a.warmup, false), (a.common.duration, true)] {
        if phase <= 0.0 {
            continue;
        }
        let start = Instant::now();
        let end = start + Duration::from_secs_f64(phase);
        let mut iv = Intervals::new(a.common.interval);
        let (mut count, mut last) = (0u64, start);
        let mut outstanding = 0u64;
        let mut valid_from = seq;
        let mut timeouts_in_row = 0u32;
        loop {
            if outstanding == 0 {
                if Instant::now() >= end {
                    break;
                }
                valid_from = seq;
                for _ in 0..burst {
                    send(&mut seq, &mut req)?;
                }
                outstanding = burst;
            }
            // 200 ms + 2x the largest RTT seen, rounded up to 10 ms (so the setsockopt is rare)
            let timeout_ms = ((200_000_000 + 2 * max_rtt_ns).min(2_000_000_000) / 10_000_000 + 1) * 10;
            if timeout_ms != current_timeout_ms {
                let _ = u.set_read_timeout(Some(Duration::from_millis(timeout_ms)));
                current_timeout_ms = timeout_ms;
            }
            match u.recv(&mut resp) {
                Ok(n) => {
                    let Some(h) = UdpHeader::read(&resp[..n]) else { continue };
                    if h.kind != kind::RR_RESP || h.session != tag || h.seq < valid_from {
                        continue;
                    }
                    timeouts_in_row = 0;
                    let now = Instant::now();
                    let ns = (mono_ns() as u64).saturating_sub(h.ts);
                    outstanding -= 1;
                    if now < end {
                        send(&mut seq, &mut req)?;
                        outstanding += 1;
                    }
                    max_rtt_ns = max_rtt_ns.max(ns.min(1_000_000_000));
                    if record {
                        rec.record(ns);
                        irec.record(ns);
                        count += 1;
                        last = now;
                        if iv.due(now) {
                            rr_interval("rr", &mut iv, now, &mut irec);
                        }
                    }
                }
                Err(e) if is_timeout(&e) => {
                    if record {
                        lost += outstanding;
                    }
                    outstanding = 0;
                    timeouts_in_row += 1;
                    if timeouts_in_row >= 25 {
                        return Err(format!("no UDP response from {server} for 25 timeouts"));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    return Err(format!("server refused UDP on {server} (port unreachable)"));
                }
                Err(e) => return Err(format!("udp receive: {e}")),
            }
        }
        if record {
            result = (count, (last - start).as_secs_f64());
        }
    }
    drop(ctl);
    Ok((result.0, result.1, rec, lost))
}

// --------------------------------------------------------------------------------------- crr

pub fn crr(a: &CrrArgs) -> Result<(), String> {
    check_common(&a.common)?;
    check_warmup(a.warmup)?;
    let server = resolve(&a.common.server)?;
    emit(&event(
        "start",
        "crr",
        json!({"server": a.common.server, "protocol": "tcp", "request": a.request,
               "response": a.response, "duration_s": a.common.duration, "warmup_s": a.warmup}),
    ));
    let mut ctl = connect(server)?;
    request(&mut ctl, &json!({"op": "hello"}))?;
    drop(ctl);
    let req = proto::crr_request(a.request, a.response);
    let mut resp = vec![0u8; a.response as usize];
    let mut rec = Recorder::new();
    let mut irec = Recorder::new();
    let mut connect_errors = 0u64;
    let mut result = (0u64, 0.0f64);
    let mut eof = [0u8; 16];
    for (phase, record) in [(a.warmup, false), (a.common.duration, true)] {
        if phase <= 0.0 {
            continue;
        }
        let start = Instant::now();
        let end = start + Duration::from_secs_f64(phase);
        let mut iv = Intervals::new(a.common.interval);
        let (mut count, mut last) = (0u64, start);
        let mut consecutive_errors = 0u32;
        while Instant::now() < end {
            let t0 = Instant::now();
            let mut c = match TcpStream::connect(server) {
                Ok(c) => c,
                Err(e) => {
                    connect_errors += 1;
                    consecutive_errors += 1;
                    if consecutive_errors > 100 || e.kind() == io::ErrorKind::ConnectionRefused {
                        return Err(format!("cannot connect to {server}: {e}"));
                    }
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
            };
            consecutive_errors = 0;
            let _ = c.set_read_timeout(Some(IO_TIMEOUT));
            c.write_all(&req).map_err(|e| format!("send request: {e}"))?;
            c.read_exact(&mut resp).map_err(|e| format!("server stopped answering: {e}"))?;
            // the server closes after its response: wait for its FIN, then close
            let _ = c.read(&mut eof);
            drop(c);
            let now = Instant::now();
            if record {
                let ns = (now - t0).as_nanos() as u64;
                rec.record(ns);
                irec.record(ns);
                count += 1;
                last = now;
                if iv.due(now) {
                    rr_interval("crr", &mut iv, now, &mut irec);
                }
            }
        }
        if record {
            result = (count, (last - start).as_secs_f64());
        }
    }
    let (count, elapsed) = result;
    emit_end(
        "crr",
        json!({"protocol": "tcp", "request": a.request, "response": a.response,
               "duration_s": r3(elapsed), "transactions": count,
               "tps": r3(count as f64 / elapsed.max(1e-9)), "rtt_us": rec.end_json(),
               "connect_errors": connect_errors}),
    );
    Ok(())
}

// ------------------------------------------------------------------------------------ stream

struct StreamWorker {
    sent_bytes: Arc<AtomicU64>,
    sent_packets: Arc<AtomicU64>,
    handle: std::thread::JoinHandle<Result<u64, String>>,
}

pub fn stream(a: &StreamArgs) -> Result<(), String> {
    check_common(&a.common)?;
    check_warmup(a.warmup)?;
    if a.streams == 0 || a.streams as u64 > proto::MAX_STREAMS {
        return Err(format!("--streams must be in 1..={}", proto::MAX_STREAMS));
    }
    let udp = a.protocol == Protocol::Udp;
    let send_size = a.send_size.unwrap_or(if udp { 1472 } else { 131072 });
    if udp && !(UdpHeader::LEN..=proto::MAX_UDP as usize).contains(&send_size) {
        return Err(format!("UDP --send-size must be in {}..={}", UdpHeader::LEN, proto::MAX_UDP));
    }
    if !udp && !(1..=(64 << 20)).contains(&send_size) {
        return Err("TCP --send-size must be in 1..=67108864".into());
    }
    let bitrate = match &a.bitrate {
        Some(b) if udp => Some(util::parse_bitrate(b)?),
        Some(_) => return Err("--bitrate applies to UDP streams only".into()),
        None => None,
    };
    if udp && a.nodelay {
        return Err("--nodelay applies to TCP streams only".into());
    }
    let server = resolve(&a.common.server)?;
    emit(&event(
        "start",
        "stream",
        json!({"server": a.common.server, "protocol": a.protocol.as_str(), "streams": a.streams,
               "send_size": send_size, "bitrate_bps": bitrate, "duration_s": a.common.duration,
               "interval_s": a.common.interval, "warmup_s": a.warmup, "nodelay": a.nodelay}),
    ));
    let mut ctl = connect(server)?;
    let total = a.common.duration + a.warmup;
    let reply = request(
        &mut ctl,
        &json!({"op": "stream", "proto": a.protocol.as_str(), "streams": a.streams, "duration": total}),
    )?;
    let session = session_of(&reply)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    // TCP_NODELAY as the data sockets report it (getsockopt), for the end event
    let mut nodelay = a.nodelay;
    for i in 0..a.streams {
        let (sent_bytes, sent_packets) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (sb, sp, st) = (sent_bytes.clone(), sent_packets.clone(), stop.clone());
        let handle = if udp {
            let u = udp_socket_to(server)?;
            util::grow_buffers(u.as_raw_fd(), 4 << 20);
            let per_stream = bitrate.map(|b| b / a.streams as f64);
            std::thread::spawn(move || udp_sender(u, session, i, send_size, per_stream, sb, sp, st))
        } else {
            let mut d = connect_with(server, a.nodelay)?;
            request(&mut d, &json!({"op": "data", "session": session, "stream": i}))?;
            nodelay = d.nodelay().map_err(|e| format!("getsockopt TCP_NODELAY: {e}"))?;
            std::thread::spawn(move || tcp_sender(d, send_size, sb, st))
        };
        workers.push(StreamWorker { sent_bytes, sent_packets, handle });
    }
    let received = |ctl: &mut TcpStream, op: &str| -> Result<(u64, u64), String> {
        let r = request(ctl, &json!({"op": op}))?;
        Ok((u64s(&r, "bytes").iter().sum(), u64s(&r, "packets").iter().sum()))
    };
    let sent = |w: &[StreamWorker]| -> (u64, u64) {
        w.iter().fold((0, 0), |(b, p), x| {
            (b + x.sent_bytes.load(Ordering::Relaxed), p + x.sent_packets.load(Ordering::Relaxed))
        })
    };
    let t_start = Instant::now();
    let (mut mark_recv, mut mark_sent, mut t_mark) = ((0u64, 0u64), (0u64, 0u64), t_start);
    if a.warmup > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(a.warmup));
        mark_recv = received(&mut ctl, "mark")?;
        mark_sent = sent(&workers);
        t_mark = Instant::now();
    }
    let end = t_mark + Duration::from_secs_f64(a.common.duration);
    let mut iv = Intervals::new(a.common.interval);
    iv.start = t_mark;
    iv.next = t_mark + iv.period;
    let mut prev = mark_recv;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let wake = iv.next.min(end);
        std::thread::sleep(wake - now);
        let now = Instant::now();
        if iv.due(now) && now < end + Duration::from_millis(1) {
            let r = received(&mut ctl, "mark")?;
            let idx = iv.index;
            let secs = iv.advance(now);
            let bytes = r.0 - prev.0;
            emit(&event(
                "interval",
                "stream",
                json!({"index": idx, "duration_s": r3(secs), "bytes": bytes,
                       "goodput_bps": r3(bytes as f64 * 8.0 / secs.max(1e-9))}),
            ));
            prev = r;
        }
        if workers.iter().any(|w| w.handle.is_finished()) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut retrans = 0u64;
    let mut first_err = None;
    let mut sent_total = (0u64, 0u64);
    for w in workers {
        let joined = w.handle.join();
        sent_total.0 += w.sent_bytes.load(Ordering::Relaxed);
        sent_total.1 += w.sent_packets.load(Ordering::Relaxed);
        match joined {
            Ok(Ok(r)) => retrans += r,
            Ok(Err(e)) => first_err = first_err.or(Some(e)),
            Err(_) => first_err = first_err.or(Some("sender thread panicked".to_string())),
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let t_done = Instant::now();
    if udp {
        std::thread::sleep(Duration::from_millis(300)); // stragglers
    }
    let fin = received(&mut ctl, "finish")?;
    let bytes = fin.0 - mark_recv.0;
    let mut endv = json!({"protocol": a.protocol.as_str(), "streams": a.streams, "send_size": send_size,
                          "nodelay": nodelay, "bytes": bytes, "sent_bytes": sent_total.0 - mark_sent.0});
    if udp {
        // the span the senders actually sent for (from the mark until they stopped): the
        // last interval's mark crosses a saturated link and can keep them going well past
        // the nominal end, so bytes over the nominal duration overstated the rate (108 %
        // of a 300 Mbit/s pace over an emulated WAN link)
        let secs = (t_done - t_mark).as_secs_f64().max(1e-9);
        let sent_p = sent_total.1 - mark_sent.1;
        let recv_p = fin.1 - mark_recv.1;
        let lost = sent_p.saturating_sub(recv_p);
        endv["duration_s"] = json!(r3(secs));
        endv["goodput_bps"] = json!(r3(bytes as f64 * 8.0 / secs));
        endv["retransmits"] = json!(0);
        endv["packets"] = json!(sent_p);
        endv["received"] = json!(recv_p);
        endv["lost"] = json!(lost);
        endv["loss"] = json!(if sent_p > 0 { lost as f64 / sent_p as f64 } else { 0.0 });
    } else {
        let secs = (t_done - t_mark).as_secs_f64();
        endv["duration_s"] = json!(r3(secs));
        endv["goodput_bps"] = json!(r3(bytes as f64 * 8.0 / secs.max(1e-9)));
        endv["retransmits"] = json!(retrans);
    }
    emit_end("stream", endv);
    Ok(())
}

fn tcp_sender(mut s: TcpStream, size: usize, sent: Arc<AtomicU64>, stop: Arc<AtomicBool>) -> Result<u64, String> {
    let buf = vec![0x5au8; size];
    let _ = s.set_write_timeout(Some(Duration::from_secs(10)));
    while !stop.load(Ordering::Relaxed) {
        match s.write(&buf) {
            Ok(n) => {
                sent.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("stream send: {e}")),
        }
    }
    let _ = s.shutdown(Shutdown::Write);
    let _ = s.set_read_timeout(Some(Duration::from_secs(15)));
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("stream: server did not finish reading: {e}")),
        }
    }
    Ok(util::tcp_total_retrans(&s))
}

#[allow(clippy::too_many_arguments)]
fn udp_sender(
    u: UdpSocket,
    session: u32,
    stream: u32,
    size: usize,
    bitrate: Option<f64>,
    sent_bytes: Arc<AtomicU64>,
    sent_packets: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> Result<u64, String> {
    util::tight_timer_slack();
    let mut buf = vec![0u8; size];
    let period_ns = bitrate.map(|b| size as f64 * 8.0 / b * 1e9);
    let t0 = mono_ns();
    let mut seq = 0u64;
    let mut refused = 0u32;
    while !stop.load(Ordering::Relaxed) {
        if let Some(p) = period_ns {
            util::sleep_until_ns(t0 + (seq as f64 * p) as i64);
        }
        let h = UdpHeader { kind: kind::STREAM, session, stream, resp: 0, seq, ts: 0 };
        h.write(&mut buf);
        seq += 1;
        match u.send(&buf) {
            Ok(n) => {
                sent_bytes.fetch_add(n as u64, Ordering::Relaxed);
                sent_packets.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                refused += 1;
                if refused > 1000 {
                    return Err("server refused UDP (port unreachable)".into());
                }
            }
            Err(_) => std::thread::yield_now(), // ENOBUFS: the queue is full
        }
    }
    Ok(0)
}

// -------------------------------------------------------------------------------------- gaps

pub fn gaps(a: &GapsArgs) -> Result<(), String> {
    check_common(&a.common)?;
    if !(a.rate > 0.0 && a.rate <= 1e6) {
        return Err("--rate must be in (0, 1e6]".into());
    }
    if !(UdpHeader::LEN as u64..=proto::MAX_UDP).contains(&(a.size as u64)) {
        return Err(format!("--size must be in {}..={}", UdpHeader::LEN, proto::MAX_UDP));
    }
    let server = resolve(&a.common.server)?;
    let period_us = 1e6 / a.rate;
    emit(&event(
        "start",
        "gaps",
        json!({"server": a.common.server, "protocol": "udp", "rate": a.rate, "size": a.size,
               "duration_s": a.common.duration, "period_us": r3(period_us)}),
    ));
    let mut ctl = connect(server)?;
    let reply = request(
        &mut ctl,
        &json!({"op": "gaps", "rate": a.rate, "size": a.size, "duration": a.common.duration}),
    )?;
    let session = session_of(&reply)?;
    let u = udp_socket_to(server)?;
    util::tight_timer_slack();
    let mut buf = vec![0u8; a.size as usize];
    let n = ((a.common.duration * a.rate).floor() as u64).max(2);
    let period_ns = 1e9 / a.rate;
    let mut rec = Recorder::new();
    let mut irec = Recorder::new();
    let t0 = mono_ns() + 1_000_000;
    let iv_ns = (a.common.interval * 1e9) as i64;
    let (mut next_iv, mut idx, mut iv_start) = (t0 + iv_ns, 0u64, t0);
    let mut last: Option<i64> = None;
    let mut sent = 0u64;
    for i in 0..n {
        util::sleep_until_ns(t0 + (i as f64 * period_ns) as i64);
        let t = mono_ns();
        let h = UdpHeader { kind: kind::GAPS, session, stream: 0, resp: 0, seq: i, ts: t as u64 };
        h.write(&mut buf);
        match u.send(&buf) {
            Ok(_) => sent += 1,
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                return Err(format!("server refused UDP on {server} (port unreachable)"));
            }
            Err(_) => {}
        }
        if let Some(p) = last {
            rec.record((t - p) as u64);
            irec.record((t - p) as u64);
        }
        last = Some(t);
        if t >= next_iv {
            let secs = (t - iv_start) as f64 / 1e9;
            emit(&event(
                "interval",
                "gaps",
                json!({"index": idx, "duration_s": r3(secs), "sent": irec.count() ,
                       "send_gap_us": irec.summary().to_json()}),
            ));
            irec.reset();
            idx += 1;
            iv_start = t;
            while next_iv <= t {
                next_iv += iv_ns;
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let fin = request(&mut ctl, &json!({"op": "finish", "sent": sent}))?;
    let received = fin.get("received").and_then(Value::as_u64).unwrap_or(0);
    let recv_json = fin.get("recv_gap_us").cloned().unwrap_or(Value::Null);
    let recv = Summary::from_json(&recv_json).ok_or("server sent no recv_gap_us")?;
    // the server's histogram, if it sent one (an older server does not)
    let recv_hist = recv_json.get("hist").cloned().unwrap_or(Value::Null);
    let send = rec.summary();
    let lost = sent.saturating_sub(received);
    emit_end(
        "gaps",
        json!({"protocol": "udp", "rate": a.rate, "size": a.size, "duration_s": a.common.duration,
               "period_us": r3(period_us), "sent": sent, "received": received, "lost": lost,
               "loss": if sent > 0 { lost as f64 / sent as f64 } else { 0.0 },
               "send_gap_us": rec.end_json(), "send_gap_dev_us": send.shifted(period_us).to_json(),
               "recv_gap_us": with_hist(recv.to_json(), recv_hist),
               "recv_gap_dev_us": recv.shifted(period_us).to_json()}),
    );
    Ok(())
}

// ------------------------------------------------------------------------------------- media

#[derive(Default, Clone, Copy)]
struct MediaStats {
    received: u64,
    bytes: u64,
    jitter_ns: f64,
}

fn media_receiver(
    u: UdpSocket,
    session: u32,
    stream: u32,
    bytes_ctr: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> MediaStats {
    let mut buf = vec![0u8; 65536];
    let mut hello = [0u8; UdpHeader::LEN];
    UdpHeader { kind: kind::MEDIA_HELLO, session, stream, ..Default::default() }.write(&mut hello);
    let _ = u.set_read_timeout(Some(Duration::from_millis(20)));
    let mut st = MediaStats::default();
    let mut jitter = Jitter::default();
    let mut last_hello: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        if st.received == 0 && last_hello.is_none_or(|t| t.elapsed() >= Duration::from_millis(20)) {
            let _ = u.send(&hello);
            last_hello = Some(Instant::now());
        }
        match util::recv_ts(&u, &mut buf) {
            Ok((n, _, ts)) => {
                let Some(h) = UdpHeader::read(&buf[..n]) else { continue };
                if h.kind != kind::MEDIA_DATA || h.session != session || h.stream != stream {
                    continue;
                }
                st.received += 1;
                st.bytes += n as u64;
                bytes_ctr.fetch_add(n as u64, Ordering::Relaxed);
                jitter.update(h.ts as i64, ts);
            }
            Err(_) => continue,
        }
    }
    st.jitter_ns = jitter.value_ns();
    st
}

pub fn media(a: &MediaArgs) -> Result<(), String> {
    check_common(&a.common)?;
    let bitrate = util::parse_bitrate(&a.bitrate)?;
    if a.streams == 0 || a.streams as u64 > proto::MAX_STREAMS {
        return Err(format!("--streams must be in 1..={}", proto::MAX_STREAMS));
    }
    let server = resolve(&a.common.server)?;
    emit(&event(
        "start",
        "media",
        json!({"server": a.common.server, "protocol": "udp", "streams": a.streams,
               "bitrate_bps": bitrate, "packet_size": a.packet_size, "duration_s": a.common.duration}),
    ));
    let mut ctl = connect(server)?;
    let reply = request(
        &mut ctl,
        &json!({"op": "media", "streams": a.streams, "bitrate": bitrate,
                "packet_size": a.packet_size, "duration": a.common.duration}),
    )?;
    let session = session_of(&reply)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    let mut counters = Vec::new();
    for i in 0..a.streams {
        let u = udp_socket_to(server)?;
        util::grow_buffers(u.as_raw_fd(), 2 << 20);
        util::enable_rx_timestamps(&u).map_err(|e| format!("SO_TIMESTAMPNS: {e}"))?;
        let c = Arc::new(AtomicU64::new(0));
        counters.push(c.clone());
        let st = stop.clone();
        threads.push(std::thread::spawn(move || media_receiver(u, session, i, c, st)));
    }
    let finish = |stop: &AtomicBool, threads: Vec<std::thread::JoinHandle<MediaStats>>| {
        stop.store(true, Ordering::Relaxed);
        threads.into_iter().map(|t| t.join().unwrap_or_default()).collect::<Vec<_>>()
    };
    // control lines: {"event":"started"} then the final {"ok":true,"sent":[...]}
    let _ = ctl.set_read_timeout(Some(Duration::from_secs(15)));
    match read_json(&mut ctl) {
        Ok(v) if v.get("event").and_then(Value::as_str) == Some("started") => {}
        Ok(v) => {
            finish(&stop, threads);
            let msg = v.get("error").and_then(Value::as_str).unwrap_or("unexpected reply");
            return Err(format!("server error: {msg}"));
        }
        Err(e) => {
            finish(&stop, threads);
            return Err(format!("media: server did not start: {e}"));
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let mut ctl2 = ctl.try_clone().map_err(|e| e.to_string())?;
    let _ = ctl2.set_read_timeout(Some(Duration::from_secs_f64(a.common.duration + 15.0)));
    std::thread::spawn(move || {
        let _ = tx.send(read_json(&mut ctl2));
    });
    let mut iv = Intervals::new(a.common.interval);
    let mut prev = 0u64;
    let fin = loop {
        match rx.recv_timeout(iv.next.saturating_duration_since(Instant::now())) {
            Ok(r) => break r,
            Err(_) => {
                let now = Instant::now();
                let total: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
                let idx = iv.index;
                let secs = iv.advance(now);
                emit(&event(
                    "interval",
                    "media",
                    json!({"index": idx, "duration_s": r3(secs), "bytes": total - prev,
                           "bitrate_bps": r3((total - prev) as f64 * 8.0 / secs.max(1e-9))}),
                ));
                prev = total;
            }
        }
    };
    std::thread::sleep(Duration::from_millis(300));
    let stats = finish(&stop, threads);
    let fin = fin.map_err(|e| format!("media: no results from server: {e}"))?;
    if fin.get("ok").and_then(Value::as_bool) != Some(true) {
        let msg = fin.get("error").and_then(Value::as_str).unwrap_or("unexpected reply");
        return Err(format!("server error: {msg}"));
    }
    let sent = u64s(&fin, "sent");
    let secs = a.common.duration;
    let mut per = Vec::new();
    let (mut tot_sent, mut tot_recv, mut tot_bytes, mut jit_sum) = (0u64, 0u64, 0u64, 0.0);
    for (i, st) in stats.iter().enumerate() {
        let s = sent.get(i).copied().unwrap_or(0);
        let lost = s.saturating_sub(st.received);
        per.push(json!({"stream": i, "sent": s, "received": st.received, "lost": lost,
                        "loss": if s > 0 { lost as f64 / s as f64 } else { 0.0 },
                        "bitrate_bps": r3(st.bytes as f64 * 8.0 / secs),
                        "jitter_us": r3(st.jitter_ns / 1000.0)}));
        tot_sent += s;
        tot_recv += st.received;
        tot_bytes += st.bytes;
        jit_sum += st.jitter_ns / 1000.0;
    }
    let lost = tot_sent.saturating_sub(tot_recv);
    emit_end(
        "media",
        json!({"protocol": "udp", "packet_size": a.packet_size, "target_bitrate_bps": bitrate,
               "duration_s": secs, "sent": tot_sent, "received": tot_recv, "lost": lost,
               "loss": if tot_sent > 0 { lost as f64 / tot_sent as f64 } else { 0.0 },
               "bitrate_bps": r3(tot_bytes as f64 * 8.0 / secs),
               "jitter_us": r3(jit_sum / stats.len().max(1) as f64), "streams": per}),
    );
    Ok(())
}
