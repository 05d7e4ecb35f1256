"""Kafka batches <-> stored entries: the entry formats at the unit of storage.

A Kafka batch becomes whole entries, never loose messages, so Pulsar stores it
all or nothing and nothing on the hot path costs a call per record:

- `kafka` format: the batch verbatim, one single-message entry (see
  `entry_format`).
- `pulsar` format, batching (the default): one batch entry holding one Pulsar
  message per record (the message rules of `entry_format`), split only where an
  entry would pass `max_entry_bytes`; a record larger than that alone is a
  single-message entry (stamped as below), which the storage stores in chunks.
  An idempotent batch's stamp is the entry's own property `__kafka.producer`
  (`pid/epoch/first-sequence/count/index`, index = the batch's last record in
  this entry), not a property of every message.
- `pulsar` format, not batching: one single-message entry per record, each
  stamped with its index (Pulsar counts a subscription's backlog in entries).
- Either `pulsar` way, the entries say the batch's Kafka codec: the storage keeps
  them compressed in its equivalent, and reading serves the records in that codec
  again (docs/decisions.md D11).

Reading an entry (`decode`) gives the Kafka view of it at its base offset:
how many offsets it takes (docs/offsets.md: a valid kafka-format message
counts its records, any other message one), the record batches to serve, the
producer stamps it carries and any malformed reserved property. A batch entry
whose layout does not parse still takes one offset per message, served as
null-valued records at its publish time (the first `MAX_NULL_RECORDS` of them;
the rest a gap) and named in `anomalies` ("batch").

The two per-record loops (records -> batch layout, batch layout -> Kafka batch)
run in the native extension when it is built (`kop_native`, see
docs/decisions.md), else in the Python here; both give the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from kop.entries import formats as entry_format
from kop.entries import framing
from kop.entries.formats import (
    P_ENTRY,
    P_PRODUCER,
    P_TXN,
    EntryFormat,
    ProducerStamp,
    encode_record,
    parse_stamp,
    read_message,
    whole_batch,
)
from kop.entries.native import native
from kop.protocol import compress
from kop.protocol.batch_epochs import BATCH_EPOCH, rebased, with_leader_epoch
from kop.protocol.batch_rewrite import as_transactional
from kop.protocol.control import Marker, read_marker
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import (
    MAX_UNCOMPRESSED_BYTES,
    BatchHeader,
    Record,
    build_batch,
    check_records,
    compressed,
    iter_records,
    null_batch,
    records_section,
    with_base_offset,
)
from kop.storage import batch_layout
from kop.storage.types import OutgoingEntry, OutgoingMessage, StoredEntry, StoredMessage

# The topic's Pulsar schema version of each Confluent schema id it has.
Versions = Mapping[int, int]

# A stamp and the offset of the last record it covers.
StampAt = tuple[ProducerStamp, int]

_INT32_MAX = (1 << 31) - 1  # Pulsar's num_messages_in_batch is an int32
# An unparseable batch entry takes the offsets of every message it claims, but only
# its first this many are served as null records; the batch served spans all its
# offsets, the rest a gap (as compaction leaves one). The claim is the entry's
# metadata, which any Pulsar producer writes: ten bytes claiming 2^31 messages must
# not make kop build 2^31 records.
MAX_NULL_RECORDS = 4096

# Python object costs (CPython 3.11, 64-bit), measured with tracemalloc by
# tests/unit/test_tail_memory.py: an Entry with its bytes object; a stamp with
# its tuple.
_ENTRY_COST = 190
_STAMP_COST = 250


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored entry as the offset model sees it, at its base offset."""

    count: int  # Kafka records (offsets) it holds, >= 1
    max_timestamp: int
    data: bytes  # its records as Kafka record batches, at their offsets
    stamps: tuple[StampAt, ...] = ()
    # Malformed reserved properties (sorted), served as headers instead; for the
    # caller to log and count. Empty for anything kop wrote.
    anomalies: tuple[str, ...] = ()
    marker: Marker | None = None  # a transaction marker (the entry is its control batch)

    @property
    def size(self) -> int:
        """Bytes it serves (fetch budgeting)."""
        return len(self.data)

    @property
    def footprint(self) -> int:
        """What it holds in Python memory: the tail budget's measure."""
        return _ENTRY_COST + len(self.data) + _STAMP_COST * len(self.stamps)


# -- writing -------------------------------------------------------------------


def kafka_entry(batch: bytes, head: BatchHeader) -> OutgoingEntry:
    return OutgoingEntry.of(entry_format.encode_batch(batch, head))


