"""kop's bounded codecs read what Kafka's and Pulsar's clients write, exactly as the
unbounded ones did, and stop at the bound instead of inflating a bomb."""

from __future__ import annotations

import zlib

import cramjam
import kafka.codec
import pytest
from aiokafka import codec as aiokafka_codec
from hypothesis import given, settings
from hypothesis import strategies as st

from kop.protocol import compression
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import Record, build_batch, iter_records, read_header, records_section

# What each client library writes, per Kafka codec.
WRITERS = {
    "gzip": [aiokafka_codec.gzip_encode, kafka.codec.gzip_encode],
    "snappy": [
        aiokafka_codec.snappy_encode,  # xerial blocks, as the Java client
        lambda d: aiokafka_codec.snappy_encode(d, xerial_compatible=False),  # raw
        kafka.codec.snappy_encode,
    ],
    "lz4": [aiokafka_codec.lz4_encode, kafka.codec.lz4_encode],
    "zstd": [aiokafka_codec.zstd_encode, kafka.codec.zstd_encode],
}
READERS = {
    "gzip": compression.gzip,
    "snappy": compression.kafka_snappy,
    "lz4": compression.lz4_frame,
    "zstd": compression.zstd,
}
LIMIT = 1 << 20


@settings(max_examples=50, deadline=None)
@given(data=st.binary(min_size=1, max_size=5000), repeat=st.integers(1, 40))
def test_what_clients_write_reads_back_exactly(data: bytes, repeat: int) -> None:
    payload = data * repeat
    for name, writers in WRITERS.items():
        for write in writers:
            assert READERS[name](write(payload), LIMIT) == payload


@pytest.mark.parametrize("name", list(READERS))
def test_output_of_exactly_the_limit_passes_and_one_byte_more_is_too_large(name: str) -> None:
    payload = b"abc" * 1000
    stream = WRITERS[name][0](payload)
    assert READERS[name](stream, len(payload)) == payload
    with pytest.raises(compression.TooLarge):
        READERS[name](stream, len(payload) - 1)


@pytest.mark.parametrize("name", list(READERS))
def test_a_bomb_stops_at_the_limit(name: str) -> None:
    """1 GiB of zeros (snappy: 64 MiB, its ratio is about 21:1); the streaming codecs
    stop when the bound's buffer is full, cramjam says so with this message, which
    `compression` relies on."""
    size = (64 << 20) if name == "snappy" else (1 << 30)
    stream = WRITERS[name][0](bytes(size))
    with pytest.raises(compression.TooLarge):
        READERS[name](stream, LIMIT)
    if name in ("lz4", "zstd"):
        out = bytearray(LIMIT)
        module = cramjam.lz4 if name == "lz4" else cramjam.zstd
        with pytest.raises(cramjam.DecompressionError, match=compression._FULL):
            module.decompress_into(stream, out)


@pytest.mark.parametrize("name", list(READERS))
def test_damaged_and_truncated_streams_are_undecodable(name: str) -> None:
    stream = WRITERS[name][0](b"hello world " * 100)
    for bad in (stream[: len(stream) // 2], b"garbage" * 3, stream + b"\x01\x02\x03"):
        with pytest.raises(compression.Undecodable):
            READERS[name](bad, LIMIT)


def test_gzip_reads_concatenated_members_and_zero_padding_as_gzip_does() -> None:
    stream = aiokafka_codec.gzip_encode(b"one") + aiokafka_codec.gzip_encode(b"two") + bytes(5)
    assert compression.gzip(stream, LIMIT) == aiokafka_codec.gzip_decode(stream) == b"onetwo"
    assert compression.gzip(b"", LIMIT) == b""


def test_snappy_refuses_a_block_that_states_a_huge_length_before_inflating() -> None:
    """Raw snappy states its length first: 2^32 - 1 is refused without a byte made."""
    stream = b"\xff\xff\xff\xff\x0f" + b"\x00" * 10
    with pytest.raises(compression.TooLarge):
        compression.snappy_raw(stream, LIMIT)
    xerial = b"\x82SNAPPY\x00" + bytes([0, 0, 0, 1, 0, 0, 0, 1]) + b"\x00\x00\x00\x0f" + stream
    with pytest.raises(compression.TooLarge):
        compression.kafka_snappy(xerial, LIMIT)


def test_pulsar_codecs_check_the_declared_size() -> None:
    data = b"pulsar " * 500
    block = bytes(cramjam.lz4.compress_block(data, store_size=False))
    assert compression.lz4_block(block, len(data), LIMIT) == data
    with pytest.raises(compression.TooLarge):
        compression.lz4_block(block, 2**32 - 1, LIMIT)
    with pytest.raises(compression.Undecodable):
        compression.lz4_block(block, len(data) - 1, LIMIT)
    assert compression.zlib_stream(zlib.compress(data), LIMIT) == data
    with pytest.raises(compression.TooLarge):
        compression.zlib_stream(zlib.compress(data), len(data) - 1)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_a_batch_past_the_bound_is_message_too_large(codec: int) -> None:
    records = [Record(i, 1, None, b"x" * 1000) for i in range(100)]
    batch = build_batch(records, compression=codec)
    head = read_header(batch)
    assert len(records_section(batch, head, 200_000)) > 100_000
    with pytest.raises(KafkaError) as err:
        records_section(batch, head, 100_000)
    assert err.value.code == ErrorCode.message_too_large
    with pytest.raises(KafkaError) as err:
        list(iter_records(batch, limit=100_000))
    assert err.value.code == ErrorCode.message_too_large
    assert [r.value for r in iter_records(batch)] == [r.value for r in records]
