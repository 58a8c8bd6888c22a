"""A minimal rtnetlink client: the link, address, route and FDB requests a lab needs, sent on
a netlink socket of the calling thread's network namespace (no process, no pyroute2).

A socket belongs to the namespace its thread was in when it was opened (``vnetbench.host.netns``
moves a thread between namespaces), so one thread can configure many namespaces in turn.
Every request asks for an acknowledgement: the kernel has made the change when ``Rtnl``
returns, and a refusal raises ``OSError`` with the kernel's errno. Requests are pipelined:
``send`` queues a request on the socket and ``flush`` collects the acknowledgements, so a
node's addresses and routes cost one round trip; a request that needs an interface's index
flushes first, so it sees what earlier requests created.

Message layouts follow ``linux/rtnetlink.h``, ``linux/if_link.h`` and ``linux/neighbour.h``.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
from collections.abc import Iterable

NETLINK_ROUTE = 0
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 0x1, 0x4, 0x300
NLM_F_EXCL, NLM_F_CREATE, NLM_F_APPEND = 0x200, 0x400, 0x800
RTM_NEWLINK, RTM_GETLINK, RTM_NEWADDR, RTM_NEWROUTE, RTM_NEWNEIGH = 16, 18, 20, 24, 28
RTM_GETADDR, RTM_GETROUTE = 22, 26

IFF_UP = 0x1
IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, IFLA_LINK, IFLA_MASTER = 1, 3, 4, 5, 10
IFLA_LINKINFO, IFLA_NET_NS_FD, IFLA_EXT_MASK = 18, 28, 29
IFLA_INFO_KIND, IFLA_INFO_DATA = 1, 2
VETH_INFO_PEER = 1
IFLA_BR_STP_STATE, IFLA_BR_MCAST_SNOOPING = 5, 23
IFLA_VXLAN_ID, IFLA_VXLAN_LINK, IFLA_VXLAN_LOCAL, IFLA_VXLAN_PORT = 1, 3, 4, 15
IFLA_MACVLAN_MODE, IFLA_IPVLAN_MODE = 1, 1
MACVLAN_MODES = {"private": 1, "vepa": 2, "bridge": 4, "passthru": 8, "source": 16}
IPVLAN_MODES = {"l2": 0, "l3": 1, "l3s": 2}
IFA_ADDRESS, IFA_LOCAL = 1, 2
RTA_DST, RTA_OIF, RTA_GATEWAY = 1, 4, 5
RT_TABLE_MAIN, RTPROT_BOOT, RTN_UNICAST = 254, 3, 1
RT_SCOPE_UNIVERSE, RT_SCOPE_LINK = 0, 253
NDA_DST, NDA_LLADDR = 1, 2
NUD_NOARP, NUD_PERMANENT, NTF_SELF = 0x40, 0x80, 0x02
AF_BRIDGE = 7
RTEXT_FILTER_SKIP_STATS = 1 << 3
SOL_NETLINK, NETLINK_CAP_ACK = 270, 10
WINDOW = 32
"""Requests queued before their acknowledgements are read (bounded: acknowledgements left
unread in a full receive buffer would be dropped)."""

_HEADER = struct.Struct("=IHHII")
_IFINFO = struct.Struct("=BxHiII")
_IFADDR = struct.Struct("=BBBBI")
_RTMSG = struct.Struct("=BBBBBBBBI")
_NDMSG = struct.Struct("=BxxxiHBB")


def attr(kind: int, payload: bytes) -> bytes:
    """One netlink attribute (type-length-value, padded to 4 bytes)."""
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * (-length % 4)


def nested(kind: int, *attrs: bytes) -> bytes:
    return attr(kind | 0x8000, b"".join(attrs))  # NLA_F_NESTED


def u8(kind: int, value: int) -> bytes:
    return attr(kind, struct.pack("=B", value))


def u16(kind: int, value: int) -> bytes:
    return attr(kind, struct.pack("=H", value))


def u32(kind: int, value: int) -> bytes:
    return attr(kind, struct.pack("=I", value))


def be16(kind: int, value: int) -> bytes:
    return attr(kind, struct.pack("!H", value))


def string(kind: int, value: str) -> bytes:
    return attr(kind, value.encode() + b"\0")


def ipv4(kind: int, address: str) -> bytes:
    return attr(kind, socket.inet_aton(address))


def ifinfo(index: int = 0, flags: int = 0, change: int = 0) -> bytes:
    return _IFINFO.pack(socket.AF_UNSPEC, 0, index, flags, change)


def attributes(payload: bytes, offset: int) -> dict[int, bytes]:
    """The attributes of a message from ``offset`` (past its fixed header): type -> value
    (nested-flag bits cleared; a repeated type keeps its first value)."""
    found: dict[int, bytes] = {}
    while offset + 4 <= len(payload):
        length, kind = struct.unpack_from("=HH", payload, offset)
        if length < 4:
            break
        found.setdefault(kind & 0x3FFF, payload[offset + 4:offset + length])
        offset += (length + 3) & ~3
    return found


def ipv4_networks(sock: Rtnl) -> list[tuple[str, int]]:
    """(address, prefix length) of every IPv4 route in every table of the calling thread's
    namespace (the default route excluded) and of every IPv4 address, as ``ip -4 route show
    table all`` and ``ip -4 addr`` list them."""
    found: list[tuple[str, int]] = []
    route_query = _RTMSG.pack(socket.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0)
    for payload in sock.dump(RTM_GETROUTE, route_query):
        family, dst_len = payload[0], payload[1]
        dst = attributes(payload, _RTMSG.size).get(RTA_DST)
        if family == socket.AF_INET and dst is not None and len(dst) == 4:
            found.append((socket.inet_ntoa(dst), dst_len))
    for payload in sock.dump(RTM_GETADDR, _IFADDR.pack(socket.AF_INET, 0, 0, 0, 0)):
        family, prefix = payload[0], payload[1]
        attrs = attributes(payload, _IFADDR.size)
        local = attrs.get(IFA_LOCAL, attrs.get(IFA_ADDRESS))
        if family == socket.AF_INET and local is not None and len(local) == 4:
            found.append((socket.inet_ntoa(local), prefix))
    return found


class Rtnl:
    """A NETLINK_ROUTE socket in the calling thread's current network namespace."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
        self.sock.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)  # acks without the request
        self.sock.bind((0, 0))
        self.seq = 0
        self.pending: dict[int, str] = {}
        """Sequence number -> what the request was, for acknowledgements not yet read."""
        self.indexes: dict[str, int] = {}

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Rtnl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the wire -------------------------------------------------------------------
    def send(self, msg_type: int, flags: int, body: bytes, what: str) -> None:
        """Queue one request (acknowledged at the next ``flush``)."""
        self.seq += 1
        header = _HEADER.pack(_HEADER.size + len(body), msg_type,
                              NLM_F_REQUEST | NLM_F_ACK | flags, self.seq, 0)
        self.sock.sendall(header + body)
        self.pending[self.seq] = what
        if len(self.pending) >= WINDOW:
            self.flush()

    def flush(self) -> None:
        """Wait for every queued request's acknowledgement; OSError naming the first the
        kernel refused (after reading them all, so the socket stays usable)."""
        failed: OSError | None = None
        while self.pending:
            for seq, code, _ in self._messages():
                what = self.pending.pop(seq, None)
                if what is not None and code and failed is None:
                    failed = OSError(code, f"{what}: {os.strerror(code)}")
        if failed is not None:
            raise failed

    def _messages(self) -> Iterable[tuple[int, int, bytes]]:
        """(sequence, errno or 0, payload) of each message in one read."""
        data = self.sock.recv(1 << 16)
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, msg_type, _, seq, _ = _HEADER.unpack_from(data, offset)
            payload = data[offset + _HEADER.size:offset + length]
            code = -struct.unpack_from("=i", payload)[0] if msg_type == NLMSG_ERROR else 0
            yield seq, code, payload
            offset += (length + 3) & ~3

    def dump(self, msg_type: int, body: bytes) -> list[bytes]:
        """The payload of every message a dump request answers (after the queued requests
        are done); OSError if the kernel refuses it."""
        self.flush()
        self.seq += 1
        self.sock.sendall(_HEADER.pack(_HEADER.size + len(body), msg_type,
                                       NLM_F_REQUEST | NLM_F_DUMP, self.seq, 0) + body)
        out: list[bytes] = []
        while True:
            data = self.sock.recv(1 << 16)
            offset = 0
            while offset + _HEADER.size <= len(data):
                length, kind, _, seq, _ = _HEADER.unpack_from(data, offset)
                payload = data[offset + _HEADER.size:offset + length]
                offset += (length + 3) & ~3
                if seq != self.seq:
                    continue
                if kind == NLMSG_DONE:
                    return out
                if kind == NLMSG_ERROR:
                    code = -struct.unpack_from("=i", payload)[0]
                    if code:
                        raise OSError(code, f"netlink dump {msg_type}: {os.strerror(code)}")
                    return out
                out.append(payload)

    def index(self, name: str) -> int:
        """The index of interface ``name`` here (after the queued requests are done)."""
        if name in self.indexes:
            return self.indexes[name]
        self.flush()
        self.seq += 1
        body = ifinfo() + string(IFLA_IFNAME, name) + u32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS)
        self.sock.sendall(_HEADER.pack(_HEADER.size + len(body), RTM_GETLINK, NLM_F_REQUEST,
                                       self.seq, 0) + body)
        for seq, code, payload in self._messages():
            if seq != self.seq:
                continue
            if code:
                raise OSError(code, f"interface {name}: "
                                    f"{'does not exist' if code == errno.ENODEV else os.strerror(code)}")
            found: int = _IFINFO.unpack_from(payload)[2]
            self.indexes[name] = found
            return found
        raise OSError(errno.EIO, f"interface {name}: no answer from the kernel")

    # ---- requests -------------------------------------------------------------------
    def new_link(self, name: str, kind: str, data: bytes = b"", *, mtu: int | None = None,
                 link: str | None = None, extra: bytes = b"", master: str | None = None,
                 up: bool = False, what: str = "") -> None:
        """Create interface ``name`` of ``kind`` (``data``: its IFLA_INFO_DATA attributes),
        enslaved to ``master`` and up at once when asked (one request instead of three:
        the kernel brings it up, then attaches it, as ``ip link add ... master M up``)."""
        attrs = string(IFLA_IFNAME, name)
        if mtu is not None:
            attrs += u32(IFLA_MTU, mtu)
        if link is not None:
            attrs += u32(IFLA_LINK, self.index(link))
        if master is not None:
            attrs += u32(IFLA_MASTER, self.index(master))
        info = string(IFLA_INFO_KIND, kind) + (attr(IFLA_INFO_DATA | 0x8000, data) if data else b"")
        flags = ifinfo(0, IFF_UP, IFF_UP) if up else ifinfo()
        self.send(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL,
                  flags + attrs + extra + nested(IFLA_LINKINFO, info), what)

    def set_link(self, name: str, *, up: bool | None = None, attrs: bytes = b"",
                 what: str = "") -> None:
        """Change interface ``name`` (looked up by name by the kernel)."""
        flags = change = 0
        if up is not None:
            flags, change = (IFF_UP if up else 0), IFF_UP
        self.send(RTM_NEWLINK, 0, ifinfo(0, flags, change) + string(IFLA_IFNAME, name) + attrs,
                  what)

    def add_address(self, address: str, prefix: int, dev: str, what: str = "") -> None:
        body = (_IFADDR.pack(socket.AF_INET, prefix, 0, RT_SCOPE_UNIVERSE, self.index(dev))
                + ipv4(IFA_LOCAL, address) + ipv4(IFA_ADDRESS, address))
        self.send(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, body, what)

    def add_route(self, dst: str | None, prefix: int, *, via: str | None = None,
                  dev: str | None = None, scope: int | None = None, what: str = "") -> None:
        """A unicast route in the main table (scope link when there is no gateway, as
        ``ip route add`` does)."""
        if scope is None:
            scope = RT_SCOPE_UNIVERSE if via else RT_SCOPE_LINK
        attrs = ipv4(RTA_DST, dst) if dst is not None else b""
        if via is not None:
            attrs += ipv4(RTA_GATEWAY, via)
        if dev is not None:
            attrs += u32(RTA_OIF, self.index(dev))
        body = _RTMSG.pack(socket.AF_INET, prefix, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT, scope,
                           RTN_UNICAST, 0) + attrs
        self.send(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, body, what)

    def append_fdb(self, lladdr: bytes, dev: str, dst: str, what: str = "") -> None:
        """``bridge fdb append LLADDR dev DEV dst DST`` (a permanent entry of the device)."""
        body = (_NDMSG.pack(AF_BRIDGE, self.index(dev), NUD_NOARP | NUD_PERMANENT, NTF_SELF, 0)
                + attr(NDA_LLADDR, lladdr) + ipv4(NDA_DST, dst))
        self.send(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_APPEND, body, what)
