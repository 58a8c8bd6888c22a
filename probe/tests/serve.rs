//! End-to-end tests against an in-process `serve` on loopback: valid sessions, error paths,
//! and a property test throwing random / malformed control messages at the server.

use proptest::prelude::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;
use vnetbench_probe::server::Server;
use vnetbench_probe::util::{read_json, write_json};

fn port() -> u16 {
    static PORT: OnceLock<u16> = OnceLock::new();
    *PORT.get_or_init(|| {
        let s = Server::bind("127.0.0.1", 0).expect("bind");
        let p = s.port();
        s.spawn();
        p
    })
}

fn conn() -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port())).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn ask(msg: &Value) -> Value {
    let mut s = conn();
    write_json(&mut s, msg).unwrap();
    read_json(&mut s).unwrap()
}

/// A valid TCP rr session: handshake and 50 transactions.
fn valid_rr() {
    let mut s = conn();
    write_json(&mut s, &json!({"op":"rr","proto":"tcp","request":100,"response":200,"duration":5})).unwrap();
    assert_eq!(read_json(&mut s).unwrap()["ok"], json!(true));
    let req = [1u8; 100];
    let mut resp = [0u8; 200];
    for _ in 0..50 {
        s.write_all(&req).unwrap();
        s.read_exact(&mut resp).unwrap();
    }
}

fn probe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vnetbench-probe"))
}

#[test]
fn hello_answers_ok() {
    let r = ask(&json!({"op": "hello"}));
    assert_eq!(r["ok"], json!(true));
    assert_eq!(r["udp_port"], json!(port()));
}

#[test]
fn rr_tcp_session_works() {
    valid_rr();
}

#[test]
fn malformed_control_gets_error_reply() {
    for bad in [
        json!({"op": "rr", "proto": "tcp"}),
        json!({"op": "launch"}),
        json!({"op": "media", "streams": 0, "bitrate": 1e6, "packet_size": 1316, "duration": 1}),
    ] {
        let r = ask(&bad);
        assert_eq!(r["ok"], json!(false), "{bad}");
        assert!(r["error"].as_str().unwrap().len() > 3);
    }
    let mut s = conn();
    s.write_all(b"{this is not json\n").unwrap();
    let r = read_json(&mut s).unwrap();
    assert_eq!(r["ok"], json!(false));
    let mut s = conn();
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let r = read_json(&mut s).unwrap();
    assert_eq!(r["ok"], json!(false));
    valid_rr();
}

#[test]
fn data_for_unknown_session_is_refused() {
    let r = ask(&json!({"op": "data", "session": 12345, "stream": 0}));
    assert_eq!(r["ok"], json!(false));
    assert!(r["error"].as_str().unwrap().contains("session"));
}

#[test]
fn bad_crr_header_is_refused() {
    let mut s = conn();
    s.write_all(b"VNBX\0\0\0\x0c\0\0\0\x01").unwrap();
    let r = read_json(&mut s).unwrap();
    assert_eq!(r["ok"], json!(false));
}

#[test]
fn crr_transaction() {
    let mut s = conn();
    s.write_all(&vnetbench_probe::proto::crr_request(100, 300)).unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    assert_eq!(resp.len(), 300);
}

#[test]
fn clients_vanishing_mid_session_do_not_hurt() {
    // rr: half a request, then gone
    let mut s = conn();
    write_json(&mut s, &json!({"op":"rr","proto":"tcp","request":1000,"response":10,"duration":1})).unwrap();
    read_json(&mut s).unwrap();
    s.write_all(&[0u8; 10]).unwrap();
    drop(s);
    // stream: session then gone without finish
    let r = {
        let mut c = conn();
        write_json(&mut c, &json!({"op":"stream","proto":"tcp","streams":1,"duration":1})).unwrap();
        let r = read_json(&mut c).unwrap();
        let mut d = conn();
        write_json(&mut d, &json!({"op":"data","session":r["session"],"stream":0})).unwrap();
        read_json(&mut d).unwrap();
        d.write_all(&[0u8; 100_000]).unwrap();
        d.shutdown(Shutdown::Both).unwrap();
        r
    };
    assert_eq!(r["ok"], json!(true));
    // silent client: connects, says nothing
    let _silent = conn();
    // half a control line
    let mut h = conn();
    h.write_all(b"{\"op\":\"he").unwrap();
    drop(h);
    valid_rr();
}

