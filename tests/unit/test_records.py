"""Record batches: every codec round-trips; corruption and bad sizes are refused."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import (
    Record,
    build_batch,
    gap_batch,
    iter_records,
    read_header,
    split_batches,
    with_base_offset,
)

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

headers = st.lists(
    st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=16))), max_size=3
)
records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=32)),
        st.one_of(st.none(), st.binary(max_size=256)),
        st.integers(0, 2**41),
        headers,
    ),
    min_size=1,
    max_size=30,
)


def _records(
    raw: list[tuple[bytes | None, bytes | None, int, list[tuple[str, bytes | None]]]], base: int = 0
) -> list[Record]:
    return [Record(base + i, ts, k, v, tuple(h)) for i, (k, v, ts, h) in enumerate(raw)]


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=25, deadline=None)
@given(raw=records, base=st.integers(0, 2**40))
def test_batch_roundtrip_every_codec(codec: str, raw: list, base: int) -> None:  # type: ignore[type-arg]
    recs = _records(raw, base)
    batch = build_batch(
        recs, compression=CODECS[codec], producer_id=42, producer_epoch=3, base_sequence=7
    )
    [(head, stored)] = split_batches(batch, max_batch_bytes=1 << 30)
    assert stored == batch
    assert head.base_offset == base
    assert head.record_count == len(recs)
    assert (head.producer_id, head.producer_epoch, head.base_sequence) == (42, 3, 7)
    assert head.last_sequence == 7 + len(recs) - 1
    assert list(iter_records(batch)) == recs


def test_rebase_keeps_crc_valid_and_moves_offsets() -> None:
    recs = _records([(b"k", b"v", 1000, []), (None, None, 1001, [("h", b"x")])])
    batch = build_batch(recs, compression=4)
    moved = with_base_offset(batch, 500)
    [(head, _)] = split_batches(moved, max_batch_bytes=1 << 20)
    assert head.base_offset == 500
    assert [r.offset for r in iter_records(moved)] == [500, 501]
    assert [r.offset for r in iter_records(batch, base_offset=9)] == [9, 10]


def test_several_batches_split_in_order() -> None:
    a = build_batch(_records([(b"a", b"1", 1, [])]))
    b = build_batch(_records([(b"b", b"2", 2, []), (b"c", b"3", 3, [])]))
    parts = split_batches(a + b, max_batch_bytes=1 << 20)
    assert [h.record_count for h, _ in parts] == [1, 2]


def test_crc_mismatch_is_corrupt() -> None:
    batch = bytearray(build_batch(_records([(b"k", b"value", 5, [])])))
    batch[-1] ^= 0xFF
    with pytest.raises(KafkaError) as info:
        split_batches(bytes(batch), max_batch_bytes=1 << 20)
    assert info.value.code == ErrorCode.corrupt_message


def test_old_magic_is_an_invalid_record_as_kafka_says() -> None:
    # Produce v3+ may only carry magic 2 batches; Kafka 4.3 answers INVALID_RECORD
    # (found by conformance/: kop answered UNSUPPORTED_FOR_MESSAGE_FORMAT).
    batch = bytearray(build_batch(_records([(b"k", b"v", 5, [])])))
    batch[16] = 1
    with pytest.raises(KafkaError) as info:
        split_batches(bytes(batch), max_batch_bytes=1 << 20)
    assert info.value.code == ErrorCode.invalid_record


def test_oversized_batch_is_message_too_large() -> None:
    batch = build_batch(_records([(b"k", b"x" * 5000, 5, [])]))
    with pytest.raises(KafkaError) as info:
        split_batches(batch, max_batch_bytes=1024)
    assert info.value.code == ErrorCode.message_too_large


@pytest.mark.parametrize("cut", [1, 30, 61])
def test_truncated_batch_is_corrupt(cut: int) -> None:
    batch = build_batch(_records([(b"k", b"v" * 100, 5, [])]))
    with pytest.raises(KafkaError) as info:
        split_batches(batch[:-cut], max_batch_bytes=1 << 20)
    assert info.value.code == ErrorCode.corrupt_message


def test_length_field_lying_is_corrupt() -> None:
    batch = bytearray(build_batch(_records([(b"k", b"v", 5, [])])))
    struct.pack_into(">i", batch, 8, 10)
    with pytest.raises(KafkaError):
        split_batches(bytes(batch), max_batch_bytes=1 << 20)


def test_empty_payload_is_corrupt() -> None:
    with pytest.raises(KafkaError):
        split_batches(b"", max_batch_bytes=1 << 20)


def test_header_fields() -> None:
    batch = build_batch(_records([(b"k", b"v", 100, []), (b"k", b"v", 300, [])]))
    head = read_header(batch)
    assert (head.base_timestamp, head.max_timestamp, head.last_offset_delta) == (100, 300, 1)
    assert not head.is_transactional and not head.is_control and head.compression == 0


def test_a_first_timestamp_of_minus_one_is_kept() -> None:
    """aiokafka's C builder reads -1 as "no timestamp yet" and served the record
    with the next one's timestamp."""
    built = build_batch([Record(0, -1, None, b"a"), Record(1, 0, None, b"b")])
    assert [r.timestamp for r in iter_records(built)] == [-1, 0]


@given(base=st.integers(0, 2**62), offsets=st.integers(1, 2**31 - 1))
def test_a_gap_batch_spans_its_offsets_with_no_record(base: int, offsets: int) -> None:
    """What compaction emptied: a valid batch (its CRC checked as clients check it)
    holding no record, whose next offset is past the gap."""
    batch = gap_batch(base, offsets)
    head = read_header(batch)
    assert head.length == len(batch) and crc32c.crc32c(batch[21:]) == head.crc
    assert (head.base_offset, head.last_offset_delta, head.record_count) == (base, offsets - 1, 0)
    assert list(iter_records(batch)) == []
