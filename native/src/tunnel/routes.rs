//! Route table: IPv4 prefix -> UDP peer, longest prefix match by linear scan
//! (the table holds a handful of entries; sorted by prefix length, longest first).

use std::net::{Ipv4Addr, SocketAddrV4};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub net: u32,
    pub mask: u32,
    pub len: u8,
    pub peer: SocketAddrV4,
}

/// Parse `A.B.C.D/LEN=IP:PORT`.
pub fn parse_route(s: &str) -> Result<Route, String> {
    let (subnet, peer) = s.split_once('=').ok_or_else(|| format!("route {:?}: expected SUBNET=PEER_IP:PORT", s))?;
    let (ip, len) = subnet.split_once('/').unwrap_or((subnet, "32"));
    let ip: Ipv4Addr = ip.parse().map_err(|_| format!("route {:?}: bad subnet address", s))?;
    let len: u8 = len.parse().ok().filter(|l| *l <= 32).ok_or_else(|| format!("route {:?}: bad prefix length", s))?;
    let peer: SocketAddrV4 = peer.parse().map_err(|_| format!("route {:?}: bad peer IP:PORT", s))?;
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    Ok(Route { net: u32::from(ip) & mask, mask, len, peer })
}

#[derive(Debug, Clone, Default)]
pub struct Table {
    routes: Vec<Route>,
}

impl Table {
    pub fn new(mut routes: Vec<Route>) -> Table {
        routes.sort_by_key(|r| std::cmp::Reverse(r.len));
        Table { routes }
    }
    /// Longest-prefix match for a destination address (host order u32).
    pub fn lookup(&self, dst: u32) -> Option<&SocketAddrV4> {
        self.routes.iter().find(|r| dst & r.mask == r.net).map(|r| &r.peer)
    }
    /// Whether a datagram from ``src`` comes from one of the table's peers (address and
    /// port): the tunnel writes to its tun only what its peers sent.
    pub fn is_peer(&self, src: &SocketAddrV4) -> bool {
        self.routes.iter().any(|r| r.peer == *src)
    }
    /// Destination of an IPv4 packet, or None if not IPv4 / too short.
    pub fn lookup_packet(&self, pkt: &[u8]) -> Option<&SocketAddrV4> {
        if pkt.len() < 20 || pkt[0] >> 4 != 4 {
            return None;
        }
        self.lookup(u32::from_be_bytes([pkt[16], pkt[17], pkt[18], pkt[19]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> u32 {
        u32::from(s.parse::<Ipv4Addr>().unwrap())
    }

    #[test]
    fn parse_and_lpm() {
        let t = Table::new(vec![
            parse_route("10.253.0.0/16=10.252.0.9:7000").unwrap(),
            parse_route("10.253.2.0/24=10.252.0.2:7000").unwrap(),
            parse_route("10.253.3.7=10.252.0.3:7001").unwrap(),
        ]);
        assert_eq!(t.lookup(ip("10.253.2.1")).unwrap().to_string(), "10.252.0.2:7000");
        assert_eq!(t.lookup(ip("10.253.9.1")).unwrap().to_string(), "10.252.0.9:7000");
        assert_eq!(t.lookup(ip("10.253.3.7")).unwrap().to_string(), "10.252.0.3:7001");
        assert_eq!(t.lookup(ip("10.254.0.1")), None);
    }

    #[test]
    fn packet_lookup_ipv4_only() {
        let t = Table::new(vec![parse_route("10.253.2.0/24=10.252.0.2:7000").unwrap()]);
        let mut p = [0u8; 20];
        p[0] = 0x45;
        p[16..20].copy_from_slice(&[10, 253, 2, 5]);
        assert!(t.lookup_packet(&p).is_some());
        p[0] = 0x60; // IPv6
        assert!(t.lookup_packet(&p).is_none());
        assert!(t.lookup_packet(&p[..10]).is_none());
    }

    #[test]
    fn only_the_routes_peers_are_peers() {
        let t = Table::new(vec![parse_route("10.253.2.0/24=10.252.0.2:7000").unwrap()]);
        assert!(t.is_peer(&"10.252.0.2:7000".parse().unwrap()));
        assert!(!t.is_peer(&"10.252.0.2:7001".parse().unwrap()));
        assert!(!t.is_peer(&"10.252.0.66:7000".parse().unwrap()));
    }

    #[test]
    fn parse_errors() {
        assert!(parse_route("10.0.0.0/24").is_err());
        assert!(parse_route("10.0.0.0/33=1.2.3.4:5").is_err());
        assert!(parse_route("10.0.0.0/24=1.2.3.4").is_err());
        assert_eq!(parse_route("10.0.0.77/24=1.2.3.4:5").unwrap().net, ip("10.0.0.0"));
    }
}