#[test]
fn stream_session_counts_bytes() {
    let mut c = conn();
    write_json(&mut c, &json!({"op":"stream","proto":"tcp","streams":2,"duration":2})).unwrap();
    let r = read_json(&mut c).unwrap();
    for i in 0..2u64 {
        let mut d = conn();
        write_json(&mut d, &json!({"op":"data","session":r["session"],"stream":i})).unwrap();
        assert_eq!(read_json(&mut d).unwrap()["ok"], json!(true));
        d.write_all(&vec![7u8; 1000 * (i as usize + 1)]).unwrap();
        d.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        d.read_to_end(&mut rest).unwrap();
    }
    write_json(&mut c, &json!({"op":"finish"})).unwrap();
    let f = read_json(&mut c).unwrap();
    assert_eq!(f["bytes"], json!([1000, 2000]));
    // bad in-session message: error, session continues
    let mut c = conn();
    write_json(&mut c, &json!({"op":"stream","proto":"udp","streams":1,"duration":2})).unwrap();
    read_json(&mut c).unwrap();
    c.write_all(b"garbage\n").unwrap();
    assert_eq!(read_json(&mut c).unwrap()["ok"], json!(false));
    write_json(&mut c, &json!({"op":"finish"})).unwrap();
    assert_eq!(read_json(&mut c).unwrap()["packets"], json!([0]));
}

