"""The batch layout: how one stored entry holds several messages.

For each message, `[u32 size][SingleMessageMetadata][payload]`, exactly as
Pulsar's clients write and read batch entries, so a Pulsar application reads a
batch entry kop wrote as its messages, and kop reads theirs. The in-memory
storage of the simulations stores the same bytes, so the code that converts
entries is the code the simulations prove.

Parsing never raises: a layout that does not parse (truncated, a size past the
end, metadata that is not the schema) yields no messages; callers decide what
such an entry means.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from google.protobuf.message import DecodeError

from kop.storage.proto.batch_layout_pb2 import KeyValue, SingleMessageMetadata
from kop.storage.types import OutgoingEntry, OutgoingMessage, Position, StoredEntry, StoredMessage

_SIZE = struct.Struct(">I")


def build(messages: Sequence[OutgoingMessage]) -> bytes:
    """The layout of `messages`, in order."""
    out = bytearray()
    for m in messages:
        meta = SingleMessageMetadata(payload_size=len(m.payload or b""))
        if m.properties:
            meta.properties.extend(KeyValue(key=k, value=v) for k, v in m.properties.items())
        if m.partition_key is not None:
            meta.partition_key = m.partition_key
            if m.key_b64:
                meta.partition_key_b64_encoded = True
        if m.event_time is not None and m.event_time > 0:
            meta.event_time = m.event_time
        if m.payload is None:
            meta.null_value = True
        raw = meta.SerializeToString()
        out += _SIZE.pack(len(raw))
        out += raw
        out += m.payload or b""
    return bytes(out)


def with_payloads(layout: bytes, count: int, change: Callable[[bytes], bytes]) -> bytes | None:
    """The layout with each non-null message's payload changed by `change`, every other
    metadata field (compaction's marks included) kept; None when it does not parse."""
    out = bytearray()
    pos = 0
    for _ in range(count):
        if pos + 4 > len(layout):
            return None
        (size,) = _SIZE.unpack_from(layout, pos)
        pos += 4
        meta = SingleMessageMetadata()
        try:
            if pos + size > len(layout):
                return None
            meta.ParseFromString(layout[pos : pos + size])
        except (DecodeError, ValueError):
            return None
        pos += size
        end = pos + meta.payload_size
        if meta.payload_size < 0 or end > len(layout):
            return None
        payload = layout[pos:end]
        if not meta.null_value:
            payload = change(payload)
            meta.payload_size = len(payload)
        raw = meta.SerializeToString()
        out += _SIZE.pack(len(raw))
        out += raw
        out += payload
        pos = end
    return bytes(out)


def entry(messages: Sequence[OutgoingMessage]) -> OutgoingEntry:
    """One entry holding `messages` (stored all or nothing): a single message as
    itself, several as a batch."""
    if len(messages) == 1:
        return OutgoingEntry.of(messages[0])
    return OutgoingEntry(batch=build(messages), count=len(messages))


def single(layout: bytes) -> OutgoingMessage | None:
    """The message of a layout holding exactly one, as it would be written alone
    (a record too large for an entry goes alone, where Pulsar can chunk it); None
    when the layout is not one message."""
    found = messages(StoredEntry(Position(0, 0), "", 0, 0, 1, None, layout))
    if len(found) != 1:
        return None
    m = found[0]
    return OutgoingMessage(
        payload=None if m.null_value else m.payload,
        properties=m.properties,
        partition_key=m.partition_key or None,
        event_time=m.event_time or None,
        key_b64=m.key_b64,
    )


def messages(entry: StoredEntry, *, compacted_out: bool = False) -> list[StoredMessage]:
    """The entry's messages: the one message, or those of its batch layout
    (positions carry their batch index). Empty when the layout does not parse.
    Messages that compaction marked as removed are left out unless asked for (a
    compacted batch keeps their place)."""
    if entry.message is not None:
        return [entry.message]
    out: list[StoredMessage] = []
    data = entry.batch
    pos = 0
    ledger, entry_id = entry.position.ledger, entry.position.entry
    for index in range(entry.count):
        if pos + 4 > len(data):
            return []
        (size,) = _SIZE.unpack_from(data, pos)
        pos += 4
        meta = SingleMessageMetadata()
        try:
            if pos + size > len(data):
                return []
            meta.ParseFromString(data[pos : pos + size])
            pos += size
            end = pos + meta.payload_size
            if meta.payload_size < 0 or end > len(data):
                return []
            props = {kv.key: kv.value for kv in meta.properties}
        except (DecodeError, ValueError):
            return []
        if meta.compacted_out and not compacted_out:
            pos = end
            continue
        out.append(
            StoredMessage(
                position=Position(ledger, entry_id, index),
                payload=data[pos:end],
                null_value=meta.null_value,
                properties=props,
                partition_key=meta.partition_key,
                event_time=meta.event_time,
                publish_time=entry.publish_time,
                producer_name=entry.producer_name,
                key_b64=meta.partition_key_b64_encoded,
                compacted_out=meta.compacted_out,
            )
        )
        pos = end
    return out
