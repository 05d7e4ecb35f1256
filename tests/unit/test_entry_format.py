"""The pulsar entry format, message by message: any Kafka record survives the trip
through a Pulsar message exactly, and what a Pulsar application sees is plain
where it can be. (Whole entries, batches of such messages: test_entries.py.)"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kop.entries import codec as entries
from kop.entries import formats as entry_format
from kop.entries.formats import (
    P_ENTRY,
    P_HEADERS,
    P_KEY,
    P_PRODUCER,
    P_TS,
    EntryFormat,
    ProducerStamp,
)
from kop.protocol.batch_epochs import BATCH_EPOCH, with_leader_epoch
from kop.protocol.records import Record, build_batch, iter_batches, read_header, with_base_offset
from kop.storage.types import OutgoingMessage, Position, StoredEntry
from kop.storage.types import StoredMessage as PulsarMessage
from tests.unit.batch_samples import BATCH, MALFORMED_HEADERS, batch_payloads

PUBLISH_TIME = 1_700_000_000_000
AT = Position(1, 1)


def encode_records(
    recs: list[Record], stamp: ProducerStamp | None = None, first_index: int = 0
) -> list[OutgoingMessage]:
    """Records as single messages, as an unbatched topic stores them (each stamped
    with its index in the batch)."""
    if stamp is not None and (first_index < 0 or first_index + len(recs) > stamp.count):
        raise ValueError("outside the batch")
    prefix = None if stamp is None else f"{stamp.producer_id}/{stamp.epoch}/{stamp.first_seq}/"
    return [
        entry_format.encode_record(
            r,
            None if prefix is None else f"{prefix}{stamp.count}/{first_index + i}",  # type: ignore[union-attr]
        )
        for i, r in enumerate(recs)
    ]


@dataclass
class Decoded:
    """What reading one single-message entry gives, in the terms of these tests."""

    count: int
    max_timestamp: int
    record: Record | None  # a plain message's record
    batch: bytes | None  # a kafka-format message's batch (at offset 0)
    stamp: ProducerStamp | None
    anomalies: tuple[str, ...]


def decode(msg: PulsarMessage) -> Decoded:
    entry = entries.decode(StoredEntry(msg.position, "", 0, PUBLISH_TIME, 1, msg), 0)
    stamp = entry.stamps[0][0] if entry.stamps else None
    kafka = msg.properties.get(P_ENTRY) == "batch" and entry_format.whole_batch(msg.payload)
    return Decoded(
        entry.count,
        entry.max_timestamp,
        None if kafka else next(iter_batches(entry.data)),
        entry.data if kafka else None,
        stamp,
        entry.anomalies,
    )


def through_pulsar(msg: OutgoingMessage) -> PulsarMessage:
    """What a reader gets back: Pulsar's C++ client hands properties back as a
    sorted map, an absent partition key as "", and unset event time as 0."""
    return PulsarMessage(
        position=AT,
        payload=msg.payload or b"",
        null_value=msg.payload is None,
        properties=dict(sorted(msg.properties.items())),
        partition_key=msg.partition_key or "",
        event_time=msg.event_time or 0,
        publish_time=PUBLISH_TIME,
    )


keys = st.one_of(st.none(), st.binary(max_size=16), st.text(max_size=8).map(str.encode))
header_keys = st.one_of(st.text(max_size=6), st.sampled_from(["a", "b", "__kafka.x"]))
header_values = st.one_of(st.none(), st.binary(max_size=8), st.text(max_size=6).map(str.encode))
records = st.builds(
    Record,
    offset=st.just(0),
    timestamp=st.one_of(st.integers(-1, 0), st.integers(1, 2**43)),
    key=keys,
    value=st.one_of(st.none(), st.binary(max_size=64)),
    headers=st.lists(st.tuples(header_keys, header_values), max_size=4).map(tuple),
)


@settings(max_examples=500, deadline=None)
@given(record=records)
def test_every_record_roundtrips_exactly(record: Record) -> None:
    [msg] = encode_records([record])
    assert entry_format.decode_record(through_pulsar(msg)) == record
    entry = decode(through_pulsar(msg))
    assert entry.count == 1 and entry.record == record and entry.batch is None


def test_plain_record_looks_native_to_pulsar() -> None:
    record = Record(0, 1234, b"user-1", b"hello", (("a", b"1"), ("b", b"2")))
    [msg] = encode_records([record])
    assert msg.partition_key == "user-1"
    assert msg.properties == {"a": "1", "b": "2"}
    assert msg.event_time == 1234
    assert msg.payload == b"hello"


def test_binary_key_is_base64_and_marked() -> None:
    [msg] = encode_records([Record(0, 5, b"\xff\x00", b"v")])
    assert msg.partition_key == base64.b64encode(b"\xff\x00").decode()
    assert msg.properties[P_KEY] == "b64"


def test_repeated_headers_keep_order_and_plain_first_value() -> None:
    record = Record(0, 5, None, b"v", (("z", b"1"), ("z", b"2"), ("a", b"\xff")))
    [msg] = encode_records([record])
    assert msg.properties["z"] == "1"
    assert json.loads(msg.properties[P_HEADERS])[1] == ["z", base64.b64encode(b"2").decode()]


def test_null_value_is_pulsar_null() -> None:
    [msg] = encode_records([Record(0, 5, b"k", None)])
    assert msg.payload is None


def test_pulsar_native_message_becomes_a_record() -> None:
    native = PulsarMessage(AT, b"payload", False, {"trace": "abc"}, "key-1", 0, PUBLISH_TIME)
    record = entry_format.decode_record(native)
    assert record == Record(0, PUBLISH_TIME, b"key-1", b"payload", (("trace", b"abc"),))


def test_kafka_format_is_the_batch_verbatim_and_counts_its_records() -> None:
    batch = build_batch(
        [Record(0, 10, b"k", b"v"), Record(1, 20, None, b"w")],
        producer_id=9,
        producer_epoch=1,
        base_sequence=4,
    )
    msg = entry_format.encode_batch(batch, read_header(batch))
    entry = decode(through_pulsar(msg))
    # Verbatim but for the leader epoch, which Kafka's leader stamps too (outside the CRC).
    assert entry.batch == with_leader_epoch(batch, BATCH_EPOCH)
    assert entry.count == 2 and entry.max_timestamp == 20
    assert entry.stamp == ProducerStamp(9, 1, 4, 2, index=1)  # the whole batch
    assert entry.anomalies == ()


def test_producer_stamp_rides_on_every_unbatched_message() -> None:
    """Unbatched, each record is an entry of its own and Pulsar may store a prefix
    of a batch's entries: each message says how far it got."""
    recs = [Record(0, 5, None, b"a"), Record(1, 5, None, b"b")]
    first, second = encode_records(recs, ProducerStamp(7, 0, 10, 2))
    assert decode(through_pulsar(first)).stamp == ProducerStamp(7, 0, 10, 2, 0)
    assert decode(through_pulsar(second)).stamp == ProducerStamp(7, 0, 10, 2, 1)
    assert first.properties[P_PRODUCER] == "7/0/10/2/0"  # compact: it is on every message
    assert entry_format.decode_record(through_pulsar(first)).headers == ()