#[test]
fn binary_rr_end_event_and_error_exit() {
    let out = probe()
        .args(["rr", "--server", &format!("127.0.0.1:{}", port()), "--duration", "0.5"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let end: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(end["event"], json!("end"));
    assert!(end["tps"].as_f64().unwrap() > 0.0);
    let rtt = end["rtt_us"].as_object().unwrap();
    assert_eq!(rtt.len(), 12); // the summary keys plus "hist"
    assert!(rtt["p50"].as_f64().unwrap() <= rtt["p99"].as_f64().unwrap());
    let hist = rtt["hist"].as_array().unwrap();
    let counted: u64 = hist.iter().map(|p| p[1].as_u64().unwrap()).sum();
    assert_eq!(counted, end["transactions"].as_u64().unwrap());
    // interval events carry the summary only
    let first: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    if first["event"] == json!("interval") {
        assert!(first["rtt_us"].get("hist").is_none());
    }
    assert!(end["cpu_user_s"].as_f64().is_some() && end["cpu_sys_s"].as_f64().is_some());

    // a port nobody listens on: error event, exit 1
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    let out = probe().args(["rr", "--server", &format!("127.0.0.1:{dead_port}"), "--duration", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let err: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(err["event"], json!("error"));
    assert!(err["message"].as_str().unwrap().contains("connect"));

    // invalid option value: error event, exit 1
    let out = probe()
        .args(["gaps", "--server", &format!("127.0.0.1:{}", port()), "--size", "4"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn binary_rr_open_loop_and_many_flows() {
    let server = format!("127.0.0.1:{}", port());
    let last = |args: &[&str]| -> (bool, Value) {
        let out = probe().args(args).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        (out.status.success(), serde_json::from_str(text.lines().last().unwrap()).unwrap())
    };
    // an open loop of 1000 requests/s over 3 flows for 1 s: every request answered
    let (ok, end) = last(&["rr", "--server", &server, "--rate", "1000", "--flows", "3",
                           "--arrivals", "constant", "--duration", "1"]);
    assert!(ok, "{end}");
    assert_eq!(end["open_loop"], json!(true));
    assert_eq!(end["offered_tps"], json!(1000.0));
    let scheduled = end["scheduled"].as_u64().unwrap();
    assert!((990..=1000).contains(&scheduled), "{scheduled}");
    assert_eq!(end["transactions"].as_u64().unwrap(), scheduled);
    assert_eq!(end["unanswered"], json!(0));
    assert_eq!(end["behind"], json!(false));
    let hist = end["rtt_us"]["hist"].as_array().unwrap();
    assert_eq!(hist.iter().map(|p| p[1].as_u64().unwrap()).sum::<u64>(), scheduled);
    // from the arrival time, never shorter than from the actual write
    assert!(end["rtt_us"]["p50"].as_f64().unwrap() >= end["service_us"]["p50"].as_f64().unwrap());
    // closed loop on 4 flows: each its own thread, transactions counted across them
    let (ok, end) = last(&["rr", "--server", &server, "--flows", "4", "--duration", "0.5"]);
    assert!(ok, "{end}");
    assert_eq!(end["flows"], json!(4));
    assert!(end["transactions"].as_u64().unwrap() > 100);
    assert!(end.get("open_loop").is_none());
    // refused: UDP with flows, a burst in an open loop
    for bad in [&["rr", "--server", &server, "--protocol", "udp", "--rate", "10"][..],
                &["rr", "--server", &server, "--rate", "10", "--burst", "2"][..]] {
        let (ok, end) = last(bad);
        assert!(!ok);
        assert_eq!(end["event"], json!("error"));
    }
}

#[test]
fn binary_udp_modes_roundtrip() {
    let server = format!("127.0.0.1:{}", port());
    let out = probe().args(["rr", "--server", &server, "--protocol", "udp", "--duration", "0.5"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let out = probe()
        .args(["gaps", "--server", &server, "--rate", "500", "--duration", "0.5"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let end: Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(end["sent"], json!(250));
    assert!(end["recv_gap_us"]["p50"].as_f64().unwrap() > 1000.0);
    for key in ["send_gap_us", "recv_gap_us"] {
        let counted: u64 = end[key]["hist"].as_array().unwrap().iter().map(|p| p[1].as_u64().unwrap()).sum();
        assert!(counted >= 240, "{key}: {counted}"); // one gap fewer than messages
    }
    assert!(end["send_gap_dev_us"].get("hist").is_none());
    let out = probe()
        .args(["media", "--server", &server, "--streams", "2", "--duration", "0.5"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let end: Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(end["streams"].as_array().unwrap().len(), 2);
}

#[test]
fn binary_stream_nodelay_follows_the_flag() {
    let server = format!("127.0.0.1:{}", port());
    for (extra, want) in [(None, false), (Some("--nodelay"), true)] {
        let mut args = vec!["stream", "--server", &server, "--duration", "0.3", "--streams", "2"];
        args.extend(extra);
        let out = probe().args(&args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        let text = String::from_utf8(out.stdout).unwrap();
        let start: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let end: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(start["nodelay"], json!(want), "{args:?}");
        // read back from the data sockets with getsockopt
        assert_eq!(end["nodelay"], json!(want), "{args:?}");
        assert!(end["bytes"].as_u64().unwrap() > 0);
    }
    let out = probe()
        .args(["stream", "--server", &server, "--protocol", "udp", "--nodelay", "--duration", "0.3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

fn garbage() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // raw bytes
        proptest::collection::vec(any::<u8>(), 0..600),
        // JSON-ish lines with random ops and fields
        (
            "(rr|stream|data|gaps|media|hello|finish|[a-z]{0,8})",
            proptest::collection::vec(
                ("[a-z_]{1,12}", prop_oneof![
                    any::<i64>().prop_map(|i| json!(i)),
                    any::<f64>().prop_map(|f| if f.is_finite() { json!(f) } else { json!(null) }),
                    "[ -~]{0,10}".prop_map(|s| json!(s)),
                    Just(json!(null)), Just(json!([1, 2])), Just(json!({"a": 1})),
                    Just(json!(0.000001)), Just(json!(2_000_000u64)),
                ]),
                0..6,
            ),
        )
            .prop_map(|(op, fields)| {
                let mut m = serde_json::Map::new();
                m.insert("op".into(), json!(op));
                for (k, v) in fields {
                    m.insert(k, v);
                }
                let mut b = Value::Object(m).to_string().into_bytes();
                b.push(b'\n');
                b
            }),
        // CRR-looking headers with random sizes
        (any::<u32>(), any::<u32>()).prop_map(|(a, b)| {
            let mut v = b"VNBC".to_vec();
            v.extend_from_slice(&(a % 5000).to_be_bytes());
            v.extend_from_slice(&(b % 5000).to_be_bytes());
            v
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn server_survives_garbage(msg in garbage(), close_early in any::<bool>()) {
        let mut s = conn();
        s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        let _ = s.write_all(&msg);
        if close_early {
            drop(s);
        } else {
            let _ = s.shutdown(Shutdown::Write);
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        }
        // the server still serves a valid client
        let r = ask(&json!({"op": "hello"}));
        prop_assert_eq!(&r["ok"], &json!(true));
        valid_rr();
    }
}
