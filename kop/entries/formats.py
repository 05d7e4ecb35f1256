"""The two entry formats: Kafka records <-> Pulsar messages.

`pulsar` format: one Pulsar message per Kafka record, shaped the way a Pulsar
application expects (UTF-8 key = partition key, UTF-8 headers = properties,
timestamp = event time, null value = Pulsar's null value). What a plain
message cannot carry exactly is kept in reserved `__kafka.*` properties, which
are not shown to Kafka clients as headers:

- `__kafka.key`: `b64` (partition key is base64 of a binary key; Pulsar's own
  flag for that, `partition_key_b64_encoded`, is set too, and is honoured alone
  on messages Pulsar applications wrote with binary keys) or `empty`.
- `__kafka.headers`: JSON list of `[key, base64 value or null]`, written when
  headers are not all UTF-8, repeat a key, are not in key order, or use the
  reserved prefix; it then wins over the plain properties.
- `__kafka.ts`: the Kafka timestamp when event time cannot hold it (<= 0).
- `__kafka.producer`: `pid/epoch/first-sequence/count/index`: the idempotent
  batch a write belongs to, index = its last record's position in the batch;
  `/t` after it: the batch is transactional (docs/decisions.md D17).
  It is a property of the entry (`kop.entries.codec`): of a batch entry's own
  metadata, or of a single-record message. Older kop stamped every message of a
  batch entry; those stamps are still read. A batch can be stored only in part
  (a prefix of its entries); the last stamp read says how far it got, so a retry
  can complete it and producer state can be rebuilt from the log. The legacy
  form `pid/epoch/first-sequence/count` means the whole batch: index = count - 1.

`kafka` format: the producer's record batch verbatim as one message, marked
`__kafka.entry=batch`; only that property is read, the stamp comes from the
batch header.

- `__kafka.txn`: the producer id of the transaction a record belongs to, on every
  record of a transactional batch (batched or not): Pulsar applications read a
  batch entry's messages with their own properties only, never the entry's, and
  filter out what a transaction aborted by it (docs/transactions.md). kop reads
  the stamp instead.

A transaction marker is a whole control batch in either format, with
`__kafka.marker=commit|abort/pid/epoch` beside `__kafka.entry=batch`: written for
Pulsar applications, so they can drop what a transaction aborted without decoding
the batch (docs/transactions.md); kop reads the batch itself.

Any Pulsar application can write these properties, so reading never raises:
a tail reader that failed on a message would retry it forever and stop the
partition. A malformed reserved property is served as a plain header (name =
the property, value = its UTF-8 bytes), named in the entry's `anomalies` (`kop.entries.codec`), and
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
import contextlib
import json
from dataclasses import dataclass
from enum import StrEnum

from kop.protocol.control import read_marker
from kop.protocol.errors import KafkaError
from kop.protocol.records import HEADER_SIZE, BatchHeader, Header, Record, read_header
from kop.storage.types import OutgoingMessage, StoredMessage

RESERVED = "__kafka."
P_ENTRY = "__kafka.entry"
P_KEY = "__kafka.key"
P_HEADERS = "__kafka.headers"
P_TS = "__kafka.ts"
P_PRODUCER = "__kafka.producer"
P_MARKER = "__kafka.marker"
P_TXN = "__kafka.txn"

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
    transactional: bool = False

    @property
    def batch_key(self) -> tuple[int, int, int, int]:
        """Which batch it stamps (whatever part of it)."""
        return (self.producer_id, self.epoch, self.first_seq, self.count)


def encode_batch(batch: bytes, head: BatchHeader) -> OutgoingMessage:
    properties = {P_ENTRY: "batch"}
    if head.is_control:  # for Pulsar consumers' filter (docs/transactions.md)
        with contextlib.suppress(KafkaError):  # not a marker: nothing to tell
            m = read_marker(batch)
            if m is not None:
                outcome = "commit" if m.commit else "abort"
                properties[P_MARKER] = f"{outcome}/{m.producer_id}/{m.producer_epoch}"
    return OutgoingMessage(
        payload=batch,
        properties=properties,
        partition_key=None,
        event_time=head.max_timestamp if head.max_timestamp > 0 else None,
    )


def encode_record(record: Record, producer: str | None = None) -> OutgoingMessage:
    """The record as one Pulsar message; `producer` is its `__kafka.producer` stamp."""
    props: dict[str, str] = {}
    partition_key: str | None = None
    key_b64 = False
    if record.key is not None:
        if record.key == b"":
            props[P_KEY] = "empty"
        else:
            text = _utf8(record.key)
            if text is None:
                partition_key = base64.b64encode(record.key).decode()
                props[P_KEY] = "b64"
                key_b64 = True
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
    return OutgoingMessage(record.value, props, partition_key, event_time, key_b64)


def decode_record(msg: StoredMessage, offset: int = 0) -> Record:
    """The message as one record, as any message that is not a valid kafka-format
    batch is served. Never raises."""
    return read_message(msg, offset)[0]


def read_message(
    msg: StoredMessage, offset: int
) -> tuple[Record, ProducerStamp | None, tuple[str, ...]]:
    """The record a message holds, its stamp and its malformed reserved properties."""
    props = msg.properties
    bad: list[str] = []
    if P_ENTRY in props:  # a valid batch never gets here
        bad.append(P_ENTRY)

    pk = msg.partition_key
    key = pk.encode() if pk else None
    mode = props.get(P_KEY)
    if mode is None and msg.key_b64 and pk:
        with contextlib.suppress(ValueError):  # not base64 after all: its own bytes
            key = base64.b64decode(pk, validate=True)
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
        stamp = parse_stamp(stamp_text)
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


def whole_batch(payload: bytes) -> BatchHeader | None:
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


def parse_stamp(text: str) -> ProducerStamp | None:
    parts = text.split("/")
    transactional = len(parts) == 6 and parts[5] == "t"
    if transactional:
        parts = parts[:5]
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
        return ProducerStamp(pid, epoch, seq, count, index, transactional)
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
