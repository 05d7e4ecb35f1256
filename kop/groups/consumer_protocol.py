"""Reading the consumer protocol's bytes: a member's subscription
(ConsumerProtocolSubscription: version, then topic names, then more) and its
assignment (ConsumerProtocolAssignment: version, then topics with partitions).
Operators see what a member holds; OffsetDelete sees what a group subscribes
to. Both stay opaque to the coordinator itself.

The bytes are whatever a client sent in JoinGroup or SyncGroup: every length
and count is checked against the bytes that remain before it is used, so
reading is linear in the input (a negative length once stepped the reader
backwards, onto bytes it had read, for as many times as a count said).
"""

from __future__ import annotations

import struct

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class _Malformed(Exception):
    pass


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or n > len(self._data) - self._at:
            raise _Malformed
        out = self._data[self._at : self._at + n]
        self._at += n
        return out

    def i16(self) -> int:
        (v,) = _I16.unpack(self._take(_I16.size))
        return int(v)

    def i32(self) -> int:
        (v,) = _I32.unpack(self._take(_I32.size))
        return int(v)

    def string(self) -> str:
        try:
            return self._take(self.i16()).decode()
        except UnicodeDecodeError:
            raise _Malformed from None

    def count(self, item_size: int) -> int:
        """An array's length (-1, null, reads as empty), no more than the items of at
        least `item_size` bytes that the rest could hold."""
        n = self.i32()
        if n < -1 or n * item_size > len(self._data) - self._at:
            raise _Malformed
        return max(n, 0)

    def i32s(self) -> list[int]:
        n = self.count(_I32.size)
        return list(struct.unpack(f">{n}i", self._take(_I32.size * n)))


def assigned_partitions(data: bytes) -> dict[str, list[int]] | None:
    """topic -> partitions, or None when the bytes are not a consumer assignment."""
    r = _Reader(data)
    try:
        r.i16()  # the version; v0-3 share the part read here
        out: dict[str, list[int]] = {}
        for _ in range(r.count(_I16.size + _I32.size)):
            topic = r.string()
            out[topic] = r.i32s()
        return out
    except _Malformed:
        return None


def subscribed_topics(data: bytes) -> list[str] | None:
    """The topics of a subscription (all versions start alike), or None when the
    bytes are not one."""
    r = _Reader(data)
    try:
        r.i16()
        return [r.string() for _ in range(r.count(_I16.size))]
    except _Malformed:
        return None
