"""Reading the consumer protocol's bytes: a member's subscription
(ConsumerProtocolSubscription: version, then topic names, then more) and its
assignment (ConsumerProtocolAssignment: version, then topics with partitions).
Operators see what a member holds; OffsetDelete sees what a group subscribes
to. The classic coordinator keeps both opaque; a classic member inside a KIP-848
group (Kafka's online upgrade) is read whole (`subscription`) and is sent the
assignment the group's assignor made (`encode_assignment`).

The bytes are whatever a client sent in JoinGroup or SyncGroup: every length
and count is checked against the bytes that remain before it is used, so
reading is linear in the input (a negative length once stepped the reader
backwards, onto bytes it had read, for as many times as a count said).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

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

    def nullable_string(self) -> str | None:
        n = self.i16()
        if n == -1:
            return None
        try:
            return self._take(n).decode()
        except UnicodeDecodeError:
            raise _Malformed from None

    def nullable_bytes(self) -> None:
        """Skipped (user data: what a client-side assignor keeps for itself)."""
        n = self.i32()
        if n != -1:
            self._take(n)

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
        return topic_partitions(r)
    except _Malformed:
        return None


def topic_partitions(r: _Reader) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for _ in range(r.count(_I16.size + _I32.size)):
        topic = r.string()
        out[topic] = r.i32s()
    return out


@dataclass(frozen=True, slots=True)
class Subscription:
    """A ConsumerProtocolSubscription (v0-3; a newer version is read as v3, as the
    Java client's reader does)."""

    version: int
    topics: tuple[str, ...]
    owned: dict[str, list[int]]  # v1+: what the member holds as it joins
    rack: str | None  # v3+


def subscription(data: bytes) -> Subscription | None:
    """The whole subscription, or None when the bytes are not one."""
    r = _Reader(data)
    try:
        version = r.i16()
        topics = tuple(r.string() for _ in range(r.count(_I16.size)))
        r.nullable_bytes()
        owned = topic_partitions(r) if version >= 1 else {}
        if version >= 2:
            r.i32()  # the generation it last held an assignment in
        rack = r.nullable_string() if version >= 3 else None
        return Subscription(version, topics, owned, rack)
    except _Malformed:
        return None


def protocol_version(data: bytes) -> int:
    """The version a member's metadata is written in (0 when unreadable): its
    assignment is written in the same one, capped at the newest there is (3)."""
    try:
        return min(max(_Reader(data).i16(), 0), 3)
    except _Malformed:
        return 0


def encode_assignment(version: int, partitions: Mapping[str, Iterable[int]]) -> bytes:
    """A ConsumerProtocolAssignment (v0-3 have one layout) without user data."""
    out = [_I16.pack(version), _I32.pack(len(partitions))]
    for topic, parts in sorted(partitions.items()):
        name = topic.encode()
        ps = sorted(parts)
        out += [_I16.pack(len(name)), name, _I32.pack(len(ps)), struct.pack(f">{len(ps)}i", *ps)]
    out.append(_I32.pack(-1))
    return b"".join(out)


def subscribed_topics(data: bytes) -> list[str] | None:
    """The topics of a subscription (all versions start alike), or None when the
    bytes are not one."""
    r = _Reader(data)
    try:
        r.i16()
        return [r.string() for _ in range(r.count(_I16.size))]
    except _Malformed:
        return None