def test_formats_are_named_as_configured() -> None:
    assert EntryFormat("kafka") is EntryFormat.KAFKA and EntryFormat("pulsar") is EntryFormat.PULSAR


# --- idempotence stamps: a partly stored batch is recognisable ---------------------------


@settings(max_examples=300, deadline=None)
@given(
    recs=st.lists(records, min_size=1, max_size=5),
    producer_id=st.integers(0, 2**63 - 1),
    epoch=st.integers(0, 2**15 - 1),
    first_seq=st.integers(0, 2**31 - 1),
    first_index=st.integers(0, 5),
    more=st.integers(0, 3),
)
def test_records_and_stamps_roundtrip_including_a_suffix_of_the_batch(
    recs: list[Record], producer_id: int, epoch: int, first_seq: int, first_index: int, more: int
) -> None:
    """A retry that completes a partly stored batch writes records k..n-1; each
    message read back names its own position, so the log shows how far it got."""
    count = first_index + len(recs) + more
    batch = ProducerStamp(producer_id, epoch, first_seq, count)
    msgs = encode_records(recs, batch, first_index)
    for i, (record, msg) in enumerate(zip(recs, msgs, strict=True)):
        entry = decode(through_pulsar(msg))
        assert entry.record == record and entry.count == 1
        assert entry.stamp == ProducerStamp(producer_id, epoch, first_seq, count, first_index + i)
        assert entry.anomalies == ()


def test_legacy_four_field_stamp_means_the_whole_batch() -> None:
    """Older kop stamped the first message only, for the whole batch; those topics
    must still rebuild duplicate detection."""
    entry = decode(native({P_PRODUCER: "7/0/10/3"}))
    assert entry.stamp == ProducerStamp(7, 0, 10, 3, index=2)
    assert entry.anomalies == () and entry.record is not None and entry.record.headers == ()


