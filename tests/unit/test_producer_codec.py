"""Records come back in their producer's codec (Kafka's `compression.type=producer`):
a `pulsar`-format entry is stored compressed in the Pulsar codec of the producer's
Kafka codec, Pulsar consumers decompress it natively, and kop serves its records
compressed in that Kafka codec again (docs/decisions.md D11)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kop.entries import codec as entries
from kop.entries.formats import EntryFormat
from kop.protocol import compress, compression
from kop.protocol.records import (
    Record,
    build_batch,
    iter_batches,
    read_header,
    split_batches,
)
from kop.pulsar.client import _metadata, stored_entry
from kop.pulsar.codecs import kafka_codec, pulsar_codec
from kop.pulsar.wire import RawEntry, pb
from kop.pulsar.wire.compression import decompress
from kop.storage.types import Position, stored_as

CODECS = st.sampled_from(compress.CODECS)
records = st.lists(
    st.builds(
        Record,
        offset=st.just(0),
        timestamp=st.integers(1, 2**43),
        key=st.one_of(st.none(), st.binary(max_size=8)),
        value=st.one_of(st.none(), st.binary(max_size=300)),
        headers=st.just(()),
    ),
    min_size=1,
    max_size=10,
)


def _numbered(recs: list[Record]) -> list[Record]:
    return [Record(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(recs)]


def _served_batches(data: bytes) -> list[int]:
    """The codec of each batch in a fetch's records."""
    out, pos = [], 0
    while pos < len(data):
        head = read_header(data, pos)
        out.append(head.compression)
        pos += head.length
    return out


@settings(max_examples=60, deadline=None)
@given(recs=records, codec=CODECS, batching=st.booleans(), base=st.integers(0, 2**40))
def test_a_compressed_batch_is_served_in_its_codec(
    recs: list[Record], codec: int, batching: bool, base: int
) -> None:
    """Failed before: the records came back uncompressed (codec 0)."""
    recs = _numbered(recs)
    batch = build_batch(recs, compression=codec)
    head = read_header(batch)
    out = entries.encode(head, batch, EntryFormat.PULSAR, batching, 0, 1 << 20)
    assert {e.codec for e in out} == {codec}
    offset = base
    served: list[Record] = []
    for i, e in enumerate(out):
        got = entries.decode(stored_as(e, Position(1, i), "w", i, 5), offset)
        assert set(_served_batches(got.data)) == {codec}
        split_batches(got.data, max_batch_bytes=1 << 30)  # CRCs hold
        served.extend(iter_batches(got.data))
        offset += got.count
    assert [(r.offset, r.key, r.value) for r in served] == [
        (base + r.offset, r.key, r.value) for r in recs
    ]


def test_an_uncompressed_batch_is_served_uncompressed() -> None:
    recs = _numbered([Record(0, 7, b"k", b"v")] * 3)
    batch = build_batch(recs)
    out = entries.encode(read_header(batch), batch, EntryFormat.PULSAR, True, 0, 1 << 20)
    got = entries.decode(stored_as(out[0], Position(1, 0), "w", 0, 5), 0)
    assert _served_batches(got.data) == [0]


def test_a_kafka_format_batch_keeps_its_own_bytes() -> None:
    batch = build_batch(_numbered([Record(0, 7, b"k", b"v" * 100)] * 3), compression=4)
    out = entries.encode(read_header(batch), batch, EntryFormat.KAFKA, True, 0, 1 << 20)
    assert out[0].codec == 0  # already compressed: not compressed again
    got = entries.decode(stored_as(out[0], Position(1, 0), "w", 0, 5), 0)
    # Byte for byte but the partition leader epoch (bytes 12-15), which kop stamps 0
    # as Kafka's leader does on append; the CRC does not cover it.
    assert got.data[:12] + got.data[16:] == batch[:12] + batch[16:]
    assert got.data[12:16] == (0).to_bytes(4, "big")


@given(codec=st.sampled_from((0, *compress.CODECS)))
def test_the_codec_map_is_one_to_one(codec: int) -> None:
    assert kafka_codec(pulsar_codec(codec)) == codec


def test_gzip_is_stored_as_zlib_and_an_unknown_codec_is_refused() -> None:
    assert pulsar_codec(1) == pb.ZLIB
    with pytest.raises(ValueError):
        pulsar_codec(5)


@settings(max_examples=80, deadline=None)
@given(data=st.binary(min_size=1, max_size=100_000) | st.text(min_size=1).map(str.encode),
       codec=CODECS)  # fmt: skip
def test_kafka_compression_reads_back_with_the_bounded_decompressors(
    data: bytes, codec: int
) -> None:
    readers = {
        1: compression.gzip,
        2: compression.kafka_snappy,
        3: compression.lz4_frame,
        4: compression.zstd,
    }
    assert readers[codec](compress.compress(codec, data), len(data)) == data


@settings(max_examples=80, deadline=None)
@given(layout=st.binary(max_size=100_000), codec=CODECS, count=st.integers(1, 50))
def test_an_entry_is_stored_in_the_pulsar_codec_and_reads_back(
    layout: bytes, codec: int, count: int
) -> None:
    """What a Pulsar consumer does with the entry: decompress by its metadata."""
    from kop.storage.types import OutgoingEntry

    meta, payload = _metadata(OutgoingEntry(batch=layout, count=count, codec=codec))
    assert meta.compression == pulsar_codec(codec)
    assert meta.uncompressed_size == len(layout)
    plain = decompress(meta, payload, 1 << 20)
    assert plain == layout
    back = stored_entry(RawEntry(3, 4, meta, plain))
    assert (back.codec, back.batch, back.count) == (codec, layout, count)


def test_kafka_lz4_is_a_frame_of_independent_blocks_without_content_checksum() -> None:
    """Kafka's Java reader refuses linked blocks (KIP-57)."""
    frame = compress.compress(compress.LZ4, b"x" * 200_000)
    flg = frame[4]
    assert frame[:4] == b"\x04\x22\x4d\x18"
    assert flg & 0x20  # block independence
    assert not flg & 0x04  # no content checksum
