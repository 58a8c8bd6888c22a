"""Reading rtnetlink answers (``rtnl.attributes``): type-length-value attributes, padded to
four bytes, nested flag cleared, a repeated type keeping its first value, a truncated tail
ignored."""

from __future__ import annotations

import socket

from vnetbench import rtnl


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
