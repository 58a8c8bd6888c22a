//! The wire protocol between the probe's clients and `serve`.
//!
//! Every TCP connection to the server starts with either
//!  * a control line: one JSON object terminated by '\n' (at most 4096 bytes), answered with
//!    `{"ok":true,...}` or `{"ok":false,"error":"..."}`; or
//!  * a CRR transaction: the 4 bytes `VNBC`, request size (u32 BE, including this 12-byte
//!    header), response size (u32 BE), then the rest of the request; the server answers with
//!    `response` bytes and closes.
//!
//! UDP datagrams (to the same port number) start with a 32-byte header, see [`UdpHeader`].

use serde_json::Value;

/// Magic bytes opening a CRR connection.
pub const CRR_MAGIC: &[u8; 4] = b"VNBC";
/// Length of the CRR header.
pub const CRR_HEADER: usize = 12;
/// Largest TCP request/response size accepted.
pub const MAX_TCP_MSG: u64 = 64 << 20;
/// Largest UDP payload.
pub const MAX_UDP: u64 = 65507;
/// Longest session the server accepts (seconds).
pub const MAX_DURATION: f64 = 86_400.0;
/// Most parallel streams in one session.
pub const MAX_STREAMS: u64 = 1024;

/// Transport of rr / stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
}

impl Proto {
    pub fn as_str(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
        }
    }
}

/// A parsed first control line.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// Liveness / version check (used by crr before its transactions).
    Hello,
    /// Request/response; for TCP this connection then carries the transactions.
    Rr { proto: Proto, request: u32, response: u32, duration: f64 },
    /// Bulk transfer client -> server on `streams` data connections / UDP flows.
    Stream { proto: Proto, streams: u32, duration: f64 },
    /// One TCP data connection of a stream session.
    Data { session: u32, stream: u32 },
    /// Constant-rate UDP messages; the server measures arrival gaps.
    Gaps { rate: f64, size: u32, duration: f64 },
    /// K constant-bitrate UDP streams server -> client.
    Media { streams: u32, bitrate: f64, packet_size: u32, duration: f64 },
}

fn get_u64(v: &Value, key: &str) -> Result<u64, String> {
    match v.get(key) {
        None => Err(format!("missing field {key:?}")),
        Some(x) => x.as_u64().ok_or_else(|| format!("field {key:?} must be a non-negative integer")),
    }
}

fn get_f64(v: &Value, key: &str) -> Result<f64, String> {
    match v.get(key) {
        None => Err(format!("missing field {key:?}")),
        Some(x) => x
            .as_f64()
            .filter(|f| f.is_finite())
            .ok_or_else(|| format!("field {key:?} must be a number")),
    }
}

fn ranged(key: &str, x: u64, lo: u64, hi: u64) -> Result<u32, String> {
    if x < lo || x > hi {
        return Err(format!("{key} must be in {lo}..={hi}, got {x}"));
    }
    Ok(x as u32)
}

fn duration(v: &Value) -> Result<f64, String> {
    let d = get_f64(v, "duration")?;
    if !(d > 0.0 && d <= MAX_DURATION) {
        return Err(format!("duration must be in (0, {MAX_DURATION}] seconds, got {d}"));
    }
    Ok(d)
}

fn proto(v: &Value) -> Result<Proto, String> {
    match v.get("proto").and_then(Value::as_str) {
        Some("tcp") => Ok(Proto::Tcp),
        Some("udp") => Ok(Proto::Udp),
        Some(p) => Err(format!("proto must be \"tcp\" or \"udp\", got {p:?}")),
        None => Err("missing field \"proto\"".into()),
    }
}