def pulsar_entries(
    batch: bytes,
    head: BatchHeader,
    stamp: ProducerStamp | None,
    first_index: int,
    *,
    batching: bool,
    max_entry_bytes: int,
    max_uncompressed: int = MAX_UNCOMPRESSED_BYTES,
    versions: Versions | None = None,
    unknown: set[int] | None = None,
) -> list[OutgoingEntry]:
    """Entries for records `first_index ..` of `batch` (a retry completing a partly
    stored batch writes a suffix). Raises KafkaError: CORRUPT_MESSAGE when the
    batch does not decode, MESSAGE_TOO_LARGE when it decompresses past
    `max_uncompressed`. `versions`: the topic's Pulsar schema version of each
    Confluent id, for values in Confluent's framing (kop.entries.framing); the ids of
    framed-looking values it does not know go into `unknown`."""
    if first_index < 0 or (stamp is not None and first_index >= stamp.count):
        raise ValueError(f"record {first_index} is outside a batch of {head.record_count}")
    codec = head.compression
    # Each record of a transaction names it (`__kafka.txn`): a Pulsar consumer reads a
    # batch entry's messages with their own properties only, never the entry's, and
    # filters a transaction's records by it (docs/transactions.md, the Pulsar view).
    txn = {P_TXN: str(stamp.producer_id)} if stamp is not None and stamp.transactional else {}
    missed: set[int] = set() if unknown is None else unknown
    if not batching:
        records = producer_records(batch, head, max_uncompressed)[first_index:]
        runs: list[tuple[int | None, list[Record]]] = [(None, records)]
        if versions:
            runs, found = _runs(records, versions)
            missed.update(found)
        out: list[OutgoingEntry] = []
        index = first_index
        for version, run in runs:
            schema = None if version is None else framing.version_bytes(version)
            for r in run:
                text = None if stamp is None else _stamp_text(stamp, index)
                out.append(OutgoingEntry(_with(encode_record(r, text), txn), codec=codec,
                                         schema_version=schema))  # fmt: skip
                index += 1
        return out
    fast = native()
    extra = next(iter(txn.items()), None)
    chunks: Sequence[tuple[bytes, int, int | None]]
    if fast is not None:
        section = records_section(batch, head, max_uncompressed)
        try:
            if versions:
                chunks, found = fast.records_to_framed_layouts(
                    section, head.record_count, head.base_timestamp, first_index,
                    max_entry_bytes, extra, dict(versions), dict(_tails(versions)),
                )  # fmt: skip
                missed.update(found)
            else:
                chunks = [
                    (layout, count, None)
                    for layout, count in fast.records_to_layouts(
                        section, head.record_count, head.base_timestamp, first_index,
                        max_entry_bytes, extra,
                    )
                ]  # fmt: skip
        except ValueError as exc:
            raise KafkaError(ErrorCode.corrupt_message, f"undecodable record batch: {exc}") from exc
    else:
        records = producer_records(batch, head, max_uncompressed)[first_index:]
        chunks, found = framed_layouts(records, max_entry_bytes, txn, versions or {})
        missed.update(found)
    return _batched(chunks, stamp, first_index, codec, max_entry_bytes)


def framed_layouts(
    records: Sequence[Record], max_entry_bytes: int, extra: dict[str, str] | None,
    versions: Versions,
) -> tuple[list[tuple[bytes, int, int | None]], list[int]]:  # fmt: skip
    """`layouts` of each run of records in one Pulsar schema version (their framing off,
    kop.entries.framing), with that version; and the ids of framed-looking values
    `versions` did not know, each once, in order. The Python twin of the native kernel."""
    runs, missed = _runs(records, versions)
    out = [
        (layout, count, version)
        for version, run in runs
        for layout, count in layouts(run, max_entry_bytes, extra)
    ]
    return out, missed


def _runs(
    records: Sequence[Record], versions: Versions
) -> tuple[list[tuple[int | None, list[Record]]], list[int]]:
    """`framing.unframed` by `versions`, and the ids it did not know, each once, in order."""
    missed: dict[int, None] = {}  # ordered, once each

    def version(sid: int) -> int | None:
        found = versions.get(sid)
        if found is None:
            missed.setdefault(sid)
        return found

    return framing.unframed(records, version, _tails(versions)), list(missed)


def _tails(versions: Versions) -> Mapping[int, bytes]:
    return versions.tails if isinstance(versions, framing.IdVersions) else {}


