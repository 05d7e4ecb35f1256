"""The Pulsar view's rows say what the committed-only filter needs (docs/transactions.md,
"The Pulsar view"): a transactional record names its producer, in either entry format
(a record's `__kafka.txn`, a batch's header), and a marker is a row of its own, commit
or abort, since it takes an offset. Before, a transactional record read as any other
and the filter kept every aborted record of the `pulsar` entry format."""

from __future__ import annotations

from dataclasses import replace

from kop.entries.formats import P_TXN, encode_batch, encode_record
from kop.protocol.control import Marker, marker_batch
from kop.protocol.records import Record, build_batch, read_header
from kop.storage.types import OutgoingMessage, Position, StoredMessage
from spark_jobs.layout import Split
from spark_jobs.pulsar_source import _Rows

TS = 1_700_000_000_000


def _stored(out: OutgoingMessage, entry: int) -> StoredMessage:
    return StoredMessage(
        Position(1, entry, -1), out.payload or b"", out.payload is None, out.properties,
        out.partition_key or "", out.event_time or 0, TS,
    )  # fmt: skip


def _in_txn(message: OutgoingMessage, txn: str) -> OutgoingMessage:
    """A record of a transaction in the pulsar entry format, as kop writes it."""
    return replace(message, properties={**message.properties, P_TXN: txn})


def _batch(data: bytes) -> OutgoingMessage:
    return encode_batch(data, read_header(data))


def test_rows_name_each_transactional_records_producer_and_each_marker() -> None:
    rows = _Rows(Split("t-partition-0", 0, 0, None, (1, 9, -1), True))
    txn_batch = build_batch(
        [Record(0, TS, b"k", b"a"), Record(1, TS, b"k", b"b")],
        producer_id=9, producer_epoch=2, base_sequence=0, transactional=True,
    )  # fmt: skip
    messages = [
        encode_record(Record(0, TS, b"k", b"plain")),
        _in_txn(encode_record(Record(0, TS, b"k", b"in txn")), "7"),
        encode_record(Record(0, TS, b"k", b"idempotent"), producer="8/0/0/1/0"),
        _in_txn(encode_record(Record(0, TS, b"k", b"garbage")), "x7"),
        _batch(txn_batch),
        _batch(marker_batch(Marker(False, 7, 0, 0), TS)),
        _batch(marker_batch(Marker(True, 9, 2, 0), TS)),
    ]
    for entry, out in enumerate(messages):
        rows.add(_stored(out, entry))
    c = rows.cols
    assert c["value"][:6] == [b"plain", b"in txn", b"idempotent", b"garbage", b"a", b"b"]
    assert c["producer_id"] == [-1, 7, -1, -1, 9, 9, 7, 9]
    assert c["control"] == [None] * 6 + ["abort", "commit"]
    assert c["ordinal"] == list(range(8))  # a marker takes its place, as its offset
