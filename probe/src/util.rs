//! Small system helpers: clocks, precise sleeping, JSON-lines I/O on sockets and stdout,
//! UDP receive with kernel timestamps (SO_TIMESTAMPNS), TCP_INFO.

use serde_json::Value;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// CLOCK_MONOTONIC in nanoseconds (the clock behind `Instant` on Linux).
#[inline]
pub fn mono_ns() -> i64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds (the clock of SO_TIMESTAMPNS).
#[inline]
pub fn real_ns() -> i64 {
    clock_ns(libc::CLOCK_REALTIME)
}

#[inline]
fn clock_ns(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

/// Make `thread::sleep` wake up on time (default timer slack is 50 us).
pub fn tight_timer_slack() {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Sleep until `deadline` (CLOCK_MONOTONIC ns): sleep most of the way, spin the last 30 us.
pub fn sleep_until_ns(deadline: i64) {
    loop {
        let now = mono_ns();
        let left = deadline - now;
        if left <= 0 {
            return;
        }
        if left > 60_000 {
            std::thread::sleep(Duration::from_nanos((left - 30_000) as u64));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Write one JSON value as a line on stdout and flush (errors ignored: stdout may be gone).
pub fn emit(v: &Value) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{}", v);
    let _ = out.flush();
}

/// Maximum length of one control line: bounds what a peer can make us buffer, and leaves
/// room for a result reply carrying a latency histogram (a 2 s gaps run's receive-gap
/// histogram is longer than 4 KiB).
pub const MAX_LINE: usize = 1 << 20;

/// Read one '\n'-terminated line byte by byte (never reads past the newline, so the stream
/// can carry raw data afterwards). `first` is a byte already read, if any.
pub fn read_line(stream: &mut TcpStream, first: Option<u8>) -> io::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(128);
    if let Some(b) = first {
        if b == b'\n' {
            return Ok(line);
        }
        line.push(b);
    }
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"))
            }
            Ok(_) => {
                if byte[0] == b'\n' {
                    return Ok(line);
                }
                if line.len() >= MAX_LINE {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "control line too long"));
                }
                line.push(byte[0]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Read one line and parse it as a JSON object.
pub fn read_json(stream: &mut TcpStream) -> io::Result<Value> {
    let line = read_line(stream, None)?;
    serde_json::from_slice::<Value>(&line)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad JSON from peer: {e}")))
}

/// Write one JSON value as a line on a socket.
pub fn write_json(stream: &mut TcpStream, v: &Value) -> io::Result<()> {
    let mut s = v.to_string();
    s.push('\n');
    stream.write_all(s.as_bytes())
}

/// Is this error a read timeout?
pub fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

/// TCP_INFO's total retransmissions of a socket (0 if unavailable).
pub fn tcp_total_retrans(stream: &TcpStream) -> u64 {
    // SAFETY: getsockopt fills at most `len` bytes of the zeroed struct.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut info as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return 0;
    }
    info.tcpi_total_retrans as u64
}

/// Set an integer socket option (errors ignored: best effort tuning).
pub fn setsockopt_int(fd: i32, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: passing a pointer to a c_int of the right size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Ask the kernel for SO_TIMESTAMPNS receive timestamps on a UDP socket.
pub fn enable_rx_timestamps(sock: &UdpSocket) -> io::Result<()> {
    setsockopt_int(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
}

/// Bigger socket buffers for bulk / bursty UDP (best effort).
pub fn grow_buffers(fd: i32, bytes: i32) {
    let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, bytes);
    let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, bytes);
}

/// Receive one datagram with its source and kernel receive timestamp (CLOCK_REALTIME ns;
/// falls back to the current time when the kernel gave none). Honors the socket's read timeout.
pub fn recv_ts(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, i64)> {
    let fd = sock.as_raw_fd();
    // SAFETY: all pointers refer to live, correctly sized local buffers.
    unsafe {
        let mut addr: libc::sockaddr_storage = std::mem::zeroed();
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
        let mut cbuf = [0u64; 16];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = &mut addr as *mut _ as *mut libc::c_void;
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        let n = loop {
            let n = libc::recvmsg(fd, &mut msg, 0);
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            break n as usize;
        };
        let mut ts: Option<i64> = None;
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS {
                let t = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::timespec);
                ts = Some(t.tv_sec as i64 * 1_000_000_000 + t.tv_nsec as i64);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        let src = sockaddr_to_std(&addr)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unknown address family"))?;
        Ok((n, src, ts.unwrap_or_else(real_ns)))
    }
}

fn sockaddr_to_std(addr: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match addr.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: family says this is a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(addr as *const _ as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: family says this is a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(addr as *const _ as *const libc::sockaddr_in6) };
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Parse a bit rate: `2mbit`, `500kbit`, `1gbit`, `2M`, `64k`, `1500000`, `2mbps`.
pub fn parse_bitrate(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    if let Ok(v) = t.parse::<f64>() {
        if v > 0.0 && v.is_finite() {
            return Ok(v);
        }
    }
    let idx = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(idx);
    let n: f64 = num.parse().map_err(|_| format!("bad bit rate {s:?}: expected e.g. 2mbit"))?;
    let mult = match unit.trim() {
        "" | "bit" | "bps" | "b" => 1.0,
        "k" | "kbit" | "kbps" => 1e3,
        "m" | "mbit" | "mbps" => 1e6,
        "g" | "gbit" | "gbps" => 1e9,
        u => return Err(format!("bad bit rate unit {u:?} in {s:?}: use bit, kbit, mbit or gbit")),
    };
    let v = n * mult;
    if !(v > 0.0 && v.is_finite()) {
        return Err(format!("bit rate must be positive: {s:?}"));
    }
    Ok(v)
}

/// Seconds from an `Instant` difference.
pub fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Nanoseconds elapsed since `t`.
#[inline]
pub fn since_ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

/// xorshift64*: a small seeded generator (the order of paths in each round, open-loop arrivals).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A random permutation of 0..n (Fisher-Yates).
    pub fn order(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
        v
    }

    /// Uniform in [0, 1) (53 bits).
    pub fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_lines_hold_a_histogram_reply_but_stay_bounded() {
        use std::net::TcpListener;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let writer = std::thread::spawn(move || {
            let mut out = TcpStream::connect(addr).unwrap();
            let reply = vec![b'x'; 64 * 1024]; // a result with a long histogram
            out.write_all(&reply).unwrap();
            out.write_all(b"\n").unwrap();
            let _ = out.write_all(&vec![b'y'; MAX_LINE + 1]); // a peer that never ends a line
        });
        let (mut stream, _) = listener.accept().unwrap();
        assert_eq!(read_line(&mut stream, None).unwrap().len(), 64 * 1024);
        let err = read_line(&mut stream, None).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        drop(stream);
        let _ = writer.join();
    }

    #[test]
    fn bitrates() {
        assert_eq!(parse_bitrate("2mbit").unwrap(), 2e6);
        assert_eq!(parse_bitrate("2M").unwrap(), 2e6);
        assert_eq!(parse_bitrate("64kbit").unwrap(), 64e3);
        assert_eq!(parse_bitrate("1500000").unwrap(), 1.5e6);
        assert_eq!(parse_bitrate("5e+07").unwrap(), 5e7);
        assert_eq!(parse_bitrate("1.5gbit").unwrap(), 1.5e9);
        assert!(parse_bitrate("fast").is_err());
        assert!(parse_bitrate("2 parsecs").is_err());
        assert!(parse_bitrate("0").is_err());
    }

    #[test]
    fn clocks_advance() {
        let a = mono_ns();
        sleep_until_ns(a + 200_000);
        let b = mono_ns();
        assert!(b - a >= 200_000);
        assert!(real_ns() > 1_500_000_000_000_000_000);
    }
}
