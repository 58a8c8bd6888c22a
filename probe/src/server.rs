//! `serve`: one process answering every mode.
//!
//! TCP: an accept loop hands each connection to a pool of reusable worker threads (thread per
//! connection without a thread spawn per CRR transaction). The first bytes of a connection say
//! what it is (see `proto`). UDP: one thread owns the UDP socket on the same port number,
//! answers rr requests statelessly and feeds per-session counters (stream, gaps) or learns the
//! client addresses of media streams. Every session is bounded by its duration plus slack; any
//! socket error just ends that connection's thread.

use crate::proto::{self, kind, Proto, Request, UdpHeader};
use crate::stats::Recorder;
use crate::util::{self, is_timeout, mono_ns, read_line, write_json};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Time a connection may take to send its first line / header.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle worker threads retire after this.
const WORKER_IDLE: Duration = Duration::from_secs(60);

/// How long a session outlives its duration: long enough for a client's last control line
/// that queued behind a saturated, delayed emulated link (clients wait 30 s for a reply).
fn slack(duration: f64) -> Duration {
    Duration::from_secs_f64(duration + 30.0 + duration * 0.1)
}

enum UdpState {
    None,
    Stream { packets: Vec<u64>, bytes: Vec<u64> },
    Gaps { rec: Recorder, last: Option<i64>, received: u64 },
    Media { addrs: Vec<Option<SocketAddr>> },
}

struct Session {
    deadline: Instant,
    tcp_streams: u32,
    tcp_bytes: Vec<AtomicU64>,
    udp: Mutex<UdpState>,
}

struct Shared {
    sessions: Mutex<HashMap<u32, Arc<Session>>>,
    next_id: AtomicU32,
    udp: UdpSocket,
    port: u16,
}

impl Shared {
    fn new_session(&self, duration: f64, tcp_streams: u32, udp: UdpState) -> (u32, Arc<Session>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let s = Arc::new(Session {
            deadline: Instant::now() + slack(duration),
            tcp_streams,
            tcp_bytes: (0..tcp_streams).map(|_| AtomicU64::new(0)).collect(),
            udp: Mutex::new(udp),
        });
        self.sessions.lock().unwrap().insert(id, s.clone());
        (id, s)
    }

    fn end_session(&self, id: u32) {
        self.sessions.lock().unwrap().remove(&id);
    }

    fn session(&self, id: u32) -> Option<Arc<Session>> {
        self.sessions.lock().unwrap().get(&id).cloned()
    }
}

