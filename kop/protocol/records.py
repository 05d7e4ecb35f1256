"""Kafka record batches (magic v2): split, validate, read, build, re-base.

Header checks and CRC32C are done here on raw bytes so the `kafka` entry
format never decodes records; decoding and building use aiokafka's C record
implementation (see docs/decisions.md). Decompression is kop's own, bounded
(`kop.protocol.compression`): a batch that would inflate past the bound is
MESSAGE_TOO_LARGE, one that does not decompress CORRUPT_MESSAGE.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import crc32c
from aiokafka.record.default_records import (
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
    _DefaultRecordBatchBuilderPy,
)

from kop.protocol import compress, compression
from kop.protocol.errors import ErrorCode, KafkaError

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes,
# lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch,
# baseSequence, recordCount
_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT32 = struct.Struct(">i")  # a batch's length (at byte 8), its record count (last)
HEADER_SIZE = _HEADER.size  # 61
_LOG_OVERHEAD = 12  # baseOffset + batchLength precede what batchLength counts
_CRC_START = 21  # CRC covers attributes .. end
_BASE_OFFSET = struct.Struct(">q")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23
_CRC = struct.Struct(">I")
_CRC_AT = 17

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1

# What a batch may decompress to unless the caller says otherwise (config:
# `max_uncompressed_batch_bytes`, docs/decisions.md D3).
MAX_UNCOMPRESSED_BYTES = 16 << 20
# aiokafka's C reader reads a header's key and value lengths before it checks them
# against the end of its buffer: up to 10 bytes past it for each varint, two per
# header before a check stops it. It is handed a buffer with this much slack after
# the records it may read, so that read never leaves memory kop owns.
_READER_SLACK = 32
_ATTRIBUTES = struct.Struct(">h")
_ATTRIBUTES_AT = 21

Header = tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    length: int  # whole batch, including the 12-byte log overhead
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)


@dataclass(frozen=True, slots=True)
class Record:
    """One Kafka record, in the form both entry formats convert to and from."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


def read_header(batch: bytes | memoryview, pos: int = 0) -> BatchHeader:
    if len(batch) - pos < HEADER_SIZE:
        raise KafkaError(ErrorCode.corrupt_message, "record batch shorter than its header")
    (base, blen, _epoch, magic, crc, attrs, lod, bts, mts, pid, pep, bseq, count) = (
        _HEADER.unpack_from(batch, pos)
    )
    return BatchHeader(
        base, blen + _LOG_OVERHEAD, magic, crc, attrs, lod, bts, mts, pid, pep, bseq, count
    )


def split_batches(data: bytes, *, max_batch_bytes: int) -> list[tuple[BatchHeader, bytes]]:
    """Split a produce payload into validated batches (magic, sizes, CRC32C, counts)."""
    out: list[tuple[BatchHeader, bytes]] = []
    view = memoryview(data)
    pos = 0
    while pos < len(data):
        if len(data) - pos < HEADER_SIZE:
            raise KafkaError(ErrorCode.corrupt_message, "truncated record batch")
        if data[pos + 16] != 2:  # Produce v3+ carries magic 2 only; Kafka says INVALID_RECORD
            raise KafkaError(
                ErrorCode.invalid_record,
                f"record batch magic {data[pos + 16]} in a Produce v3+; only magic 2 is allowed",
            )
        head = read_header(view, pos)
        if head.length > max_batch_bytes:
            raise KafkaError(
                ErrorCode.message_too_large,
                f"record batch of {head.length} bytes exceeds max.message.bytes {max_batch_bytes}",
            )
        if head.length < HEADER_SIZE or pos + head.length > len(data):
            raise KafkaError(ErrorCode.corrupt_message, "record batch length is inconsistent")
        whole = pos == 0 and head.length == len(data) and isinstance(data, bytes)
        # One batch, as clients send per partition: the payload itself, not a copy.
        batch = data if whole else bytes(view[pos : pos + head.length])
        if crc32c.crc32c(view[pos + _CRC_START : pos + head.length]) != head.crc:
            raise KafkaError(ErrorCode.corrupt_message, "record batch CRC32C mismatch")
        if head.record_count != head.last_offset_delta + 1 or head.record_count <= 0:
            raise KafkaError(ErrorCode.corrupt_message, "record count disagrees with offsets")
        out.append((head, batch))
        pos += head.length
    if not out:
        raise KafkaError(ErrorCode.corrupt_message, "empty record set")
    return out


def iter_records(
    batch: bytes,
    base_offset: int | None = None,
    *,
    limit: int = MAX_UNCOMPRESSED_BYTES,
    create_time: bool = False,
) -> Iterator[Record]:
    """Decode a batch's records; `base_offset` overrides the one stored in the batch.
    `create_time` reads a LogAppendTime batch as CreateTime (each record its own
    time). Raises KafkaError: MESSAGE_TOO_LARGE when the records decompress past
    `limit`, CORRUPT_MESSAGE when they do not decode."""
    head = read_header(batch)
    base = head.base_offset if base_offset is None else base_offset
    reader = _readable(batch, head, limit, create_time)
    try:
        for r in DefaultRecordBatch(reader):
            yield Record(
                offset=base + (r.offset - head.base_offset),
                timestamp=r.timestamp,
                key=None if r.key is None else bytes(r.key),
                value=None if r.value is None else bytes(r.value),
                headers=tuple((k, None if v is None else bytes(v)) for k, v in r.headers),
            )
    except Exception as exc:
        raise KafkaError(ErrorCode.corrupt_message, f"undecodable record batch: {exc}") from exc


