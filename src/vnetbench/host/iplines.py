"""``ip``/``bridge`` batch lines carried out over netlink (``vnetbench.host.rtnl``) instead of by a
process per namespace.

A plan stays written in ``ip -batch`` syntax (``vnetbench plan`` prints it; it is what a user
would type); ``compile_batch`` turns the lines the layers write into netlink requests. The
grammar understood is exactly what the planners emit:

    link add NAME [mtu N] [link PARENT] type bridge [stp_state N] [mcast_snooping N]
    link add NAME [mtu N] type veth peer name PEER [mtu N] [netns NS]
    link add NAME [mtu N] type vxlan id VNI local IP dev DEV dstport PORT
    link add NAME [mtu N] link PARENT [netns NS] type macvlan|ipvlan mode MODE
    link set DEV [up|down] [master DEV] [netns NS] [mtu N]
    addr add IP/PLEN dev DEV
    route add default|DST[/PLEN] [via GW] [dev DEV] [scope link]
    fdb append MAC dev DEV dst IP                  (``bridge -batch``)

A batch holding any other line (``tuntap``, ``link add ... type wireguard``, ``tc``) yields
``None`` and is run by the ``ip`` process as before, so nothing a layer writes is lost.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import ExitStack

from vnetbench.host import rtnl
from vnetbench.host.netns import netns_path

Op = Callable[[rtnl.Rtnl, ExitStack], None]
"""One line's requests: queued on the socket; namespace fds it opens stay open (on the
stack) until the batch's acknowledgements are in."""


class Unsupported(Exception):
    """A line outside the grammar: the batch goes to the ``ip`` process."""


def compile_batch(tool: str, lines: Sequence[str]) -> list[Op] | None:
    """The netlink operations of a whole batch, or None if any line is not understood. A
    ``link add`` of a veth, bridge or vxlan followed at once by ``link set NAME master M``
    and/or ``link set NAME up`` becomes one request (``fused_settings``)."""
    ops: list[Op] = []
    at = 0
    try:
        while at < len(lines):
            words = lines[at].split()
            master, up, taken = (fused_settings(lines, at) if tool == "ip" else (None, False, 0))
            if taken:
                what = "; ".join(lines[at:at + 1 + taken])
                ops.append(_link_add(what, words[2:], master=master, up=up))
            else:
                ops.append(compile_line(tool, lines[at]))
            at += 1 + taken
    except Unsupported:
        return None
    return ops


FUSABLE_KINDS = ("veth", "bridge", "vxlan")


def fused_settings(lines: Sequence[str], at: int) -> tuple[str | None, bool, int]:
    """For a ``link add NAME ... type KIND`` line at ``at`` (a kind in ``FUSABLE_KINDS``, made
    in this namespace): the master and up-ness the next lines give NAME (``link set NAME
    master M``, ``link set NAME up``, each at most once, nothing else on the line), and how
    many lines that is (0: nothing to fuse)."""
    words = lines[at].split()
    if words[:2] != ["link", "add"] or "type" not in words[3:]:
        return None, False, 0
    kind_at = words.index("type") + 1
    if kind_at >= len(words) or words[kind_at] not in FUSABLE_KINDS \
            or "netns" in words[3:kind_at]:
        return None, False, 0
    name = words[2]
    master: str | None = None
    up = False
    taken = 0
    for line in lines[at + 1:at + 3]:
        w = line.split()
        if w == ["link", "set", name, "up"] and not up:
            up = True
        elif len(w) == 5 and w[:3] == ["link", "set", name] and w[3] == "master" \
                and master is None and not up:
            master = w[4]
        else:
            break
        taken += 1
    return master, up, taken


def run_ops(ops: Sequence[Op]) -> None:
    """Carry out ``ops`` in the calling thread's namespace; OSError naming the line the
    kernel refused."""
    with ExitStack() as fds, rtnl.Rtnl() as sock:
        for op in ops:
            op(sock, fds)
        sock.flush()


