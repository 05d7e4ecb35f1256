"""Rewriting a record batch as Kafka's broker does when it validates one: its
timestamp type and max timestamp (LogAppendTime stamps the append time;
CreateTime clears a type a client claimed), and its codec (a topic's
compression.type). The CRC, which covers all of it, is computed again."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import crc32c
from aiokafka.codec import lz4_encode, snappy_encode, zstd_encode

from kop.protocol.records import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    MAX_UNCOMPRESSED_BYTES,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    read_header,
    records_section,
)

_CRC = struct.Struct(">I")
_CRC_AT = 17
_ATTRIBUTES = struct.Struct(">h")
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP = struct.Struct(">q")
_MAX_TIMESTAMP_AT = 35
_LENGTH = struct.Struct(">i")
_LENGTH_AT = 8
_LOG_OVERHEAD = 12


def _gzip(data: bytes, level: int | None) -> bytes:
    """Kafka's level -1 is Deflater's default."""
    c = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


# Kafka's codec ids: the compressor at a level (None: the codec's default).
_ENCODERS: dict[int, Callable[[bytes, int | None], bytes]] = {
    1: _gzip,
    2: lambda data, _level: snappy_encode(data),
    3: lambda data, level: lz4_encode(data, 9 if level is None else level),
    4: lambda data, level: zstd_encode(data, level),
}


def stamp(batch: bytes, *, log_append_time: bool, max_timestamp: int) -> tuple[BatchHeader, bytes]:
    """The batch with the timestamp type bit set (LogAppendTime) or cleared, and
    `max_timestamp` (for LogAppendTime the append time, which every record then
    reads as its timestamp)."""
    head = read_header(batch)
    out = bytearray(batch)
    attributes = head.attributes & ~TIMESTAMP_TYPE_MASK
    if log_append_time:
        attributes |= TIMESTAMP_TYPE_MASK
    _ATTRIBUTES.pack_into(out, _ATTRIBUTES_AT, attributes)
    _MAX_TIMESTAMP.pack_into(out, _MAX_TIMESTAMP_AT, max_timestamp)
    _CRC.pack_into(out, _CRC_AT, crc32c.crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    data = bytes(out)
    return read_header(data), data


def with_codec(
    batch: bytes, codec: int, level: int | None = None, limit: int = MAX_UNCOMPRESSED_BYTES
) -> tuple[BatchHeader, bytes]:
    """The batch with its records in `codec` (0: uncompressed), as Kafka's broker
    writes it: compressed even where that does not make it smaller. Raises
    KafkaError when the records do not decompress within `limit` bytes."""
    head = read_header(batch)
    section = records_section(batch, head, limit)
    body = section if codec == 0 else _ENCODERS[codec](section, level)
    out = bytearray(batch[:HEADER_SIZE]) + body
    _LENGTH.pack_into(out, _LENGTH_AT, len(out) - _LOG_OVERHEAD)
    _ATTRIBUTES.pack_into(out, _ATTRIBUTES_AT, (head.attributes & ~COMPRESSION_MASK) | codec)
    _CRC.pack_into(out, _CRC_AT, crc32c.crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    data = bytes(out)
    return read_header(data), data


def as_log_append_time(records: bytes) -> bytes:
    """Concatenated batches as a LogAppendTime topic serves them: a batch whose
    records all carry one time (kop wrote them at that append time, in the `pulsar`
    entry format, which keeps times per record) is marked LogAppendTime; others
    are left as they are."""
    out: list[bytes] = []
    pos = 0
    changed = False
    while pos + HEADER_SIZE <= len(records):
        head = read_header(records, pos)
        batch = records[pos : pos + head.length]
        stamped = head.attributes & TIMESTAMP_TYPE_MASK
        if not stamped and head.base_timestamp == head.max_timestamp:
            batch = stamp(batch, log_append_time=True, max_timestamp=head.max_timestamp)[1]
            changed = True
        out.append(batch)
        pos += head.length
    if not changed:
        return records
    out.append(records[pos:])
    return b"".join(out)


_PRODUCER = struct.Struct(">qhi")  # producer id, producer epoch, base sequence
_PRODUCER_AT = 43


def as_transactional(data: bytes, producer_id: int, epoch: int, base_sequence: int) -> bytes:
    """Batches rebuilt from stored records (the `pulsar` entry format) given back their
    transactional producer: id, epoch, sequence and the transactional bit, so that a
    `read_committed` consumer skips them when their transaction aborted, as it skips
    the producer's own batches. Each batch's sequence follows the one before it."""
    out = bytearray(data)
    pos = 0
    while pos + HEADER_SIZE <= len(out):
        head = read_header(memoryview(out), pos)
        _PRODUCER.pack_into(out, pos + _PRODUCER_AT, producer_id, epoch, base_sequence)
        _ATTRIBUTES.pack_into(out, pos + _ATTRIBUTES_AT, head.attributes | TRANSACTIONAL_MASK)
        end = pos + head.length
        crc = crc32c.crc32c(memoryview(out)[pos + _ATTRIBUTES_AT : end])
        _CRC.pack_into(out, pos + _CRC_AT, crc)
        base_sequence += head.record_count
        pos = end
    return bytes(out)