def check_records(batch: bytes, limit: int = MAX_UNCOMPRESSED_BYTES) -> None:
    """What `iter_records` refuses, refused (the same KafkaErrors), without making a
    Record of each: the `kafka` format stores a batch as it came and only needs to
    know its records decode."""
    reader = _readable(batch, read_header(batch), limit, False)
    try:
        for _ in DefaultRecordBatch(reader):
            pass
    except Exception as exc:
        raise KafkaError(ErrorCode.corrupt_message, f"undecodable record batch: {exc}") from exc


def _readable(batch: bytes, head: BatchHeader, limit: int, create_time: bool) -> memoryview:
    """The batch as aiokafka's C reader may read it: its records decompressed
    (bounded), the codec bits cleared, `_READER_SLACK` zero bytes after the end."""
    section = _section(batch, head, limit)
    end = HEADER_SIZE + len(section)
    buf = bytearray(end + _READER_SLACK)
    buf[:HEADER_SIZE] = memoryview(batch)[:HEADER_SIZE]
    buf[HEADER_SIZE:end] = section
    attributes = head.attributes & ~COMPRESSION_MASK
    if create_time:
        attributes &= ~TIMESTAMP_TYPE_MASK
    _ATTRIBUTES.pack_into(buf, _ATTRIBUTES_AT, attributes)
    return memoryview(buf)[:end]


def iter_batches(data: bytes) -> Iterator[Record]:
    """Every record of concatenated batches (a fetch response's records)."""
    pos = 0
    while pos + HEADER_SIZE <= len(data):
        length = read_header(data, pos).length
        yield from iter_records(data[pos : pos + length])
        pos += length


