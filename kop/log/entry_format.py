"""The two entry formats: Kafka records <-> Pulsar messages.

`pulsar` format: one Pulsar message per Kafka record, shaped the way a Pulsar
application expects (UTF-8 key = partition key, UTF-8 headers = properties,
timestamp = event time, null value = Pulsar's null value). What a plain
message cannot carry exactly is kept in reserved `__kafka.*` properties, which
are not shown to Kafka clients as headers:

- `__kafka.key`: `b64` (partition key is base64 of a binary key) or `empty`.
- `__kafka.headers`: JSON list of `[key, base64 value or null]`, written when
  headers are not all UTF-8, repeat a key, are not in key order, or use the
  reserved prefix; it then wins over the plain properties.
- `__kafka.ts`: the Kafka timestamp when event time cannot hold it (<= 0).
- `__kafka.producer`: `pid/epoch/first-sequence/count/index` on every message
  of an idempotent batch, index = the record's position in the batch. Pulsar
  may store only a prefix of a batch's messages; the last stamp read says how
  far the batch got, so a retry can complete it and producer state can be
  rebuilt from the log. The legacy form `pid/epoch/first-sequence/count` (first
  message only, older kop) means the whole batch: index = count - 1.

`kafka` format: the producer's record batch verbatim as one message, marked
`__kafka.entry=batch`; only that property is read, the stamp comes from the
batch header.

Any Pulsar application can write these properties, so reading never raises:
a tail reader that failed on a message would retry it forever and stop the
partition. A malformed reserved property is served as a plain header (name =
the property, value = its UTF-8 bytes), named in `Entry.anomalies`, and
otherwise falls back to the plain meaning:

- `__kafka.ts` not an int64: event time if set (> 0), else publish time.
- `__kafka.key` unknown, `b64` of an absent or non-base64 partition key, or
  `empty` beside a partition key: the partition key's UTF-8 bytes (None if
  absent).
- `__kafka.headers` not the JSON above: headers from the plain properties.
- `__kafka.entry` other than `batch`, or `batch` on a payload that is not one
  whole magic-2 batch (too short, other magic, length or record count
  inconsistent): a one-record message whose value is the payload.
- `__kafka.producer` not a valid stamp: no stamp.

Well-formed `__kafka.*` properties, and unknown names under the prefix, are
never headers.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from kop.protocol.records import HEADER_SIZE, BatchHeader, Header, Record, read_header
from kop.storage.types import OutgoingMessage, StoredMessage

RESERVED = "__kafka."
P_ENTRY = "__kafka.entry"
P_KEY = "__kafka.key"
P_HEADERS = "__kafka.headers"
P_TS = "__kafka.ts"
P_PRODUCER = "__kafka.producer"

_INT64 = 1 << 63  # Kafka timestamps and producer ids are int64
_INT32 = 1 << 31  # sequences and record counts
_INT16 = 1 << 15  # producer epochs


class EntryFormat(StrEnum):
    PULSAR = "pulsar"
    KAFKA = "kafka"


@dataclass(frozen=True, slots=True)
class ProducerStamp:
    """Idempotent-producer identity of a batch, as carried in the log.

    On a read stamp, records `first_seq .. first_seq + index` of the batch are
    stored (index = count - 1: the whole batch). `encode_records` ignores
    `index` and numbers the messages itself, hence the default.
    """

    producer_id: int
    epoch: int
    first_seq: int
    count: int
    index: int = -1


@dataclass(frozen=True, slots=True)
class Entry:
    """One Pulsar message as the offset model sees it."""

    count: int  # Kafka records it holds (offsets it takes), >= 1
    max_timestamp: int
    size: int  # bytes, for tail-buffer and fetch budgeting
    batch: bytes | None  # kafka format: the stored batch
    record: Record | None  # pulsar format: the record (its offset field is 0)
    stamp: ProducerStamp | None
    # Malformed reserved properties (sorted), served as headers instead; for the
    # caller to log and count. Empty for anything kop wrote.
    anomalies: tuple[str, ...] = ()
    # What the entry holds in Python memory, objects included: the tail budget's
    # measure. A small record holds several times its `size`.
    footprint: int = 0


# Python object costs (CPython 3.11, 64-bit), measured with tracemalloc by
# tests/unit/test_tail_memory.py: an Entry with its Record and timestamps; a bytes
# object's header; one header (tuple, name, value); a producer stamp.
_ENTRY_COST = 300
_BYTES_COST = 33
_HEADER_COST = 145
_STAMP_COST = 190


def encode_batch(batch: bytes, head: BatchHeader) -> OutgoingMessage:
    return OutgoingMessage(
        payload=batch,
        properties={P_ENTRY: "batch"},
        partition_key=None,
        event_time=head.max_timestamp if head.max_timestamp > 0 else None,
    )


def encode_records(
    records: Sequence[Record], stamp: ProducerStamp | None = None, first_index: int = 0
) -> list[OutgoingMessage]:
    """Messages for `records`, which are records `first_index ..` of the batch
    `stamp` names (a retry completing a partly stored batch writes a suffix)."""
    if stamp is None:
        return [_encode(r, None) for r in records]
    if first_index < 0 or first_index + len(records) > stamp.count:
        raise ValueError(
            f"records {first_index}..{first_index + len(records) - 1} "
            f"are outside a batch of {stamp.count}"
        )
    prefix = f"{stamp.producer_id}/{stamp.epoch}/{stamp.first_seq}/{stamp.count}/"
    return [_encode(r, prefix + str(first_index + i)) for i, r in enumerate(records)]


def encode_record(record: Record) -> OutgoingMessage:
    return _encode(record, None)


def _encode(record: Record, producer: str | None) -> OutgoingMessage:
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
    if producer is not None:
        props[P_PRODUCER] = producer
    return OutgoingMessage(record.value, props, partition_key, event_time)


def decode(msg: StoredMessage) -> Entry:
    """Never raises: see the module docstring for what malformed input means."""
    if msg.properties.get(P_ENTRY) == "batch":
        head = _whole_batch(msg.payload)
        if head is not None:
            stamp = None
            if head.producer_id >= 0 and head.base_sequence >= 0:
                count = head.record_count
                stamp = ProducerStamp(
                    head.producer_id, head.producer_epoch, head.base_sequence, count, count - 1
                )
            size = len(msg.payload)
            footprint = _ENTRY_COST + _BYTES_COST + size + (_STAMP_COST if stamp else 0)
            return Entry(
                head.record_count, head.max_timestamp, size, msg.payload, None, stamp, (), footprint
            )
    record, stamp, anomalies = _read(msg, 0)
    size = 21 + len(record.value or b"") + len(record.key or b"")
    size += sum(len(k) + len(v or b"") + 2 for k, v in record.headers)
    footprint = size + _ENTRY_COST + _HEADER_COST * len(record.headers)
    footprint += _BYTES_COST * ((record.value is not None) + (record.key is not None))
    if stamp is not None:
        footprint += _STAMP_COST
    return Entry(1, record.timestamp, size, None, record, stamp, anomalies, footprint)


def decode_record(msg: StoredMessage, offset: int = 0) -> Record:
    """The message as one record, as `decode` serves any message that is not a
    valid kafka-format batch. Never raises."""
    return _read(msg, offset)[0]


def _read(msg: StoredMessage, offset: int) -> tuple[Record, ProducerStamp | None, tuple[str, ...]]:
    props = msg.properties
    bad: list[str] = []
    if P_ENTRY in props:  # a valid batch never gets here
        bad.append(P_ENTRY)

    pk = msg.partition_key
    key = pk.encode() if pk else None
    mode = props.get(P_KEY)
    if mode is not None:
        if mode == "b64" and pk:
            try:
                key = base64.b64decode(pk, validate=True)
            except ValueError:
                bad.append(P_KEY)
        elif mode == "empty" and not pk:
            key = b""
        else:
            bad.append(P_KEY)

    event_time = msg.event_time
    timestamp = event_time if 0 < event_time < _INT64 else msg.publish_time
    ts_text = props.get(P_TS)
    if ts_text is not None:
        ts = _int(ts_text)
        if ts is not None and -_INT64 <= ts < _INT64:
            timestamp = ts
        else:
            bad.append(P_TS)

    stamp = None
    stamp_text = props.get(P_PRODUCER)
    if stamp_text is not None:
        stamp = _stamp(stamp_text)
        if stamp is None:
            bad.append(P_PRODUCER)

    headers: tuple[Header, ...] | None = None
    headers_text = props.get(P_HEADERS)
    if headers_text is not None:
        headers = _json_headers(headers_text)
        if headers is None:
            bad.append(P_HEADERS)
    if headers is None:
        headers = tuple(
            (k, v.encode())
            for k, v in sorted(props.items())
            if not k.startswith(RESERVED) or k in bad
        )
    elif bad:
        headers += tuple((k, props[k].encode()) for k in sorted(bad))

    value = None if msg.null_value else msg.payload
    return Record(offset, timestamp, key, value, headers), stamp, tuple(sorted(bad)) if bad else ()


def _whole_batch(payload: bytes) -> BatchHeader | None:
    """The header if `payload` is exactly one magic-2 batch whose record count
    agrees with its offsets (what kop stores); the CRC is left to clients."""
    if len(payload) < HEADER_SIZE:
        return None
    head = read_header(payload)
    if (
        head.magic != 2
        or head.length != len(payload)
        or head.record_count <= 0
        or head.last_offset_delta != head.record_count - 1
    ):
        return None
    return head


def _stamp(text: str) -> ProducerStamp | None:
    parts = text.split("/")
    if len(parts) not in (4, 5):
        return None
    try:
        pid, epoch, seq, count = int(parts[0]), int(parts[1]), int(parts[2]), int(parts[3])
        index = int(parts[4]) if len(parts) == 5 else count - 1
    except ValueError:
        return None
    if (
        0 <= pid < _INT64
        and -_INT16 <= epoch < _INT16
        and 0 <= seq < _INT32
        and 0 < count < _INT32
        and 0 <= index < count
    ):
        return ProducerStamp(pid, epoch, seq, count, index)
    return None


def _json_headers(text: str) -> tuple[Header, ...] | None:
    try:
        items = json.loads(text)
        if type(items) is not list:
            return None
        out: list[Header] = []
        for item in items:
            if type(item) is not list or len(item) != 2:
                return None
            k, v = item
            if type(k) is not str:
                return None
            k.encode()  # a lone surrogate (JSON "\ud800") could not go on the wire
            if v is None:
                out.append((k, None))
            elif type(v) is str:
                out.append((k, base64.b64decode(v, validate=True)))
            else:
                return None
        return tuple(out)
    except (ValueError, RecursionError):  # bad JSON, UTF-8 or base64; absurd nesting
        return None


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