@pytest.mark.parametrize(("first_index", "n"), [(-1, 1), (0, 4), (2, 2)])
def test_stamp_indices_outside_the_batch_are_refused(first_index: int, n: int) -> None:
    """Writing a stamp the reader would reject would silently lose duplicate detection."""
    recs = [Record(0, 5, None, b"v")] * n
    with pytest.raises(ValueError):
        encode_records(recs, ProducerStamp(1, 0, 0, 3), first_index)


# --- messages kop did not write: never raise, documented fallbacks ----------------------


def native(
    props: dict[str, str],
    payload: bytes = b"v",
    partition_key: str = "",
    event_time: int = 0,
) -> PulsarMessage:
    """A message as a Pulsar application (not kop) might have written it."""
    return PulsarMessage(AT, payload, False, props, partition_key, event_time, PUBLISH_TIME)


RESERVED_NAMES = [P_ENTRY, P_KEY, P_HEADERS, P_TS, P_PRODUCER]
WELL_FORMED = {
    P_ENTRY: ["batch"],
    P_KEY: ["b64", "empty"],
    P_HEADERS: ['[["a", "YQ=="], ["b", null]]', "[]"],
    P_TS: ["-1", "0", "12"],
    P_PRODUCER: ["1/0/5/3/2", "1/0/5/3"],
}


stored_messages = st.builds(
    PulsarMessage,
    position=st.just(AT),
    payload=st.one_of(st.binary(max_size=80), batch_payloads),
    null_value=st.booleans(),
    properties=st.builds(
        lambda plain, reserved: {**plain, **reserved},
        st.dictionaries(
            st.text(max_size=5).filter(lambda k: not k.startswith("__kafka.")),
            st.text(max_size=5),
            max_size=3,
        ),
        st.fixed_dictionaries(
            {},
            optional={
                name: st.one_of(st.text(max_size=12), st.sampled_from(values))
                for name, values in WELL_FORMED.items()
            },
        ),
    ),
    partition_key=st.one_of(
        st.just(""),
        st.text(max_size=8),
        st.binary(min_size=1, max_size=8).map(lambda b: base64.b64encode(b).decode()),
    ),
    event_time=st.one_of(st.just(0), st.integers(1, 2**64 - 1)),
    publish_time=st.just(PUBLISH_TIME),
)


@settings(max_examples=1000, deadline=None)
@given(msg=stored_messages)
def test_any_message_decodes_to_a_servable_entry(msg: PulsarMessage) -> None:
    """No message can stop a partition: decode never raises, and what it returns
    can be served to a Kafka consumer, with malformed properties visible as headers
    and well-formed ones hidden."""
    entry = decode(msg)
    assert set(entry.anomalies) <= set(RESERVED_NAMES) & set(msg.properties)
    assert list(entry.anomalies) == sorted(set(entry.anomalies))
    assert entry.count >= 1
    if entry.batch is not None:
        assert msg.properties[P_ENTRY] == "batch"
        assert entry.batch == with_leader_epoch(with_base_offset(msg.payload, 0), BATCH_EPOCH)
        assert entry.record is None and entry.anomalies == ()
        assert entry.count == read_header(msg.payload).record_count
        return
    record = entry.record
    assert record is not None and entry.count == 1
    assert entry.max_timestamp == record.timestamp and -(2**63) <= record.timestamp < 2**63
    assert entry_format.decode_record(msg) == record
    shown = sorted((k, v) for k, v in record.headers if k.startswith("__kafka."))
    assert shown == sorted((k, msg.properties[k].encode()) for k in entry.anomalies)
    if entry.stamp is not None:
        assert 0 <= entry.stamp.index < entry.stamp.count
    build_batch([record])  # encodable for a Fetch response


@pytest.mark.parametrize("bad", ["abc", "", "1.5", str(2**63)])
def test_bad_timestamp_property_falls_back_to_event_time_then_publish_time(bad: str) -> None:
    with_event_time = decode(native({P_TS: bad, "a": "1"}, event_time=1234))
    assert with_event_time.record == Record(
        0, 1234, None, b"v", ((P_TS, bad.encode()), ("a", b"1"))
    )
    assert with_event_time.max_timestamp == 1234 and with_event_time.anomalies == (P_TS,)
    without = entry_format.decode_record(native({P_TS: bad}))
    assert without.timestamp == PUBLISH_TIME and without.headers == ((P_TS, bad.encode()),)


