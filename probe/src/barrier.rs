//! Dissemination barrier over TCP (Hensgen, Finkel & Manber; what MPI_Barrier does for
//! small messages): with N ranks, round k (k = 0..ceil(log2 N)) rank i sends one byte to rank
//! (i + 2^k) mod N and waits for one byte from rank (i - 2^k) mod N. Each rank listens on its
//! own address; the connections are set up once. To stop after `--duration`, rank 0 sets a
//! flag bit in its messages; after one barrier every rank has (transitively) heard it.

use crate::cli::BarrierArgs;
use crate::client::{emit_end, event, resolve};
use crate::stats::{r3, Recorder};
use crate::util::emit;
use serde_json::json;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Number of rounds of a dissemination barrier among n ranks: ceil(log2 n).
pub fn rounds_for(n: usize) -> usize {
    let mut k = 0;
    while (1usize << k) < n {
        k += 1;
    }
    k
}

/// (send-to, receive-from) peers of `rank` in round `k`.
pub fn partners(rank: usize, n: usize, k: usize) -> (usize, usize) {
    let d = (1usize << k) % n;
    ((rank + d) % n, (rank + n - d) % n)
}

const FLAG_STOP: u8 = 1;

fn one_barrier(out: &mut [TcpStream], inc: &mut [TcpStream], flag: u8) -> std::io::Result<u8> {
    let mut f = flag;
    let mut b = [0u8; 1];
    for k in 0..out.len() {
        out[k].write_all(&[f])?;
        inc[k].read_exact(&mut b)?;
        f |= b[0];
    }
    Ok(f)
}

pub fn barrier(a: &BarrierArgs) -> Result<(), String> {
    let n = a.peers.len();
    if a.rank >= n {
        return Err(format!("--rank {} but only {} peers", a.rank, n));
    }
    if let Some(d) = a.duration {
        if !(d > 0.0) {
            return Err("--duration must be positive".into());
        }
    }
    if !(a.interval > 0.0) {
        return Err("--interval must be positive".into());
    }
    let peers: Vec<SocketAddr> = a.peers.iter().map(|p| resolve(p)).collect::<Result<_, _>>()?;
    let listen: SocketAddr = match &a.listen {
        Some(l) => resolve(l)?,
        None => SocketAddr::new("0.0.0.0".parse().unwrap(), peers[a.rank].port()),
    };
    let rounds_target = if a.duration.is_some() { None } else { Some(a.rounds.unwrap_or(1000)) };
    emit(&event(
        "start",
        "barrier",
        json!({"rank": a.rank, "ranks": n, "peers": a.peers, "listen": listen.to_string(),
               "rounds": rounds_target, "duration_s": a.duration, "steps": rounds_for(n)}),
    ));
    let kmax = rounds_for(n);
    let listener = TcpListener::bind(listen).map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs_f64(a.connect_timeout.max(0.1));
    // accept in a thread while we connect out
    let rank = a.rank;
    let acceptor = std::thread::spawn(move || -> Result<Vec<TcpStream>, String> {
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let mut got: Vec<Option<TcpStream>> = (0..kmax).map(|_| None).collect();
        let mut have = 0;
        while have < kmax {
            if Instant::now() > deadline {
                return Err(format!("barrier: only {have} of {kmax} peers connected in time"));
            }
            match listener.accept() {
                Ok((mut s, _)) => {
                    let _ = s.set_nonblocking(false);
                    let _ = s.set_nodelay(true);
                    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                    let mut h = [0u8; 8];
                    if s.read_exact(&mut h).is_err() {
                        continue;
                    }
                    let from = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
                    let k = u32::from_be_bytes([h[4], h[5], h[6], h[7]]) as usize;
                    if k < kmax && partners(rank, n, k).1 == from && got[k].is_none() {
                        got[k] = Some(s);
                        have += 1;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => return Err(format!("barrier accept: {e}")),
            }
        }
        Ok(got.into_iter().map(Option::unwrap).collect())
    });
    let mut out = Vec::with_capacity(kmax);
    for k in 0..kmax {
        let to = partners(a.rank, n, k).0;
        let s = loop {
            match TcpStream::connect_timeout(&peers[to], Duration::from_secs(2)) {
                Ok(s) => break s,
                Err(e) => {
                    if Instant::now() > deadline {
                        return Err(format!("barrier: cannot connect to rank {to} at {}: {e}", peers[to]));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        };
        let _ = s.set_nodelay(true);
        let mut s = s;
        let mut h = [0u8; 8];
        h[..4].copy_from_slice(&(a.rank as u32).to_be_bytes());
        h[4..].copy_from_slice(&(k as u32).to_be_bytes());
        s.write_all(&h).map_err(|e| format!("barrier hello: {e}"))?;
        out.push(s);
    }
    let mut inc = acceptor.join().map_err(|_| "acceptor panicked".to_string())??;
    for s in inc.iter().chain(out.iter()) {
        let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    }
    let io = |e: std::io::Error| format!("barrier: peer failed: {e}");
    one_barrier(&mut out, &mut inc, 0).map_err(io)?; // synchronised start
    let mut rec = Recorder::new();
    let mut irec = Recorder::new();
    let start = Instant::now();
    let stop_at = a.duration.map(|d| start + Duration::from_secs_f64(d));
    let iv = Duration::from_secs_f64(a.interval);
    let (mut next_iv, mut iv_start, mut idx) = (start + iv, start, 0u64);
    let mut count = 0u64;
    loop {
        let t0 = Instant::now();
        let flag = match stop_at {
            Some(t) if a.rank == 0 && t0 >= t => FLAG_STOP,
            _ => 0,
        };
        let f = one_barrier(&mut out, &mut inc, flag).map_err(io)?;
        let now = Instant::now();
        let ns = (now - t0).as_nanos() as u64;
        rec.record(ns);
        irec.record(ns);
        count += 1;
        if now >= next_iv {
            let secs = (now - iv_start).as_secs_f64();
            emit(&event(
                "interval",
                "barrier",
                json!({"index": idx, "duration_s": r3(secs), "rounds": irec.count(),
                       "rounds_per_s": r3(irec.count() as f64 / secs), "sync_us": irec.summary().to_json()}),
            ));
            irec.reset();
            idx += 1;
            iv_start = now;
            while next_iv <= now {
                next_iv += iv;
            }
        }
        let done = match rounds_target {
            Some(r) => count >= r,
            None => f & FLAG_STOP != 0,
        };
        if done {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    emit_end(
        "barrier",
        json!({"rank": a.rank, "ranks": n, "steps": kmax, "rounds": count, "duration_s": r3(secs),
               "rounds_per_s": r3(count as f64 / secs.max(1e-9)), "sync_us": rec.end_json()}),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_counts() {
        assert_eq!(rounds_for(1), 0);
        assert_eq!(rounds_for(2), 1);
        assert_eq!(rounds_for(3), 2);
        assert_eq!(rounds_for(4), 2);
        assert_eq!(rounds_for(5), 3);
        assert_eq!(rounds_for(8), 3);
    }

    #[test]
    fn partners_are_consistent() {
        for n in 2..12 {
            for k in 0..rounds_for(n) {
                for r in 0..n {
                    let (to, _) = partners(r, n, k);
                    // whoever I send to expects to receive from me in the same round
                    assert_eq!(partners(to, n, k).1, r);
                }
            }
        }
    }
}
