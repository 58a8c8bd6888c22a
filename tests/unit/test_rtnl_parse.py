"""Reading rtnetlink answers (``rtnl.attributes``): type-length-value attributes, padded to
four bytes, nested flag cleared, a repeated type keeping its first value, a truncated tail
ignored."""

from __future__ import annotations

import socket
import struct
from contextlib import ExitStack

from vnetbench.host import rtnl
from vnetbench.host.iplines import compile_batch, fused_settings


def test_attributes_are_read_back_as_written() -> None:
    header = b"\x02" + b"\x00" * 11  # a 12-byte fixed header, skipped
    payload = (header + rtnl.ipv4(rtnl.RTA_DST, "10.1.2.0") + rtnl.string(rtnl.IFLA_IFNAME, "eth")
               + rtnl.nested(rtnl.IFLA_LINKINFO, rtnl.string(rtnl.IFLA_INFO_KIND, "veth"))
               + rtnl.u32(rtnl.RTA_DST, 7))
    found = rtnl.attributes(payload, len(header))
    assert socket.inet_ntoa(found[rtnl.RTA_DST]) == "10.1.2.0"  # the first of two
    assert found[rtnl.IFLA_IFNAME] == b"eth\0"  # padded to 8 bytes, read as 4
    assert rtnl.attributes(found[rtnl.IFLA_LINKINFO], 0)[rtnl.IFLA_INFO_KIND] == b"veth\0"
    assert rtnl.attributes(payload[:len(header) + 3], len(header)) == {}
    assert rtnl.attributes(header + b"\x00\x00\x01\x00", len(header)) == {}  # length 0


class _Recorder(rtnl.Rtnl):
    """An Rtnl that keeps the requests instead of sending them (indexes made up)."""

    def __init__(self) -> None:  # no socket
        self.sent: list[tuple[int, int, bytes, str]] = []
        self.indexes = {"br0": 7}

    def send(self, msg_type: int, flags: int, body: bytes, what: str) -> None:
        self.sent.append((msg_type, flags, body, what))


def test_a_link_add_then_master_then_up_is_one_request() -> None:
    lines = ["link add br0 type bridge stp_state 0", "link set br0 up",
             "link add v0 type veth peer name n0 netns X", "link set v0 master br0",
             "link set v0 up", "link add m0 link v0 netns Y type macvlan mode bridge",
             "link set m0 up", "link set v1 up"]
    assert fused_settings(lines, 0) == (None, True, 1)
    assert fused_settings(lines, 2) == ("br0", True, 2)
    assert fused_settings(lines, 5) == (None, False, 0)  # made in another namespace
    assert fused_settings(lines, 7) == (None, False, 0)  # not a link add
    assert fused_settings(["link add v0 type veth peer name n0", "link set v0 up",
                           "link set v0 master br0"], 0) == (None, True, 1)  # order kept
    here = ["link add v0 type veth peer name n0", "link set v0 master br0", "link set v0 up",
            "addr add 10.0.0.1/24 dev br0"]
    ops = compile_batch("ip", here)
    assert ops is not None and len(ops) == 2
    sock = _Recorder()
    ops[0](sock, ExitStack())
    msg_type, _, body, what = sock.sent[0]
    assert msg_type == rtnl.RTM_NEWLINK and what == "; ".join(here[:3])
    _, _, _, flags, change = struct.unpack_from("=BxHiII", body)
    assert (flags, change) == (rtnl.IFF_UP, rtnl.IFF_UP)
    assert struct.unpack("=I", rtnl.attributes(body, 16)[rtnl.IFLA_MASTER]) == (7,)
