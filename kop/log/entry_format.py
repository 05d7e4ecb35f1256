"""The two entry formats: Kafka records <-> Pulsar messages.

`pulsar` format: one Pulsar message per Kafka record, shaped the way a Pulsar
application expects (UTF-8 key = partition key, UTF-8 headers = properties,
timestamp = event time, null value = Pulsar's null value). What a plain
message cannot carry exactly is kept in reserved `__kafka.*` properties, which
are never shown to Kafka clients as headers:

- `__kafka.key`: `b64` (partition key is base64 of a binary key) or `empty`.
- `__kafka.headers`: JSON list of `[key, base64 value or null]`, written when
  headers are not all UTF-8, repeat a key, are not in key order, or use the
  reserved prefix; it then wins over the plain properties.
- `__kafka.ts`: the Kafka timestamp when event time cannot hold it (<= 0).
- `__kafka.producer`: `pid/epoch/first-sequence/count`, on the first message of
  an idempotent batch only, so producer state can be rebuilt from the log.

`kafka` format: the producer's record batch verbatim as one message, marked
`__kafka.entry=batch`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from kop.protocol.records import BatchHeader, Header, Record, read_header
from kop.storage.types import OutgoingMessage, StoredMessage

RESERVED = "__kafka."
P_ENTRY = "__kafka.entry"
P_KEY = "__kafka.key"
P_HEADERS = "__kafka.headers"
P_TS = "__kafka.ts"
P_PRODUCER = "__kafka.producer"


class EntryFormat(StrEnum):
    PULSAR = "pulsar"
    KAFKA = "kafka"


@dataclass(frozen=True, slots=True)
class ProducerStamp:
    """Idempotent-producer identity of a batch, as carried in the log."""

    producer_id: int
    epoch: int
    first_seq: int
    count: int


@dataclass(frozen=True, slots=True)
class Entry:
    """One Pulsar message as the offset model sees it."""

    count: int  # Kafka records it holds (offsets it takes)
    max_timestamp: int
    size: int  # bytes, for tail-buffer and fetch budgeting
    batch: bytes | None  # kafka format: the stored batch
    record: Record | None  # pulsar format: the record (its offset field is 0)
    stamp: ProducerStamp | None


def encode_batch(batch: bytes, head: BatchHeader) -> OutgoingMessage:
    return OutgoingMessage(
        payload=batch,
        properties={P_ENTRY: "batch"},
        partition_key=None,
        event_time=head.max_timestamp if head.max_timestamp > 0 else None,
    )


def encode_records(
    records: Sequence[Record], stamp: ProducerStamp | None = None
) -> list[OutgoingMessage]:
    out = [encode_record(r) for r in records]
    if stamp is not None and out:
        first = out[0]
        props = dict(first.properties)
        props[P_PRODUCER] = f"{stamp.producer_id}/{stamp.epoch}/{stamp.first_seq}/{stamp.count}"
        out[0] = OutgoingMessage(first.payload, props, first.partition_key, first.event_time)
    return out


def encode_record(record: Record) -> OutgoingMessage:
    props: dict[str, str] = {}
    partition_key: str | None = None
    if record.key is not None:
        if record.key == b"":
            props[P_KEY] = "empty"
        else:
            text = _utf8(record.key)
            if text is None:
                partition_key = base64.b64encode(record.key).decode()
                props[P_KEY] = "b64"
            else:
                partition_key = text
    if record.headers:
        plain: dict[str, str] = {}
        exact = True
        previous = ""
        for k, v in record.headers:
            text = None if v is None else _utf8(v)
            if text is None or k in plain or k < previous or k.startswith(RESERVED):
                exact = False
            if text is not None and k not in plain and not k.startswith(RESERVED):
                plain[k] = text
            previous = k
        props.update(plain)
        if not exact:
            props[P_HEADERS] = json.dumps(
                [
                    [k, None if v is None else base64.b64encode(v).decode()]
                    for k, v in record.headers
                ]
            )
    event_time: int | None = record.timestamp
    if record.timestamp <= 0:
        props[P_TS] = str(record.timestamp)
        event_time = None
    return OutgoingMessage(record.value, props, partition_key, event_time)


def decode(msg: StoredMessage) -> Entry:
    props = msg.properties
    if props.get(P_ENTRY) == "batch":
        head = read_header(msg.payload)
        stamp = None
        if head.producer_id >= 0:
            stamp = ProducerStamp(
                head.producer_id, head.producer_epoch, head.base_sequence, head.record_count
            )
        return Entry(
            head.record_count, head.max_timestamp, len(msg.payload), msg.payload, None, stamp
        )
    record = decode_record(msg)
    stamp = None
    if P_PRODUCER in props:
        pid, epoch, seq, count = (int(x) for x in props[P_PRODUCER].split("/"))
        stamp = ProducerStamp(pid, epoch, seq, count)
    size = 21 + len(record.value or b"") + len(record.key or b"")
    size += sum(len(k) + len(v or b"") + 2 for k, v in record.headers)
    return Entry(1, record.timestamp, size, None, record, stamp)


def decode_record(msg: StoredMessage, offset: int = 0) -> Record:
    props = msg.properties
    key_mode = props.get(P_KEY)
    key: bytes | None
    if key_mode == "b64":
        key = base64.b64decode(msg.partition_key)
    elif key_mode == "empty":
        key = b""
    else:
        key = msg.partition_key.encode() if msg.partition_key else None
    if P_TS in props:
        timestamp = int(props[P_TS])
    else:
        timestamp = msg.event_time if msg.event_time > 0 else msg.publish_time
    headers: tuple[Header, ...]
    if P_HEADERS in props:
        headers = tuple(
            (k, None if v is None else base64.b64decode(v)) for k, v in json.loads(props[P_HEADERS])
        )
    else:
        headers = tuple(
            (k, v.encode()) for k, v in sorted(props.items()) if not k.startswith(RESERVED)
        )
    value = None if msg.null_value else msg.payload
    return Record(offset, timestamp, key, value, headers)


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