/// Parse the first control line of a connection. Errors are messages for the peer.
pub fn parse_request(line: &[u8]) -> Result<Request, String> {
    let v: Value = serde_json::from_slice(line).map_err(|e| format!("malformed JSON: {e}"))?;
    if !v.is_object() {
        return Err("control message must be a JSON object".into());
    }
    let op = v.get("op").and_then(Value::as_str).ok_or("missing string field \"op\"")?;
    match op {
        "hello" => Ok(Request::Hello),
        "rr" => {
            let proto = proto(&v)?;
            let max = if proto == Proto::Udp { MAX_UDP } else { MAX_TCP_MSG };
            let min = if proto == Proto::Udp { UdpHeader::LEN as u64 } else { 1 };
            Ok(Request::Rr {
                proto,
                request: ranged("request", get_u64(&v, "request")?, min, max)?,
                response: ranged("response", get_u64(&v, "response")?, min, max)?,
                duration: duration(&v)?,
            })
        }
        "stream" => Ok(Request::Stream {
            proto: proto(&v)?,
            streams: ranged("streams", get_u64(&v, "streams")?, 1, MAX_STREAMS)?,
            duration: duration(&v)?,
        }),
        "data" => Ok(Request::Data {
            session: ranged("session", get_u64(&v, "session")?, 0, u32::MAX as u64)?,
            stream: ranged("stream", get_u64(&v, "stream")?, 0, MAX_STREAMS)?,
        }),
        "gaps" => {
            let rate = get_f64(&v, "rate")?;
            if !(rate > 0.0 && rate <= 1e6) {
                return Err(format!("rate must be in (0, 1e6] messages/s, got {rate}"));
            }
            Ok(Request::Gaps {
                rate,
                size: ranged("size", get_u64(&v, "size")?, UdpHeader::LEN as u64, MAX_UDP)?,
                duration: duration(&v)?,
            })
        }
        "media" => {
            let bitrate = get_f64(&v, "bitrate")?;
            if !(bitrate > 0.0 && bitrate <= 100e9) {
                return Err(format!("bitrate must be in (0, 100e9] bit/s, got {bitrate}"));
            }
            let streams = ranged("streams", get_u64(&v, "streams")?, 1, MAX_STREAMS)?;
            let packet_size =
                ranged("packet_size", get_u64(&v, "packet_size")?, UdpHeader::LEN as u64, MAX_UDP)?;
            let pps = bitrate / (packet_size as f64 * 8.0) * streams as f64;
            if pps > 2e6 {
                return Err(format!("media asks for {pps:.0} packets/s in total; at most 2e6"));
            }
            Ok(Request::Media { streams, bitrate, packet_size, duration: duration(&v)? })
        }
        other => Err(format!(
            "unknown op {other:?}; expected hello, rr, stream, data, gaps or media"
        )),
    }
}

/// Parse a CRR header (the 12 bytes after accept). Returns (request, response) sizes.
pub fn parse_crr_header(h: &[u8; CRR_HEADER]) -> Result<(u32, u32), String> {
    if &h[0..4] != CRR_MAGIC {
        return Err("bad CRR magic".into());
    }
    let req = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
    let resp = u32::from_be_bytes([h[8], h[9], h[10], h[11]]);
    if (req as usize) < CRR_HEADER || req as u64 > MAX_TCP_MSG {
        return Err(format!("CRR request size {req} outside {CRR_HEADER}..={MAX_TCP_MSG}"));
    }
    if resp == 0 || resp as u64 > MAX_TCP_MSG {
        return Err(format!("CRR response size {resp} outside 1..={MAX_TCP_MSG}"));
    }
    Ok((req, resp))
}

/// Build a CRR request buffer of `req` bytes (req >= 12) asking for `resp` bytes.
pub fn crr_request(req: u32, resp: u32) -> Vec<u8> {
    let mut b = vec![0u8; (req as usize).max(CRR_HEADER)];
    b[0..4].copy_from_slice(CRR_MAGIC);
    let len = b.len() as u32;
    b[4..8].copy_from_slice(&len.to_be_bytes());
    b[8..12].copy_from_slice(&resp.to_be_bytes());
    b
}

/// Kinds of UDP datagrams.
pub mod kind {
    pub const RR_REQ: u8 = 1;
    pub const RR_RESP: u8 = 2;
    pub const STREAM: u8 = 3;
    pub const GAPS: u8 = 4;
    pub const MEDIA_HELLO: u8 = 5;
    pub const MEDIA_DATA: u8 = 6;
}

/// The 32-byte header opening every UDP datagram (big-endian):
/// magic u16 "VN" | kind u8 | flags u8 | session u32 | stream u32 | response size u32 |
/// sequence u64 | sender timestamp u64 (CLOCK_MONOTONIC ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct UdpHeader {
    pub kind: u8,
    pub session: u32,
    pub stream: u32,
    pub resp: u32,
    pub seq: u64,
    pub ts: u64,
}

impl UdpHeader {
    pub const LEN: usize = 32;
    pub const MAGIC: [u8; 2] = *b"VN";

    #[inline]
    pub fn write(&self, b: &mut [u8]) {
        b[0..2].copy_from_slice(&Self::MAGIC);
        b[2] = self.kind;
        b[3] = 0;
        b[4..8].copy_from_slice(&self.session.to_be_bytes());
        b[8..12].copy_from_slice(&self.stream.to_be_bytes());
        b[12..16].copy_from_slice(&self.resp.to_be_bytes());
        b[16..24].copy_from_slice(&self.seq.to_be_bytes());
        b[24..32].copy_from_slice(&self.ts.to_be_bytes());
    }

