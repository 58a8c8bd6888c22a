//! vnetbench-tunnel: userspace UDP encapsulation forwarder over tun.
//!
//! Thread 1 (tun->udp): read an IP packet from the tun, longest-prefix-match
//! its IPv4 destination, send it as one UDP datagram to that peer.
//! Thread 2 (udp->tun): receive datagrams on the listen socket, write each one
//! a peer sent (address and port of a route) to the tun; count the others. Blocking I/O, one fixed buffer per thread, no per-packet allocation.
//! The main thread waits for SIGTERM/SIGINT (sigtimedwait), rewriting the stats
//! file every second, then prints the final counters and exits 0.

use std::io::{Read, Write};
use std::net::{SocketAddrV4, UdpSocket};
use std::sync::Arc;
use vnetbench_native::common::{self, Args};
use vnetbench_native::tunnel::routes::{parse_route, Table};
use vnetbench_native::tunnel::stats::Counters;
use vnetbench_native::tunnel::tun;

const USAGE: &str = "usage: vnetbench-tunnel --tun NAME --listen IP:PORT --route SUBNET=PEER_IP:PORT [--route ...]
       [--mtu 1472] [--stats-file PATH]";

fn fail(msg: String) -> ! {
    eprintln!("vnetbench-tunnel: {}", msg);
    std::process::exit(1);
}

fn main() {
    let a = match Args::parse(std::env::args().skip(1), &["--help"]).and_then(|a| {
        a.check_known(&["--tun", "--listen", "--route", "--mtu", "--stats-file", "--help"]).map(|_| a)
    }) {
        Ok(a) if !a.has("--help") && a.get("--tun").is_some() && a.get("--listen").is_some() => a,
        Ok(_) => {
            eprintln!("{}", USAGE);
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("vnetbench-tunnel: {}\n{}", e, USAGE);
            std::process::exit(2);
        }
    };
    let name = a.get("--tun").unwrap().to_string();
    let listen: SocketAddrV4 = a.get("--listen").unwrap().parse().unwrap_or_else(|_| fail("bad --listen".into()));
    let mtu: usize = a.num("--mtu", 1472).unwrap_or_else(|e| fail(e));
    let routes = a.all("--route").iter().map(|r| parse_route(r)).collect::<Result<Vec<_>, _>>();
    let table = Table::new(routes.unwrap_or_else(|e| fail(e)));
    let peers = table.clone();
    let stats_file = a.get("--stats-file").map(String::from);

    // Block the signals before spawning threads so only sigtimedwait sees them.
    let sigs = common::block_term_signals();

    let dev = tun::open_tun(&name).unwrap_or_else(|e| fail(format!("tun {}: {}", name, e)));
    if let Err(e) = tun::set_mtu(&name, mtu as u32) {
        eprintln!("vnetbench-tunnel: warning: set mtu {}: {}", mtu, e);
    }
    let sock = Arc::new(UdpSocket::bind(listen).unwrap_or_else(|e| fail(format!("bind {}: {}", listen, e))));
    let ctr = Arc::new(Counters::default());

    // tun -> udp
    {
        let (mut dev, sock, ctr) = (dev.try_clone().expect("dup tun fd"), sock.clone(), ctr.clone());
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            loop {
                let n = match dev.read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => fail(format!("tun read: {}", e)),
                };
                let pkt = &buf[..n];
                if n > mtu {
                    Counters::add(&ctr.drop_oversized, 1);
                    continue;
                }
                let Some(peer) = table.lookup_packet(pkt) else {
                    Counters::add(&ctr.drop_no_route, 1);
                    continue;
                };
                match sock.send_to(pkt, *peer) {
                    Ok(_) => {
                        Counters::add(&ctr.tun_to_udp_packets, 1);
                        Counters::add(&ctr.tun_to_udp_bytes, n as u64);
                    }
                    Err(_) => Counters::add(&ctr.drop_send_error, 1),
                }
            }
        });
    }
    // udp -> tun: only what a peer sent (any other sender could inject packets into the lab)
    {
        let (mut dev, sock, ctr) = (dev, sock.clone(), ctr.clone());
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            loop {
                let n = match sock.recv_from(&mut buf) {
                    Ok((n, std::net::SocketAddr::V4(src))) if peers.is_peer(&src) => n,
                    Ok(_) => {
                        Counters::add(&ctr.drop_not_peer, 1);
                        continue;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => continue, // e.g. ICMP-induced ECONNREFUSED: keep going
                };
                if n > mtu {
                    Counters::add(&ctr.drop_oversized, 1);
                    continue;
                }
                match dev.write(&buf[..n]) {
                    Ok(w) if w == n => {
                        Counters::add(&ctr.udp_to_tun_packets, 1);
                        Counters::add(&ctr.udp_to_tun_bytes, n as u64);
                    }
                    _ => Counters::add(&ctr.drop_write_error, 1),
                }
            }
        });
    }

    common::emit_line("{\"event\":\"ready\"}");
    let tick = libc::timespec { tv_sec: 1, tv_nsec: 0 };
    loop {
        // SAFETY: waits for one of the blocked signals, or times out after 1 s.
        let r = unsafe { libc::sigtimedwait(&sigs, std::ptr::null_mut(), &tick) };
        if r == libc::SIGTERM || r == libc::SIGINT {
            break;
        }
        if let Some(p) = &stats_file {
            let _ = common::write_stats_file(p, &ctr.to_json("stats"));
        }
    }
    let line = ctr.to_json("end");
    if let Some(p) = &stats_file {
        let _ = common::write_stats_file(p, &line);
    }
    common::emit_line(&line);
    let _ = std::io::stdout().flush();
    std::process::exit(0);
}
