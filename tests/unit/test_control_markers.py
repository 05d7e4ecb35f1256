"""Transaction markers (kop/protocol/control.py): what kop writes is what Kafka's
readers take for a control batch (checked with aiokafka's reader, an independent
parser), and reading one back gives the marker written; anything else in a
control batch is refused as corrupt."""

from __future__ import annotations

import pytest
from aiokafka.record.default_records import DefaultRecordBatch
from hypothesis import given
from hypothesis import strategies as st

from kop.entries.formats import encode_batch
from kop.protocol.control import Marker, marker_batch, read_marker
from kop.protocol.errors import KafkaError
from kop.protocol.records import CONTROL_MASK, Record, build_batch, read_header

markers = st.builds(
    Marker,
    commit=st.booleans(),
    producer_id=st.integers(0, 2**63 - 1),
    producer_epoch=st.integers(0, 32767),
    coordinator_epoch=st.integers(-(2**31), 2**31 - 1),
)


@given(marker=markers, timestamp=st.integers(0, 2**50), base=st.integers(0, 2**62))
def test_a_marker_is_a_control_batch_kafka_readers_accept(
    marker: Marker, timestamp: int, base: int
) -> None:
    batch = marker_batch(marker, timestamp, base)
    seen = DefaultRecordBatch(bytearray(batch))
    assert seen.validate_crc()
    assert seen.is_control_batch and seen.is_transactional
    assert (seen.producer_id, seen.producer_epoch, seen.base_sequence) == (
        marker.producer_id, marker.producer_epoch, -1,
    )  # fmt: skip
    assert seen.base_offset == base and seen.first_timestamp == timestamp
    (record,) = list(seen)
    assert bytes(record.key) == bytes([0, 0, 0, 1 if marker.commit else 0])
    assert read_marker(batch) == marker


def test_an_ordinary_batch_is_no_marker() -> None:
    assert read_marker(build_batch([Record(0, 1, b"k", b"v")])) is None


@pytest.mark.parametrize(
    ("key", "value"),
    [(b"\x00\x00\x00\x07", b"\x00\x00\x00\x00\x00\x01"),  # type 7
     (b"\x00\x01\x00\x01", b"\x00\x00\x00\x00\x00\x01"),  # version 1
     (b"\x00\x00", b"\x00\x00\x00\x00\x00\x01"),  # short key
     (b"\x00\x00\x00\x01", None)],  # no value
)  # fmt: skip
def test_a_control_batch_holding_anything_else_is_corrupt(key: bytes, value: bytes | None) -> None:
    batch = bytearray(build_batch([Record(0, 1, key, value)], producer_id=1, producer_epoch=0))
    batch[22] |= CONTROL_MASK  # the attributes' low byte (the CRC is not what is tested)
    with pytest.raises(KafkaError):
        read_marker(bytes(batch))


def test_a_stored_marker_names_its_outcome_for_pulsar_applications() -> None:
    """What a Pulsar consumer filters on (docs/transactions.md): the marker's outcome,
    producer and epoch, without decoding the Kafka batch."""
    for commit, outcome in ((True, "commit"), (False, "abort")):
        batch = marker_batch(Marker(commit, 77, 3, 0), 1_700_000_000_000)
        message = encode_batch(batch, read_header(batch))
        assert message.properties == {"__kafka.entry": "batch", "__kafka.marker": f"{outcome}/77/3"}
    plain = build_batch([Record(0, 1_700_000_000_000, None, b"v")])
    assert encode_batch(plain, read_header(plain)).properties == {"__kafka.entry": "batch"}
