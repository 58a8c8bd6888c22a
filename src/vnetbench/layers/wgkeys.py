"""WireGuard key pairs (X25519, RFC 7748) in pure Python, so planning needs no tool.

Keys are base64 strings as ``wg genkey`` / ``wg pubkey`` print them. Speed is irrelevant
(a few keys per lab); correctness is checked against RFC 7748's test vector in the tests.
"""

from __future__ import annotations

import base64
import os

_P = 2**255 - 19
_A24 = 121665


def _decode_scalar(k: bytes) -> int:
    b = bytearray(k)
    b[0] &= 248
    b[31] &= 127
    b[31] |= 64
    return int.from_bytes(b, "little")


def x25519(scalar: bytes, u_point: bytes) -> bytes:
    """RFC 7748 X25519(k, u) with the Montgomery ladder."""
    k = _decode_scalar(scalar)
    u = int.from_bytes(u_point, "little") & ((1 << 255) - 1)
    x1, x2, z2, x3, z3, swap = u, 1, 0, u, 1, 0
    for t in reversed(range(255)):
        bit = (k >> t) & 1
        swap ^= bit
        if swap:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = bit
        a, b = (x2 + z2) % _P, (x2 - z2) % _P
        aa, bb = a * a % _P, b * b % _P
        e = (aa - bb) % _P
        c, d = (x3 + z3) % _P, (x3 - z3) % _P
        da, cb = d * a % _P, c * b % _P
        x3 = (da + cb) ** 2 % _P
        z3 = x1 * (da - cb) ** 2 % _P
        x2 = aa * bb % _P
        z2 = e * (aa + _A24 * e) % _P
    if swap:
        x2, x3, z2, z3 = x3, x2, z3, z2
    return (x2 * pow(z2, _P - 2, _P) % _P).to_bytes(32, "little")


def public_key(private_b64: str) -> str:
    return base64.b64encode(x25519(base64.b64decode(private_b64), (9).to_bytes(32, "little"))).decode()


def generate_keypair() -> tuple[str, str]:
    """(private, public), base64."""
    raw = bytearray(os.urandom(32))
    raw[0] &= 248
    raw[31] = (raw[31] & 127) | 64
    private = base64.b64encode(bytes(raw)).decode()
    return private, public_key(private)