def build_batch(
    records: Sequence[Record],
    *,
    compression: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    last_offset: int | None = None,
    transactional: bool = False,
) -> bytes:
    """Build one batch whose base offset is the first record's offset; offsets must
    be ascending (gaps allowed). `last_offset` past the last record's makes the batch
    span a gap after it, as Kafka's compaction leaves one: a consumer's next fetch
    then starts after the gap instead of asking for it again."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    # aiokafka's C builder takes a first timestamp of -1 for "none yet" and bases the
    # batch on the next record's, so a -1 would be served as that; its Python twin
    # writes what it is given.
    make = DefaultRecordBatchBuilder if records[0].timestamp != -1 else _DefaultRecordBatchBuilderPy
    builder = make(
        2, compression, int(transactional), producer_id, producer_epoch, base_sequence, 1 << 62
    )
    base = records[0].offset
    for r in records:
        builder.append(r.offset - base, r.timestamp, r.key, r.value, list(r.headers))
    out = builder.build()
    _BASE_OFFSET.pack_into(out, 0, base)
    if last_offset is not None and last_offset > records[-1].offset:
        _LAST_OFFSET_DELTA.pack_into(out, _LAST_OFFSET_DELTA_AT, last_offset - base)
        _CRC.pack_into(out, _CRC_AT, crc32c.crc32c(memoryview(out)[_CRC_START:]))
    return bytes(out)


def null_batch(base_offset: int, count: int, offsets: int, timestamp: int) -> bytes:
    """`count` records with no key, value or headers, all at `timestamp`, as
    `build_batch` writes them, in a batch spanning `offsets` (>= `count`) offsets:
    those past its records are a gap, as compaction leaves one. Written directly,
    without a Record per record (kop_native's `write_null_batch` is its twin)."""
    if not 0 < count <= offsets <= _INT32_MAX:
        raise ValueError(f"a null batch of {count} records over {offsets} offsets")
    body = b"".join(map(_NULL_RECORDS.__getitem__, range(min(count, _CACHED_NULLS))))
    if count > _CACHED_NULLS:
        body += b"".join(_null_record(i) for i in range(_CACHED_NULLS, count))
    return _plain_batch(base_offset, offsets, timestamp, count, body)


def gap_batch(base_offset: int, offsets: int) -> bytes:
    """A batch of no records spanning `offsets` offsets from `base_offset`: what a
    compacted log serves where compaction removed every record up to its end. Kafka's
    cleaner leaves such empty batches too; clients take them and move on to the
    offset after (a fetch that returned nothing would be asked again, for ever)."""
    if not 0 < offsets <= _INT32_MAX:
        raise ValueError(f"a gap of {offsets} offsets")
    return _plain_batch(base_offset, offsets, -1, 0, b"")


def _plain_batch(base_offset: int, offsets: int, timestamp: int, count: int, body: bytes) -> bytes:
    """An uncompressed batch of no producer holding `count` records (`body`) at one
    `timestamp`, spanning `offsets` offsets; its CRC computed."""
    batch = bytearray(HEADER_SIZE) + body
    _HEADER.pack_into(
        batch, 0, base_offset, len(batch) - _LOG_OVERHEAD, -1, 2, 0, 0, offsets - 1,
        timestamp, timestamp, NO_PRODUCER_ID, -1, NO_SEQUENCE, count,
    )  # fmt: skip
    struct.pack_into(">I", batch, 17, crc32c.crc32c(memoryview(batch)[_CRC_START:]))
    return bytes(batch)


def _null_record(offset_delta: int) -> bytes:
    delta = uvarint(offset_delta << 1)
    # length, attributes 0, timestamp delta 0, offset delta, null key, null value, 0 headers
    return uvarint((5 + len(delta)) << 1) + b"\x00\x00" + delta + b"\x01\x01\x00"


def uvarint(v: int) -> bytes:
    """An unsigned varint as Kafka writes lengths and counts (zigzag first for signed)."""
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


_INT32_MAX = (1 << 31) - 1
_CACHED_NULLS = 4096
_NULL_RECORDS = [_null_record(i) for i in range(_CACHED_NULLS)]


def records_section(batch: bytes, head: BatchHeader, limit: int = MAX_UNCOMPRESSED_BYTES) -> bytes:
    """The batch's records, decompressed: what follows the header, as a sequence of
    length-prefixed records. Raises KafkaError: MESSAGE_TOO_LARGE when they would
    decompress to more than `limit` bytes (checked while inflating, never after),
    CORRUPT_MESSAGE when they do not decompress."""
    return bytes(_section(batch, head, limit))


def _section(batch: bytes, head: BatchHeader, limit: int) -> bytes | memoryview:
    body = memoryview(batch)[HEADER_SIZE:]
    codec = head.compression
    if codec == 0:
        return body
    decompress = _CODECS.get(codec)
    if decompress is None:
        raise KafkaError(ErrorCode.corrupt_message, f"unknown compression codec {codec}")
    try:
        return decompress(body, limit)
    except compression.TooLarge as exc:
        raise KafkaError(
            ErrorCode.message_too_large,
            f"record batch decompresses to more than {limit} bytes (max_uncompressed_batch_bytes)",
        ) from exc
    except compression.DecompressionFailed as exc:
        raise KafkaError(ErrorCode.corrupt_message, f"undecodable record batch: {exc}") from exc


_CODECS: dict[int, Callable[[memoryview, int], bytes]] = {
    1: compression.gzip,
    2: compression.kafka_snappy,
    3: compression.lz4_frame,
    4: compression.zstd,
}


def compressed(data: bytes, codec: int) -> bytes:
    """Concatenated batches with every uncompressed one compressed in `codec` (0:
    as they are); a batch already compressed keeps its own codec."""
    if codec == 0:
        return data
    out: list[bytes] = []
    pos = 0
    while pos + HEADER_SIZE <= len(data):
        head = read_header(data, pos)
        batch = data[pos : pos + head.length]
        out.append(batch if head.compression else compress_batch(batch, head, codec))
        pos += head.length
    return b"".join(out)


def compress_batch(batch: bytes, head: BatchHeader, codec: int) -> bytes:
    """An uncompressed batch with its records compressed in `codec`: the same
    header but for the codec bits, its length and its CRC."""
    body = compress.compress(codec, memoryview(batch)[HEADER_SIZE:])
    out = bytearray(HEADER_SIZE + len(body))
    out[:HEADER_SIZE] = batch[:HEADER_SIZE]
    out[HEADER_SIZE:] = body
    struct.pack_into(">i", out, 8, len(out) - _LOG_OVERHEAD)
    _ATTRIBUTES.pack_into(out, _ATTRIBUTES_AT, (head.attributes & ~COMPRESSION_MASK) | codec)
    struct.pack_into(">I", out, 17, crc32c.crc32c(memoryview(out)[_CRC_START:]))
    return bytes(out)


def with_base_offset(batch: bytes, base_offset: int) -> bytes:
    """Re-base a stored batch. The base offset is outside the CRC, so no re-check.
    One copy of the batch (slicing it first would make two)."""
    with memoryview(batch) as view:
        return b"".join((_BASE_OFFSET.pack(base_offset), view[8:]))


def count_records(data: bytes | memoryview) -> int:
    """The records of concatenated batches, by their headers alone (what a fetch gave
    out; a partial batch at the end, as a fetch may end with, counts nothing)."""
    total, pos, size = 0, 0, len(data)
    while pos + HEADER_SIZE <= size:
        length = _INT32.unpack_from(data, pos + 8)[0] + _LOG_OVERHEAD
        if pos + length > size:
            break
        total += _INT32.unpack_from(data, pos + HEADER_SIZE - 4)[0]
        pos += length
    return total


def below(data: bytes, end: int) -> bytes:
    """Of concatenated batches, those that end before offset `end` (a fetch in
    `read_committed` serves nothing at or past the last stable offset)."""
    pos = 0
    while pos + HEADER_SIZE <= len(data):
        head = read_header(data, pos)
        if head.base_offset + head.last_offset_delta >= end:
            break
        pos += head.length
    return data[:pos]