/// A bound server, not yet serving.
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Server {
    /// Bind TCP and UDP on `bind:port` (port 0: any free port, the same number for both).
    pub fn bind(bind: &str, port: u16) -> io::Result<Server> {
        let ip: IpAddr = bind
            .parse()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("bad bind address {bind:?}")))?;
        let mut last_err = None;
        for _ in 0..20 {
            let listener = TcpListener::bind((ip, port))?;
            let p = listener.local_addr()?.port();
            match UdpSocket::bind((ip, p)) {
                Ok(udp) => {
                    util::grow_buffers(udp.as_raw_fd(), 4 << 20);
                    util::enable_rx_timestamps(&udp)?;
                    let seed = (std::process::id() ^ (util::real_ns() as u32)) & 0x7fff_0000;
                    let shared = Arc::new(Shared {
                        sessions: Mutex::new(HashMap::new()),
                        next_id: AtomicU32::new(seed | 1),
                        udp,
                        port: p,
                    });
                    return Ok(Server { listener, shared });
                }
                Err(e) => {
                    if port != 0 {
                        return Err(e);
                    }
                    last_err = Some(e);
                }
            }
        }
        Err(last_err.unwrap_or_else(|| io::Error::other("could not bind")))
    }

    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// Serve forever (spawns the UDP thread, runs the accept loop on this thread).
    pub fn run(self) -> io::Result<()> {
        let udp_shared = self.shared.clone();
        std::thread::Builder::new()
            .name("udp".into())
            .spawn(move || udp_loop(udp_shared))?;
        let pool = Pool::new(self.shared.clone());
        for conn in self.listener.incoming() {
            match conn {
                Ok(s) => pool.dispatch(s),
                Err(e) => {
                    eprintln!("vnetbench-probe serve: accept: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        Ok(())
    }

    /// Serve on a background thread (tests).
    pub fn spawn(self) -> std::thread::JoinHandle<io::Result<()>> {
        std::thread::spawn(move || self.run())
    }
}

struct Pool {
    tx: Sender<TcpStream>,
    rx: Arc<Mutex<Receiver<TcpStream>>>,
    idle: Arc<AtomicUsize>,
    shared: Arc<Shared>,
}

impl Pool {
    fn new(shared: Arc<Shared>) -> Pool {
        let (tx, rx) = channel();
        Pool { tx, rx: Arc::new(Mutex::new(rx)), idle: Arc::new(AtomicUsize::new(0)), shared }
    }

    fn dispatch(&self, s: TcpStream) {
        loop {
            let n = self.idle.load(Ordering::Acquire);
            if n == 0 {
                let (rx, idle, shared) = (self.rx.clone(), self.idle.clone(), self.shared.clone());
                let spawned = std::thread::Builder::new()
                    .name("conn".into())
                    .spawn(move || worker(Some(s), rx, idle, shared));
                if let Err(e) = spawned {
                    eprintln!("vnetbench-probe serve: cannot start a thread: {e}");
                }
                return;
            }
            if self.idle.compare_exchange(n, n - 1, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                let _ = self.tx.send(s);
                return;
            }
        }
    }
}

fn worker(
    first: Option<TcpStream>,
    rx: Arc<Mutex<Receiver<TcpStream>>>,
    idle: Arc<AtomicUsize>,
    shared: Arc<Shared>,
) {
    let mut bufs = Bufs::default();
    if let Some(s) = first {
        handle(s, &shared, &mut bufs);
    }
    loop {
        idle.fetch_add(1, Ordering::AcqRel);
        loop {
            let got = rx.lock().unwrap().recv_timeout(WORKER_IDLE);
            match got {
                Ok(s) => {
                    handle(s, &shared, &mut bufs);
                    break;
                }
                Err(RecvTimeoutError::Timeout) => {
                    let n = idle.load(Ordering::Acquire);
                    if n > 0 && idle.compare_exchange(n, n - 1, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                        return;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

/// Per-worker reusable buffers.
#[derive(Default)]
struct Bufs {
    a: Vec<u8>,
    b: Vec<u8>,
}

fn error_reply(s: &mut TcpStream, msg: &str) {
    let _ = write_json(s, &json!({"ok": false, "error": msg}));
}

fn handle(mut s: TcpStream, shared: &Shared, bufs: &mut Bufs) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    let _ = s.set_write_timeout(Some(Duration::from_secs(10)));
    let mut first = [0u8; 1];
    if s.read_exact(&mut first).is_err() {
        return;
    }
    match first[0] {
        b'V' => {
            if let Err(msg) = crr(&mut s, bufs) {
                error_reply(&mut s, &msg);
            }
        }
        b'{' => match read_line(&mut s, Some(b'{')) {
            Ok(line) => control(s, &line, shared, bufs),
            Err(e) => error_reply(&mut s, &format!("bad control line: {e}")),
        },
        _ => {
            // swallow the rest of the line (if any) so the peer sees our reply, not a reset
            let _ = read_line(&mut s, Some(first[0]));
            error_reply(&mut s, "expected a JSON control line or a CRR header");
        }
    }
}

fn crr(s: &mut TcpStream, bufs: &mut Bufs) -> Result<(), String> {
    let mut h = [0u8; proto::CRR_HEADER];
    h[0] = b'V';
    s.read_exact(&mut h[1..]).map_err(|e| format!("short CRR header: {e}"))?;
    let (req, resp) = proto::parse_crr_header(&h)?;
    let rest = req as usize - proto::CRR_HEADER;
    if bufs.a.len() < rest {
        bufs.a.resize(rest, 0);
    }
    if rest > 0 {
        s.read_exact(&mut bufs.a[..rest]).map_err(|e| format!("short CRR request: {e}"))?;
    }
    if bufs.b.len() < resp as usize {
        bufs.b.resize(resp as usize, 0);
    }
    let _ = s.write_all(&bufs.b[..resp as usize]);
    let _ = s.shutdown(Shutdown::Write);
    // wait briefly for the client's close so our close does not reset unread data
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut sink = [0u8; 64];
    let _ = s.read(&mut sink);
    Ok(())
}

fn control(mut s: TcpStream, line: &[u8], shared: &Shared, bufs: &mut Bufs) {
    let req = match proto::parse_request(line) {
        Ok(r) => r,
        Err(msg) => return error_reply(&mut s, &msg),
    };
    match req {
        Request::Hello => {
            let _ = write_json(
                &mut s,
                &json!({"ok": true, "version": env!("CARGO_PKG_VERSION"), "udp_port": shared.port}),
            );
        }
        Request::Rr { proto: Proto::Tcp, request, response, duration } => {
            if write_json(&mut s, &json!({"ok": true})).is_ok() {
                rr_tcp(&mut s, request as usize, response as usize, Instant::now() + slack(duration), bufs);
            }
        }
        Request::Rr { proto: Proto::Udp, duration, .. } => {
            // the UDP thread answers statelessly; hold the control connection for the session
            if write_json(&mut s, &json!({"ok": true, "udp_port": shared.port})).is_ok() {
                let deadline = Instant::now() + slack(duration);
                let _ = s.set_read_timeout(Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))));
                let mut sink = [0u8; 256];
                while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
            }
        }
        Request::Stream { proto, streams, duration } => {
            let (tcp, udp) = match proto {
                Proto::Tcp => (streams, UdpState::None),
                Proto::Udp => (
                    0,
                    UdpState::Stream { packets: vec![0; streams as usize], bytes: vec![0; streams as usize] },
                ),
            };
            let (id, sess) = shared.new_session(duration, tcp, udp);
            session_control(&mut s, id, &sess, shared);
        }
        Request::Data { session, stream } => {
            let sess = match shared.session(session) {
                Some(x) if stream < x.tcp_streams => x,
                Some(_) => return error_reply(&mut s, "stream index out of range for this session"),
                None => return error_reply(&mut s, &format!("no TCP stream session {session}")),
            };
            if write_json(&mut s, &json!({"ok": true})).is_ok() {
                // a stream's data socket follows the kernel default like iperf3's receiver; it
                // sends no payload from here on, so the client's --nodelay alone decides
                let _ = s.set_nodelay(false);
                data_sink(&mut s, &sess, stream as usize, bufs);
            }
        }
        Request::Gaps { duration, .. } => {
            let (id, sess) = shared.new_session(
                duration,
                0,
                UdpState::Gaps { rec: Recorder::new(), last: None, received: 0 },
            );
            session_control(&mut s, id, &sess, shared);
        }
        Request::Media { streams, bitrate, packet_size, duration } => {
            let (id, sess) =
                shared.new_session(duration, 0, UdpState::Media { addrs: vec![None; streams as usize] });
            if let Err(e) = media(&mut s, id, &sess, shared, bitrate, packet_size as usize, duration) {
                error_reply(&mut s, &e);
            }
            shared.end_session(id);
        }
    }
}

/// TCP request/response: read `req` bytes, answer `resp` bytes, until EOF or the deadline.
fn rr_tcp(s: &mut TcpStream, req: usize, resp: usize, deadline: Instant, bufs: &mut Bufs) {
    if bufs.a.len() < req {
        bufs.a.resize(req, 0);
    }
    if bufs.b.len() < resp {
        bufs.b.resize(resp, 0);
    }
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let (rbuf, wbuf) = (&mut bufs.a[..req], &bufs.b[..resp]);
    loop {
        let mut got = 0;
        while got < req {
            match s.read(&mut rbuf[got..]) {
                Ok(0) => return,
                Ok(n) => got += n,
                Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {
                    if Instant::now() > deadline {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
        if s.write_all(wbuf).is_err() {
            return;
        }
    }
}

/// Count a TCP stream's bytes until EOF or the deadline, then close.
fn data_sink(s: &mut TcpStream, sess: &Session, stream: usize, bufs: &mut Bufs) {
    const BUF: usize = 256 << 10;
    if bufs.a.len() < BUF {
        bufs.a.resize(BUF, 0);
    }
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let counter = &sess.tcp_bytes[stream];
    loop {
        match s.read(&mut bufs.a[..BUF]) {
            Ok(0) => return,
            Ok(n) => {
                counter.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {
                if Instant::now() > sess.deadline {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

fn session_results(sess: &Session) -> Value {
    let tcp: Vec<u64> = sess.tcp_bytes.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let st = sess.udp.lock().unwrap();
    match &*st {
        UdpState::None => json!({"ok": true, "bytes": tcp}),
        UdpState::Stream { packets, bytes } => json!({"ok": true, "packets": packets, "bytes": bytes}),
        UdpState::Gaps { rec, received, .. } => {
            json!({"ok": true, "received": received, "recv_gap_us": rec.end_json(), "gaps": rec.count()})
        }
        UdpState::Media { .. } => json!({"ok": true}),
    }
}

/// Reply `{"ok":true,"session":id}`, then answer `mark` / `finish` lines until finish, EOF
/// or the session deadline; the session ends with this function.
fn session_control(s: &mut TcpStream, id: u32, sess: &Session, shared: &Shared) {
    if write_json(s, &json!({"ok": true, "session": id, "udp_port": shared.port})).is_ok() {
        loop {
            let left = sess.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let _ = s.set_read_timeout(Some(left));
            let line = match read_line(s, None) {
                Ok(l) => l,
                Err(_) => break,
            };
            let op = serde_json::from_slice::<Value>(&line)
                .ok()
                .and_then(|v| v.get("op").and_then(Value::as_str).map(str::to_owned));
            match op.as_deref() {
                Some("mark") => {
                    if write_json(s, &session_results(sess)).is_err() {
                        break;
                    }
                }
                Some("finish") => {
                    let _ = write_json(s, &session_results(sess));
                    break;
                }
                _ => error_reply(s, "expected {\"op\":\"mark\"} or {\"op\":\"finish\"}"),
            }
        }
    }
    shared.end_session(id);
}

fn media(
    s: &mut TcpStream,
    id: u32,
    sess: &Session,
    shared: &Shared,
    bitrate: f64,
    packet_size: usize,
    duration: f64,
) -> Result<(), String> {
    write_json(s, &json!({"ok": true, "session": id, "udp_port": shared.port})).map_err(|e| e.to_string())?;
    // wait for a hello datagram from every stream's socket (their addresses, as NAT shows them)
    let wait_until = Instant::now() + Duration::from_secs(10);
    let addrs: Vec<SocketAddr> = loop {
        {
            let st = sess.udp.lock().unwrap();
            if let UdpState::Media { addrs } = &*st {
                if addrs.iter().all(Option::is_some) {
                    break addrs.iter().map(|a| a.unwrap()).collect();
                }
            }
        }
        if Instant::now() > wait_until {
            return Err("media: no UDP hello from every stream within 10 s (UDP blocked?)".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    write_json(s, &json!({"event": "started"})).map_err(|e| e.to_string())?;
    let k = addrs.len();
    let period_ns = packet_size as f64 * 8.0 / bitrate * 1e9;
    let t0 = mono_ns() + 1_000_000;
    let end = t0 + (duration * 1e9) as i64;
    // stream i sends packet n at t0 + (n + i/k) * period
    let mut next_n = vec![0u64; k];
    let mut sent = vec![0u64; k];
    let mut buf = vec![0u8; packet_size];
    let due = |i: usize, n: u64| t0 + ((n as f64 + i as f64 / k as f64) * period_ns) as i64;
    loop {
        let (mut best, mut best_t) = (usize::MAX, i64::MAX);
        for i in 0..k {
            let t = due(i, next_n[i]);
            if t < end && t < best_t {
                best = i;
                best_t = t;
            }
        }
        if best == usize::MAX {
            break;
        }
        util::sleep_until_ns(best_t);
        let h = UdpHeader {
            kind: kind::MEDIA_DATA,
            session: id,
            stream: best as u32,
            resp: 0,
            seq: next_n[best],
            ts: mono_ns() as u64,
        };
        h.write(&mut buf);
        if shared.udp.send_to(&buf, addrs[best]).is_ok() {
            sent[best] += 1;
        }
        next_n[best] += 1;
    }
    let bytes: Vec<u64> = sent.iter().map(|n| n * packet_size as u64).collect();
    write_json(s, &json!({"ok": true, "sent": sent, "bytes": bytes})).map_err(|e| e.to_string())?;
    // linger until the client closes (or a short timeout), so it reads the results
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut sink = [0u8; 64];
    let _ = s.read(&mut sink);
    Ok(())
}

fn udp_loop(shared: Arc<Shared>) {
    util::tight_timer_slack();
    let sock = &shared.udp;
    let mut buf = vec![0u8; 65536];
    let mut out = vec![0u8; 65536];
    let mut cache: Option<(u32, Arc<Session>)> = None;
    loop {
        let (n, src, ts) = match util::recv_ts(sock, &mut buf) {
            Ok(x) => x,
            Err(_) => continue,
        };
        let Some(h) = UdpHeader::read(&buf[..n]) else { continue };
        if h.kind == kind::RR_REQ {
            let len = (h.resp as usize).clamp(UdpHeader::LEN, proto::MAX_UDP as usize);
            let mut rh = h;
            rh.kind = kind::RR_RESP;
            rh.write(&mut out);
            let _ = sock.send_to(&out[..len], src);
            continue;
        }
        if !matches!(h.kind, kind::STREAM | kind::GAPS | kind::MEDIA_HELLO) {
            continue;
        }
        let sess = match &cache {
            Some((id, s)) if *id == h.session => s.clone(),
            _ => match shared.session(h.session) {
                Some(s) => {
                    cache = Some((h.session, s.clone()));
                    s
                }
                None => continue,
            },
        };
        let mut st = sess.udp.lock().unwrap();
        match (&mut *st, h.kind) {
            (UdpState::Stream { packets, bytes }, kind::STREAM) => {
                if let Some(p) = packets.get_mut(h.stream as usize) {
                    *p += 1;
                    bytes[h.stream as usize] += n as u64;
                }
            }
            (UdpState::Gaps { rec, last, received }, kind::GAPS) => {
                *received += 1;
                if let Some(prev) = *last {
                    rec.record((ts - prev).max(0) as u64);
                }
                *last = Some(ts);
            }
            (UdpState::Media { addrs }, kind::MEDIA_HELLO) => {
                if let Some(a) = addrs.get_mut(h.stream as usize) {
                    *a = Some(src);
                }
            }
            _ => {}
        }
    }
}