@pytest.mark.parametrize(
    ("mode", "partition_key", "key"),
    [
        ("b64", "not base64!", b"not base64!"),
        ("b64", "QQ", b"QQ"),  # missing padding
        ("b64", "", None),
        ("hex", "k1", b"k1"),
        ("empty", "k1", b"k1"),  # kop writes `empty` only without a partition key
    ],
)
def test_bad_key_property_serves_the_partition_key(
    mode: str, partition_key: str, key: bytes | None
) -> None:
    entry = decode(native({P_KEY: mode}, partition_key=partition_key))
    assert entry.record is not None and entry.record.key == key
    assert entry.record.headers == ((P_KEY, mode.encode()),)
    assert entry.anomalies == (P_KEY,)


@pytest.mark.parametrize(
    "bad",
    [*MALFORMED_HEADERS, "[" * 100_000],
)
def test_bad_headers_property_serves_the_plain_properties(bad: str) -> None:
    entry = decode(native({P_HEADERS: bad, "b": "2", "a": "1", P_KEY: "empty"}))
    assert entry.record is not None
    assert entry.record.headers == ((P_HEADERS, bad.encode()), ("a", b"1"), ("b", b"2"))
    assert entry.record.key == b""  # the other reserved properties still mean what they say
    assert entry.anomalies == (P_HEADERS,)


def _with_count(count: int) -> bytes:
    data = bytearray(BATCH)
    data[57:61] = count.to_bytes(4, "big", signed=True)
    return bytes(data)


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("batch", BATCH[:30]),
        ("batch", BATCH[:16] + b"\x01" + BATCH[17:]),  # magic 1
        ("batch", _with_count(0)),
        ("batch", _with_count(-1)),
        ("batch", _with_count(3)),  # disagrees with the last offset delta
        ("batch", BATCH + b"x"),  # not one whole batch
        ("zip", BATCH),  # unknown entry kind
    ],
)
def test_bad_batch_is_served_as_one_plain_record(kind: str, payload: bytes) -> None:
    entry = decode(native({P_ENTRY: kind, "a": "1"}, payload=payload))
    assert entry.count == 1 and entry.batch is None and entry.stamp is None
    assert entry.record == Record(
        0, PUBLISH_TIME, None, payload, ((P_ENTRY, kind.encode()), ("a", b"1"))
    )
    assert entry.anomalies == (P_ENTRY,)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "x",
        "1/2/3",
        "1/0/5/3/0/9",
        "a/b/c/d/e",
        "1/0/5/3/3",  # index beyond the batch
        "1/0/5/3/-1",
        "1/0/5/0",  # empty batch
        "-1/0/5/3/0",  # not an idempotent producer
        f"1/0/{2**31}/3/0",  # sequence beyond int32
        f"1/{2**15}/5/3/0",  # epoch beyond int16
    ],
)
def test_bad_producer_property_means_no_stamp(bad: str) -> None:
    entry = decode(native({P_PRODUCER: bad}))
    assert entry.stamp is None and entry.anomalies == (P_PRODUCER,)
    assert entry.record is not None and entry.record.headers == ((P_PRODUCER, bad.encode()),)


def test_bad_property_beside_exact_headers_follows_them() -> None:
    [msg] = encode_records([Record(0, -1, None, b"v", (("z", b"\xff"), ("a", None)))])
    stored = through_pulsar(msg)
    stored.properties[P_PRODUCER] = "junk"
    entry = decode(stored)
    assert entry.record == Record(
        0, -1, None, b"v", (("z", b"\xff"), ("a", None), (P_PRODUCER, b"junk"))
    )
    assert entry.anomalies == (P_PRODUCER,)


def test_several_bad_properties_are_all_named() -> None:
    entry = decode(native({P_TS: "x", P_KEY: "x", P_PRODUCER: "x"}, event_time=7))
    assert entry.anomalies == (P_KEY, P_PRODUCER, P_TS)
    assert entry.record == Record(
        0, 7, None, b"v", ((P_KEY, b"x"), (P_PRODUCER, b"x"), (P_TS, b"x"))
    )


def test_unknown_reserved_names_stay_hidden() -> None:
    """A newer kop may add reserved properties; they are not user headers."""
    entry = decode(native({"__kafka.future": "1", "a": "1"}))
    assert entry.record is not None and entry.record.headers == (("a", b"1"),)
    assert entry.anomalies == ()


def test_event_time_beyond_int64_is_treated_as_unset() -> None:
    """Pulsar's event time is unsigned; a Kafka timestamp is int64."""
    assert entry_format.decode_record(native({}, event_time=2**64 - 1)).timestamp == PUBLISH_TIME
