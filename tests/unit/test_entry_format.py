"""The pulsar entry format: any Kafka record survives the trip through a Pulsar
message exactly, and what a Pulsar application sees is plain where it can be."""

from __future__ import annotations

import base64
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kop.log import entry_format
from kop.log.entry_format import P_HEADERS, P_KEY, EntryFormat, ProducerStamp
from kop.protocol.records import Record, build_batch, read_header
from kop.storage.types import OutgoingMessage
from kop.storage.types import StoredMessage as PulsarMessage

PUBLISH_TIME = 1_700_000_000_000


def through_pulsar(
    msg: OutgoingMessage, position: tuple[int, int, int] = (1, 1, -1)
) -> PulsarMessage:
    """What a reader gets back: Pulsar's C++ client hands properties back as a
    sorted map, an absent partition key as "", and unset event time as 0."""
    return PulsarMessage(
        position=position,
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
    [msg] = entry_format.encode_records([record])
    assert entry_format.decode_record(through_pulsar(msg)) == record
    entry = entry_format.decode(through_pulsar(msg))
    assert entry.count == 1 and entry.record == record and entry.batch is None


def test_plain_record_looks_native_to_pulsar() -> None:
    record = Record(0, 1234, b"user-1", b"hello", (("a", b"1"), ("b", b"2")))
    [msg] = entry_format.encode_records([record])
    assert msg.partition_key == "user-1"
    assert msg.properties == {"a": "1", "b": "2"}
    assert msg.event_time == 1234
    assert msg.payload == b"hello"


def test_binary_key_is_base64_and_marked() -> None:
    [msg] = entry_format.encode_records([Record(0, 5, b"\xff\x00", b"v")])
    assert msg.partition_key == base64.b64encode(b"\xff\x00").decode()
    assert msg.properties[P_KEY] == "b64"


def test_repeated_headers_keep_order_and_plain_first_value() -> None:
    record = Record(0, 5, None, b"v", (("z", b"1"), ("z", b"2"), ("a", b"\xff")))
    [msg] = entry_format.encode_records([record])
    assert msg.properties["z"] == "1"
    assert json.loads(msg.properties[P_HEADERS])[1] == ["z", base64.b64encode(b"2").decode()]


def test_null_value_is_pulsar_null() -> None:
    [msg] = entry_format.encode_records([Record(0, 5, b"k", None)])
    assert msg.payload is None


def test_pulsar_native_message_becomes_a_record() -> None:
    native = PulsarMessage((3, 4, 0), b"payload", False, {"trace": "abc"}, "key-1", 0, PUBLISH_TIME)
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
    entry = entry_format.decode(through_pulsar(msg))
    assert entry.batch == batch and entry.count == 2 and entry.max_timestamp == 20
    assert entry.stamp == ProducerStamp(9, 1, 4, 2)


def test_producer_stamp_rides_on_first_pulsar_message() -> None:
    recs = [Record(0, 5, None, b"a"), Record(1, 5, None, b"b")]
    first, second = entry_format.encode_records(recs, ProducerStamp(7, 0, 10, 2))
    assert entry_format.decode(through_pulsar(first)).stamp == ProducerStamp(7, 0, 10, 2)
    assert entry_format.decode(through_pulsar(second)).stamp is None
    assert entry_format.decode_record(through_pulsar(first)).headers == ()


def test_formats_are_named_as_configured() -> None:
    assert EntryFormat("kafka") is EntryFormat.KAFKA and EntryFormat("pulsar") is EntryFormat.PULSAR