def compile_line(tool: str, line: str) -> Op:
    words = line.split()
    match (tool, words[:2]):
        case ("bridge", ["fdb", "append"]):
            return _fdb_append(line, words[2:])
        case ("ip", ["link", "add"]):
            return _link_add(line, words[2:])
        case ("ip", ["link", "set"]):
            return _link_set(line, words[2:])
        case ("ip", ["addr" | "address", "add"]):
            return _addr_add(line, words[2:])
        case ("ip", ["route", "add"]):
            return _route_add(line, words[2:])
    raise Unsupported(line)


def _pairs(words: Sequence[str], allowed: AbstractSet[str],
           flags: AbstractSet[str] = frozenset()) -> dict[str, str]:
    """``key value`` pairs (and bare ``flags``, mapped to themselves) of a line's tail."""
    out: dict[str, str] = {}
    it: Iterator[str] = iter(words)
    for word in it:
        if word in flags:
            out[word] = word
        elif word in allowed and word not in out:
            try:
                out[word] = next(it)
            except StopIteration:
                raise Unsupported(word) from None
        else:
            raise Unsupported(word)
    return out


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise Unsupported(value) from None


def _netns_fd(name: str, fds: ExitStack) -> int:
    fd = os.open(netns_path(name), os.O_RDONLY | os.O_CLOEXEC)
    fds.callback(os.close, fd)
    return fd


def _link_add(line: str, words: list[str], *, master: str | None = None,
              up: bool = False) -> Op:
    if len(words) < 3 or "type" not in words:
        raise Unsupported(line)
    name, at = words[0], words.index("type")
    head = _pairs(words[1:at], {"mtu", "link", "netns"})
    kind, tail = words[at + 1] if at + 1 < len(words) else "", words[at + 2:]
    mtu = _int(head["mtu"]) if "mtu" in head else None
    link = head.get("link")
    if "netns" in head and kind not in ("macvlan", "ipvlan"):
        raise Unsupported(line)
    if kind == "bridge":
        opts = _pairs(tail, {"stp_state", "mcast_snooping"})
        data = b""
        if "stp_state" in opts:
            data += rtnl.u32(rtnl.IFLA_BR_STP_STATE, _int(opts["stp_state"]))
        if "mcast_snooping" in opts:
            data += rtnl.u8(rtnl.IFLA_BR_MCAST_SNOOPING, _int(opts["mcast_snooping"]))
        return lambda s, fds: s.new_link(name, kind, data, mtu=mtu, link=link, master=master,
                                         up=up, what=line)
    if kind == "veth":
        if tail[:2] != ["peer", "name"] or len(tail) < 3:
            raise Unsupported(line)
        peer_name, peer = tail[2], _pairs(tail[3:], {"mtu", "netns"})

        def veth(s: rtnl.Rtnl, fds: ExitStack) -> None:
            attrs = rtnl.string(rtnl.IFLA_IFNAME, peer_name)
            if "mtu" in peer:
                attrs += rtnl.u32(rtnl.IFLA_MTU, _int(peer["mtu"]))
            if "netns" in peer:
                attrs += rtnl.u32(rtnl.IFLA_NET_NS_FD, _netns_fd(peer["netns"], fds))
            data = rtnl.attr(rtnl.VETH_INFO_PEER, rtnl.ifinfo() + attrs)
            s.new_link(name, kind, data, mtu=mtu, link=link, master=master, up=up, what=line)
        return veth
    if kind == "vxlan":
        opts = _pairs(tail, {"id", "local", "dev", "dstport"})
        if "id" not in opts:
            raise Unsupported(line)

        def vxlan(s: rtnl.Rtnl, fds: ExitStack) -> None:
            data = rtnl.u32(rtnl.IFLA_VXLAN_ID, _int(opts["id"]))
            if "local" in opts:
                data += rtnl.ipv4(rtnl.IFLA_VXLAN_LOCAL, opts["local"])
            if "dev" in opts:
                data += rtnl.u32(rtnl.IFLA_VXLAN_LINK, s.index(opts["dev"]))
            if "dstport" in opts:
                data += rtnl.be16(rtnl.IFLA_VXLAN_PORT, _int(opts["dstport"]))
            s.new_link(name, kind, data, mtu=mtu, link=link, master=master, up=up, what=line)
        return vxlan
    if kind in ("macvlan", "ipvlan"):
        mode = _pairs(tail, {"mode"}).get("mode", "bridge" if kind == "macvlan" else "l2")
        modes = rtnl.MACVLAN_MODES if kind == "macvlan" else rtnl.IPVLAN_MODES
        if mode not in modes or link is None:
            raise Unsupported(line)
        data = (rtnl.u32(rtnl.IFLA_MACVLAN_MODE, modes[mode]) if kind == "macvlan"
                else rtnl.u16(rtnl.IFLA_IPVLAN_MODE, modes[mode]))

        def stacked(s: rtnl.Rtnl, fds: ExitStack) -> None:
            extra = (rtnl.u32(rtnl.IFLA_NET_NS_FD, _netns_fd(head["netns"], fds))
                     if "netns" in head else b"")
            s.new_link(name, kind, data, mtu=mtu, link=link, extra=extra, what=line)
        return stacked
    raise Unsupported(line)