    /// Parse a datagram's header; None if too short or not ours.
    #[inline]
    pub fn read(b: &[u8]) -> Option<UdpHeader> {
        if b.len() < Self::LEN || b[0..2] != Self::MAGIC {
            return None;
        }
        let u32at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_be_bytes(a)
        };
        Some(UdpHeader {
            kind: b[2],
            session: u32at(4),
            stream: u32at(8),
            resp: u32at(12),
            seq: u64at(16),
            ts: u64at(24),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_valid_requests() {
        assert_eq!(parse_request(br#"{"op":"hello"}"#), Ok(Request::Hello));
        assert_eq!(
            parse_request(br#"{"op":"rr","proto":"tcp","request":100,"response":200,"duration":5}"#),
            Ok(Request::Rr { proto: Proto::Tcp, request: 100, response: 200, duration: 5.0 })
        );
        assert_eq!(
            parse_request(br#"{"op":"stream","proto":"udp","streams":4,"duration":2.5}"#),
            Ok(Request::Stream { proto: Proto::Udp, streams: 4, duration: 2.5 })
        );
        assert_eq!(
            parse_request(br#"{"op":"data","session":7,"stream":0}"#),
            Ok(Request::Data { session: 7, stream: 0 })
        );
        assert_eq!(
            parse_request(br#"{"op":"gaps","rate":1000,"size":64,"duration":1}"#),
            Ok(Request::Gaps { rate: 1000.0, size: 64, duration: 1.0 })
        );
        assert_eq!(
            parse_request(
                br#"{"op":"media","streams":2,"bitrate":2e6,"packet_size":1316,"duration":1}"#
            ),
            Ok(Request::Media { streams: 2, bitrate: 2e6, packet_size: 1316, duration: 1.0 })
        );
    }

    #[test]
    fn rejects_malformed_requests() {
        let bad: &[&[u8]] = &[
            b"",
            b"not json",
            b"[1,2]",
            b"{}",
            br#"{"op":5}"#,
            br#"{"op":"nope"}"#,
            br#"{"op":"rr","proto":"sctp","request":1,"response":1,"duration":1}"#,
            br#"{"op":"rr","proto":"tcp","request":0,"response":1,"duration":1}"#,
            br#"{"op":"rr","proto":"udp","request":8,"response":100,"duration":1}"#,
            br#"{"op":"rr","proto":"tcp","request":-1,"response":1,"duration":1}"#,
            br#"{"op":"rr","proto":"tcp","request":100,"response":100,"duration":0}"#,
            br#"{"op":"rr","proto":"tcp","request":100,"response":100,"duration":1e9}"#,
            br#"{"op":"rr","proto":"tcp","request":100,"response":100}"#,
            br#"{"op":"stream","proto":"tcp","streams":0,"duration":1}"#,
            br#"{"op":"gaps","rate":0,"size":64,"duration":1}"#,
            br#"{"op":"gaps","rate":100,"size":4,"duration":1}"#,
            br#"{"op":"media","streams":1,"bitrate":"fast","packet_size":1316,"duration":1}"#,
            br#"{"op":"media","streams":1000,"bitrate":1e11,"packet_size":64,"duration":1}"#,
            br#"{"op":"data","session":1}"#,
        ];
        for b in bad {
            assert!(parse_request(b).is_err(), "accepted {:?}", String::from_utf8_lossy(b));
        }
    }

    #[test]
    fn crr_header_roundtrip() {
        let b = crr_request(100, 200);
        assert_eq!(b.len(), 100);
        let h: [u8; CRR_HEADER] = b[..CRR_HEADER].try_into().unwrap();
        assert_eq!(parse_crr_header(&h), Ok((100, 200)));
        // request sizes below the header grow to the header
        assert_eq!(crr_request(1, 1).len(), CRR_HEADER);
        let mut bad = h;
        bad[0] = b'X';
        assert!(parse_crr_header(&bad).is_err());
        let mut zero = h;
        zero[8..12].copy_from_slice(&0u32.to_be_bytes());
        assert!(parse_crr_header(&zero).is_err());
    }

    #[test]
    fn udp_header_roundtrip() {
        let h = UdpHeader { kind: kind::GAPS, session: 9, stream: 3, resp: 200, seq: 1 << 40, ts: 77 };
        let mut b = [0u8; 64];
        h.write(&mut b);
        assert_eq!(UdpHeader::read(&b), Some(h));
        assert_eq!(UdpHeader::read(&b[..31]), None);
        b[0] = 0;
        assert_eq!(UdpHeader::read(&b), None);
    }
}