def _batched(
    chunks: Sequence[tuple[bytes, int, int | None]], stamp: ProducerStamp | None,
    first_index: int, codec: int, max_entry_bytes: int,
) -> list[OutgoingEntry]:  # fmt: skip
    """An entry per layout, stamped with the index of its last record, naming the schema
    version its values are in."""
    out: list[OutgoingEntry] = []
    index = first_index
    for layout, count, version in chunks:
        index += count
        schema = None if version is None else framing.version_bytes(version)
        props = {} if stamp is None else {P_PRODUCER: _stamp_text(stamp, index - 1)}
        alone = batch_layout.single(layout) if len(layout) > max_entry_bytes else None
        if alone is not None:  # a record larger than an entry: alone, for chunking
            message = replace(alone, properties={**alone.properties, **props})
            out.append(OutgoingEntry(message, codec=codec, schema_version=schema))
        else:
            out.append(OutgoingEntry(batch=layout, count=count, properties=props, codec=codec,
                                     schema_version=schema))  # fmt: skip
    return out


def layouts(
    records: Sequence[Record], max_entry_bytes: int, extra: dict[str, str] | None = None
) -> list[tuple[bytes, int]]:
    """`records` as batch layouts of at most `max_entry_bytes` (at least one record
    each): (layout, records in it); `extra`, properties every record's message gets
    after its own. The Python twin of the native kernel."""
    out: list[tuple[bytes, int]] = []
    current: list[bytes] = []
    size = 0
    for r in records:
        part = batch_layout.build([_with(encode_record(r, None), extra or {})])
        if current and size + len(part) > max_entry_bytes:
            out.append((b"".join(current), len(current)))
            current, size = [], 0
        current.append(part)
        size += len(part)
    if current:
        out.append((b"".join(current), len(current)))
    return out


def _with(message: OutgoingMessage, properties: dict[str, str]) -> OutgoingMessage:
    if not properties:
        return message
    return replace(message, properties={**message.properties, **properties})


def _stamp_text(stamp: ProducerStamp, index: int) -> str:
    text = f"{stamp.producer_id}/{stamp.epoch}/{stamp.first_seq}/{stamp.count}/{index}"
    return text + "/t" if stamp.transactional else text


def encode(
    head: BatchHeader,
    batch: bytes,
    fmt: EntryFormat,
    batching: bool,
    first_index: int,
    max_entry_bytes: int,
    max_uncompressed: int = MAX_UNCOMPRESSED_BYTES,
    versions: Versions | None = None,
    unknown: set[int] | None = None,
) -> list[OutgoingEntry]:
    """The entries for records `first_index ..` of a produced batch. Either way a
    compressed batch is decompressed, within `max_uncompressed` bytes
    (MESSAGE_TOO_LARGE past it): Kafka refuses one that does not decode
    (CORRUPT_MESSAGE) rather than store what no consumer can read."""
    if fmt is EntryFormat.KAFKA or head.is_control:  # a marker is a whole batch in either
        if head.compression:
            check_records(batch, max_uncompressed)
        return [kafka_entry(batch, head)]
    stamp = None
    if head.producer_id >= 0 and head.base_sequence >= 0:
        stamp = ProducerStamp(
            head.producer_id, head.producer_epoch, head.base_sequence, head.record_count,
            transactional=head.is_transactional,
        )  # fmt: skip
    return pulsar_entries(
        batch,
        head,
        stamp,
        first_index,
        batching=batching,
        max_entry_bytes=max_entry_bytes,
        max_uncompressed=max_uncompressed,
        versions=versions,
        unknown=unknown,
    )


def producer_records(
    batch: bytes, head: BatchHeader, max_uncompressed: int = MAX_UNCOMPRESSED_BYTES
) -> list[Record]:
    """Each record at the time its producer gave it (base + delta). Topics here are
    CreateTime, so a batch claiming LogAppendTime is read as Kafka stores it:
    its records keep their own times, not the batch's max timestamp."""
    return list(iter_records(batch, limit=max_uncompressed, create_time=True))


# -- reading -------------------------------------------------------------------


def decode(entry: StoredEntry, base_offset: int) -> Entry:
    """Never raises: see `entry_format` for what malformed input means. Records are
    served in the codec the entry was stored in (their producer's), as Kafka does
    with `compression.type=producer`."""
    decoded = _decode(entry, base_offset)
    if entry.codec and entry.codec in compress.CODECS:
        return replace(decoded, data=compressed(decoded.data, entry.codec))
    return decoded