def _link_set(line: str, words: list[str]) -> Op:
    if not words:
        raise Unsupported(line)
    dev = words[0]
    opts = _pairs(words[1:], {"master", "netns", "mtu"}, {"up", "down"})
    up = True if "up" in opts else False if "down" in opts else None
    mtu = _int(opts["mtu"]) if "mtu" in opts else None

    def link_set(s: rtnl.Rtnl, fds: ExitStack) -> None:
        attrs = b""
        if "master" in opts:
            attrs += rtnl.u32(rtnl.IFLA_MASTER, s.index(opts["master"]))
        if mtu is not None:
            attrs += rtnl.u32(rtnl.IFLA_MTU, mtu)
        if "netns" in opts:
            attrs += rtnl.u32(rtnl.IFLA_NET_NS_FD, _netns_fd(opts["netns"], fds))
            s.indexes.pop(dev, None)
        s.set_link(dev, up=up, attrs=attrs, what=line)
    return link_set


def _prefix(text: str, default: int) -> tuple[str, int]:
    address, _, plen = text.partition("/")
    if address.count(".") != 3:
        raise Unsupported(text)
    return address, _int(plen) if plen else default


def _addr_add(line: str, words: list[str]) -> Op:
    if not words:
        raise Unsupported(line)
    address, plen = _prefix(words[0], 32)
    opts = _pairs(words[1:], {"dev"})
    if "dev" not in opts:
        raise Unsupported(line)
    return lambda s, fds: s.add_address(address, plen, opts["dev"], what=line)


def _route_add(line: str, words: list[str]) -> Op:
    if not words:
        raise Unsupported(line)
    dst, plen = (None, 0) if words[0] == "default" else _prefix(words[0], 32)
    opts = _pairs(words[1:], {"via", "dev", "scope"})
    if opts.get("scope", "link") != "link":
        raise Unsupported(line)
    scope = rtnl.RT_SCOPE_LINK if "scope" in opts else None
    return lambda s, fds: s.add_route(dst, plen, via=opts.get("via"), dev=opts.get("dev"),
                                      scope=scope, what=line)


def _fdb_append(line: str, words: list[str]) -> Op:
    if not words:
        raise Unsupported(line)
    try:
        lladdr = bytes.fromhex(words[0].replace(":", ""))
    except ValueError:
        raise Unsupported(line) from None
    opts = _pairs(words[1:], {"dev", "dst"})
    if len(lladdr) != 6 or set(opts) != {"dev", "dst"}:
        raise Unsupported(line)
    return lambda s, fds: s.append_fdb(lladdr, opts["dev"], opts["dst"], what=line)
