"""Reading the consumer protocol's assignment bytes (ConsumerProtocolAssignment
v0-3: version, then topics with their partitions, then user data), so operators
see which partitions a member holds. Assignments stay opaque everywhere else:
kop never needs them to coordinate."""

from __future__ import annotations

import struct

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def assigned_partitions(data: bytes) -> dict[str, list[int]] | None:
    """topic -> partitions, or None when the bytes are not a consumer assignment."""
    try:
        at = _I16.size  # the version; v0-3 share the part read here
        (topics,) = _I32.unpack_from(data, at)
        at += _I32.size
        out: dict[str, list[int]] = {}
        for _ in range(max(topics, 0)):
            (length,) = _I16.unpack_from(data, at)
            at += _I16.size
            topic = data[at : at + length].decode()
            at += length
            (count,) = _I32.unpack_from(data, at)
            at += _I32.size
            parts = list(struct.unpack_from(f">{max(count, 0)}i", data, at))
            at += 4 * max(count, 0)
            out[topic] = parts
        return out
    except (struct.error, UnicodeDecodeError):
        return None
