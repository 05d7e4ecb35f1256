"""Whole entries: a Kafka batch is stored as entries Pulsar applications read as
plain messages, and reading any entry back gives the records at their offsets,
the producer stamps and the anomalies, never an exception."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kop.entries import codec as entries
from kop.entries.formats import P_KEY, P_PRODUCER, P_TXN, ProducerStamp, encode_batch
from kop.protocol.errors import KafkaError
from kop.protocol.records import BatchHeader, Record, build_batch, iter_batches, read_header
from kop.storage import batch_layout
from kop.storage.types import OutgoingEntry, OutgoingMessage, Position, StoredEntry

PUBLISH = 1_700_000_000_000
AT = Position(4, 2)


def stored(out: OutgoingEntry, at: Position = AT) -> StoredEntry:
    """What a reader hands back for an entry written as `out`."""
    message = None
    if out.message is not None:
        from kop.storage.types import StoredMessage

        m = out.message
        message = StoredMessage(
            at, m.payload or b"", m.payload is None, dict(m.properties),
            m.partition_key or "", m.event_time or 0, PUBLISH, "w", m.key_b64,
        )  # fmt: skip
    return StoredEntry(at, "w", 0, PUBLISH, out.count, message, out.batch, dict(out.properties))


def _batch(records: list[Record], pid: int = -1, seq: int = -1) -> tuple[bytes, BatchHeader]:
    data = build_batch(records, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                       base_sequence=seq)  # fmt: skip
    return data, read_header(data)


records = st.lists(
    st.builds(
        Record,
        offset=st.just(0),
        timestamp=st.one_of(st.integers(-1, 0), st.integers(1, 2**43)),
        key=st.one_of(st.none(), st.binary(max_size=8), st.text(max_size=6).map(str.encode)),
        value=st.one_of(st.none(), st.binary(max_size=40)),
        headers=st.lists(
            st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=6))),
            max_size=3,
        ).map(tuple),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(recs=records, max_bytes=st.sampled_from([1, 40, 200, 4 << 20]), base=st.integers(0, 2**40))
def test_a_batch_round_trips_through_its_entries(
    recs: list[Record], max_bytes: int, base: int
) -> None:
    recs = [Record(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(recs)]
    data, head = _batch(recs)
    out = entries.pulsar_entries(data, head, None, 0, batching=True, max_entry_bytes=max_bytes)
    assert sum(e.count for e in out) == len(recs)
    assert all(e.properties == {} for e in out)
    # Batch entries, but for a record larger than an entry alone: a message of its own,
    # which the storage chunks.
    assert all(e.message is None for e in out) or max_bytes < 4 << 20
    got: list[Record] = []
    offset = base
    for e in out:
        entry = entries.decode(stored(e), offset)
        assert entry.count == e.count and entry.anomalies == () and entry.stamps == ()
        got.extend(iter_batches(entry.data))
        offset += entry.count
    expected = [Record(base + r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs]
    assert got == expected


def test_pulsar_applications_read_one_plain_message_per_record() -> None:
    recs = [
        Record(0, 1234, b"user-1", b"hello", (("a", b"1"),)),
        Record(1, 1235, b"\xff\x00", None, ()),
    ]
    data, head = _batch(recs)
    [out] = entries.pulsar_entries(data, head, None, 0, batching=True, max_entry_bytes=1 << 20)
    first, second = batch_layout.messages(stored(out))
    assert (first.partition_key, first.payload, first.event_time) == ("user-1", b"hello", 1234)
    assert first.properties == {"a": "1"} and not first.key_b64
    # a binary key is base64 with Pulsar's own flag, so getKeyBytes() gives the bytes back
    assert second.key_b64 and base64.b64decode(second.partition_key) == b"\xff\x00"
    assert second.null_value and second.properties == {P_KEY: "b64"}


def test_an_idempotent_batch_is_stamped_once_per_entry_with_how_far_it_got() -> None:
    recs = [Record(i, 5, None, b"x" * 30) for i in range(5)]
    data, head = _batch(recs, pid=7, seq=10)
    stamp = ProducerStamp(7, 0, 10, 5)
    out = entries.pulsar_entries(data, head, stamp, 0, batching=True, max_entry_bytes=100)
    assert [e.count for e in out] == [2, 2, 1]  # split where an entry would pass the limit
    assert [e.properties[P_PRODUCER] for e in out] == ["7/0/10/5/1", "7/0/10/5/3", "7/0/10/5/4"]
    assert all(P_PRODUCER not in m.properties for m in batch_layout.messages(stored(out[0])))
    decoded = entries.decode(stored(out[1]), 100)
    assert decoded.stamps == ((ProducerStamp(7, 0, 10, 5, 3), 101),)
    # a retry that completes the batch writes the suffix only, stamped the same way
    rest = entries.pulsar_entries(data, head, stamp, 4, batching=True, max_entry_bytes=100)
    assert [(e.count, e.properties[P_PRODUCER]) for e in rest] == [(1, "7/0/10/5/4")]


def test_unbatched_records_are_entries_of_their_own_each_stamped() -> None:
    recs = [Record(i, 5, b"k", b"v") for i in range(3)]
    data, head = _batch(recs, pid=7, seq=0)
    out = entries.pulsar_entries(
        data, head, ProducerStamp(7, 0, 0, 3), 1, batching=False, max_entry_bytes=1 << 20
    )
    stamps = [e.message.properties[P_PRODUCER] for e in out if e.message]
    assert stamps == ["7/0/0/3/1", "7/0/0/3/2"]


def test_an_older_kops_batch_entry_with_stamped_messages_and_a_kafka_batch_is_counted_whole() -> (
    None
):
    """Older kop let Pulsar's producer pack messages into entries: plain records
    stamped each, and a kafka-format batch beside them."""
    kafka, khead = _batch([Record(0, 7, None, b"k0"), Record(1, 9, None, b"k1")], pid=3, seq=0)
    layout = batch_layout.build(
        [
            OutgoingMessage(b"a", {P_PRODUCER: "7/0/10/3/0"}, None, 100),
            OutgoingMessage(b"b", {P_PRODUCER: "7/0/10/3/1"}, None, 101),
            encode_batch(kafka, khead),
            OutgoingMessage(b"c", {"app": "x"}, "key", 99),
        ]
    )
    entry = entries.decode(StoredEntry(AT, "old", 0, PUBLISH, 4, None, layout), 50)
    assert entry.count == 5 and entry.max_timestamp == 101
    got = [(r.offset, r.value) for r in iter_batches(entry.data)]
    assert got == [(50, b"a"), (51, b"b"), (52, b"k0"), (53, b"k1"), (54, b"c")]
    # the last stamp of a batch says how far it got
    assert entry.stamps == ((ProducerStamp(7, 0, 10, 3, 1), 51),)


@pytest.mark.parametrize("layout", [b"", b"\x00\x00\x00\x09abc", b"\x00\x00\x00\x02\x18\x05ab"])
def test_a_batch_entry_that_does_not_parse_still_takes_its_offsets(layout: bytes) -> None:
    entry = entries.decode(StoredEntry(AT, "x", 0, PUBLISH, 3, None, layout), 10)
    assert entry.count == 3 and entry.anomalies == ("batch",)
    got = list(iter_batches(entry.data))
    assert [(r.offset, r.value, r.timestamp) for r in got] == [
        (10, None, PUBLISH), (11, None, PUBLISH), (12, None, PUBLISH)
    ]  # fmt: skip


def test_an_entry_claiming_more_messages_than_it_holds_serves_a_bounded_batch() -> None:
    """Pulsar's metadata says how many messages a batch entry holds, and any producer
    writes it: ten bytes claiming 2^31 - 1 still take that many offsets, but only the
    first MAX_NULL_RECORDS are null records, the rest a gap (kop built them all)."""
    n = 2**31 - 1
    entry = entries.decode(StoredEntry(AT, "x", 0, PUBLISH, n, None, bytes(10)), 7)
    assert entry.count == n and entry.anomalies == ("batch",)
    assert len(entry.data) < 64 << 10
    head = read_header(entry.data)
    assert (head.base_offset, head.last_offset_delta) == (7, n - 1)
    assert head.record_count == entries.MAX_NULL_RECORDS
    got = list(iter_batches(entry.data))
    assert [r.offset for r in got] == list(range(7, 7 + entries.MAX_NULL_RECORDS))


def test_a_malformed_entry_stamp_is_named_and_ignored() -> None:
    layout = batch_layout.build([OutgoingMessage(b"a", {}, None, 5)])
    entry = entries.decode(StoredEntry(AT, "x", 0, PUBLISH, 1, None, layout, {P_PRODUCER: "x"}), 0)
    assert entry.stamps == () and entry.anomalies == (P_PRODUCER,)


def test_a_pulsar_applications_binary_key_is_read_back_as_bytes() -> None:
    """A Java producer's keyBytes() sets Pulsar's base64 flag and no kop property."""
    key = base64.b64encode(b"\x00\x01\xfe").decode()
    layout = batch_layout.build([OutgoingMessage(b"v", {}, key, 5, key_b64=True)])
    entry = entries.decode(StoredEntry(AT, "app", 0, PUBLISH, 1, None, layout), 0)
    [record] = iter_batches(entry.data)
    assert record.key == b"\x00\x01\xfe" and record.headers == ()


def test_a_corrupt_record_section_is_refused_before_anything_is_written() -> None:
    data, head = _batch([Record(0, 5, None, b"v")])
    broken = data[:-1]
    with pytest.raises(KafkaError):
        entries.pulsar_entries(broken, head, None, 0, batching=True, max_entry_bytes=1 << 20)


def test_a_transactional_batchs_records_each_name_the_transaction_for_pulsar_consumers() -> None:
    """A Pulsar consumer reads a batch entry's messages with their own properties,
    never the entry's: a transaction's records must each say whose transaction they
    belong to (`__kafka.txn`), or no Pulsar application could filter out an aborted
    transaction (docs/transactions.md, the Pulsar view; the Spark job's committed-only
    view found every aborted record of the pulsar entry format kept). Kafka clients
    never see it (a reserved property, in the native and the Python decoder alike),
    and offsets and producer state read the entry as before."""
    recs = [Record(i, 5, None, b"x" * 30) for i in range(5)]
    data = build_batch(recs, producer_id=7, producer_epoch=0, base_sequence=10,
                       transactional=True)  # fmt: skip
    stamp = ProducerStamp(7, 0, 10, 5, transactional=True)
    for batching in (True, False):
        out = entries.pulsar_entries(data, read_header(data), stamp, 0, batching=batching,
                                     max_entry_bytes=200)  # fmt: skip
        assert len(out) > 1 and sum(e.count for e in out) == 5
        messages = [m for e in out for m in batch_layout.messages(stored(e))]
        assert [m.properties[P_TXN] for m in messages] == ["7"] * 5
        decoded = entries.decode(stored(out[-1]), 100)
        assert decoded.stamps == ((ProducerStamp(7, 0, 10, 5, 4, True), 99 + out[-1].count),)
        assert decoded.anomalies == ()
        assert [(r.value, r.headers) for r in iter_batches(decoded.data)] == [
            (b"x" * 30, ())
        ] * out[-1].count
