"""Reading the consumer protocol's bytes: a member's subscription
(ConsumerProtocolSubscription: version, then topic names, then more) and its
assignment (ConsumerProtocolAssignment: version, then topics with partitions).
Operators see what a member holds; OffsetDelete sees what a group subscribes
to. Both stay opaque to the coordinator itself."""

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


def subscribed_topics(data: bytes) -> list[str] | None:
    """The topics of a subscription (all versions start alike), or None when the
    bytes are not one."""
    try:
        (count,) = _I32.unpack_from(data, _I16.size)
        at = _I16.size + _I32.size
        topics = []
        for _ in range(max(count, 0)):
            (length,) = _I16.unpack_from(data, at)
            at += _I16.size
            if at + length > len(data):
                return None
            topics.append(data[at : at + length].decode())
            at += length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