def _decode(entry: StoredEntry, base_offset: int) -> Entry:
    if entry.message is not None:
        return _single(entry.message, base_offset)
    stamps: list[StampAt] = []
    anomalies: list[str] = []
    outer = entry.properties.get(P_PRODUCER)
    fast = native()
    if fast is not None:
        count, max_ts, data, inner, bad = fast.decode_layout(
            entry.batch, entry.count, base_offset, entry.publish_time
        )
        stamps.extend((ProducerStamp(*s[:5]), s[5]) for s in inner)
        anomalies.extend(bad)
    else:
        count, max_ts, data, inner_stamps, bad = decode_layout(entry, base_offset)
        stamps.extend(inner_stamps)
        anomalies.extend(bad)
    if outer is not None:
        stamp = parse_stamp(outer)
        if stamp is None:
            anomalies.append(P_PRODUCER)
        else:
            stamps.append((stamp, base_offset + count - 1))
            if stamp.transactional:  # the entry's records end the stamped part
                data = _transactional(data, stamp, stamp.index - count + 1)
    data = with_leader_epoch(data, BATCH_EPOCH)
    return Entry(count, max_ts, data, tuple(stamps), tuple(sorted(set(anomalies))))


def decode_layout(
    entry: StoredEntry, base_offset: int
) -> tuple[int, int, bytes, list[StampAt], list[str]]:
    """A batch entry's (count, max timestamp, Kafka batches, stamps, anomalies).
    The Python twin of the native kernel."""
    if entry.count > _INT32_MAX:
        raise ValueError("more messages than a Pulsar entry can hold")
    messages = batch_layout.messages(entry, compacted_out=True)
    if not messages:
        n = max(1, entry.count)
        data = null_batch(base_offset, min(n, MAX_NULL_RECORDS), n, entry.publish_time)
        return n, entry.publish_time, data, [], ["batch"]
    out: list[bytes] = []
    pending: list[Record] = []
    stamps: list[StampAt] = []
    anomalies: list[str] = []
    offset = base_offset
    max_ts = -1
    for msg in messages:
        head = whole_batch(msg.payload) if msg.properties.get(P_ENTRY) == "batch" else None
        if head is not None:
            if pending:
                out.append(build_batch(pending))
                pending = []
            out.append(with_base_offset(msg.payload, offset))
            max_ts = max(max_ts, head.max_timestamp)
            offset += head.record_count
            continue
        record, stamp, bad = read_message(msg, offset)
        pending.append(record)
        max_ts = max(max_ts, record.timestamp)
        if stamp is not None:
            stamps.append((stamp, offset))
        anomalies.extend(bad)
        offset += 1
    if pending:
        out.append(build_batch(pending))
    return offset - base_offset, max_ts, b"".join(out), _last_per_batch(stamps), anomalies


def _last_per_batch(stamps: list[StampAt]) -> list[StampAt]:
    """Of consecutive stamps of one batch, the last says how far it got."""
    out: list[StampAt] = []
    for stamp, at in stamps:
        if out and out[-1][0].batch_key == stamp.batch_key:
            out[-1] = (stamp, at)
        else:
            out.append((stamp, at))
    return out


def _marker(batch: bytes) -> Marker | None:
    """A control batch's marker; one that is not a marker of ours is served as it is,
    and changes no transaction (reading never raises)."""
    try:
        return read_marker(batch)
    except KafkaError:
        return None


def _single(msg: StoredMessage, base_offset: int) -> Entry:
    if msg.properties.get(P_ENTRY) == "batch":
        head = whole_batch(msg.payload)
        if head is not None:
            stamps: tuple[StampAt, ...] = ()
            last = base_offset + head.record_count - 1
            if head.producer_id >= 0 and head.base_sequence >= 0:
                count = head.record_count
                whole = ProducerStamp(
                    head.producer_id, head.producer_epoch, head.base_sequence, count, count - 1,
                    head.is_transactional,
                )  # fmt: skip
                stamps = ((whole, last),)
            data = rebased(msg.payload, base_offset, BATCH_EPOCH)
            marker = _marker(msg.payload) if head.is_control else None
            return Entry(head.record_count, head.max_timestamp, data, stamps, marker=marker)
    record, stamp, bad = read_message(msg, base_offset)
    data = build_batch([record])
    if stamp is not None and stamp.transactional:
        data = _transactional(data, stamp, stamp.index)
    return Entry(
        1,
        record.timestamp,
        with_leader_epoch(data, BATCH_EPOCH),
        () if stamp is None else ((stamp, base_offset),),
        bad,
    )


def _transactional(data: bytes, stamp: ProducerStamp, first_index: int) -> bytes:
    """Records of a transactional batch, served under its producer again (Kafka's
    `read_committed` consumers skip aborted batches by producer id)."""
    sequence = (stamp.first_seq + max(0, first_index)) % (1 << 31)
    return as_transactional(data, stamp.producer_id, stamp.epoch, sequence)
