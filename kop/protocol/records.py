"""Kafka record batches (magic v2): split, validate, read, build, re-base.

Header checks and CRC32C are done here on raw bytes so the `kafka` entry
format never decodes records; decoding and building use aiokafka's C record
implementation with cramjam codecs (see docs/decisions.md).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import crc32c
from aiokafka.codec import gzip_decode, lz4_decode, snappy_decode, zstd_decode
from aiokafka.record.default_records import (
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
    _DefaultRecordBatchBuilderPy,
)

from kop.protocol.errors import ErrorCode, KafkaError

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes,
# lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch,
# baseSequence, recordCount
_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61
_LOG_OVERHEAD = 12  # baseOffset + batchLength precede what batchLength counts
_CRC_START = 21  # CRC covers attributes .. end
_BASE_OFFSET = struct.Struct(">q")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1

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
        batch = bytes(view[pos : pos + head.length])
        if crc32c.crc32c(view[pos + _CRC_START : pos + head.length]) != head.crc:
            raise KafkaError(ErrorCode.corrupt_message, "record batch CRC32C mismatch")
        if head.record_count != head.last_offset_delta + 1 or head.record_count <= 0:
            raise KafkaError(ErrorCode.corrupt_message, "record count disagrees with offsets")
        out.append((head, batch))
        pos += head.length
    if not out:
        raise KafkaError(ErrorCode.corrupt_message, "empty record set")
    return out


def iter_records(batch: bytes, base_offset: int | None = None) -> Iterator[Record]:
    """Decode a batch's records; `base_offset` overrides the one stored in the batch."""
    head = read_header(batch)
    base = head.base_offset if base_offset is None else base_offset
    try:
        for r in DefaultRecordBatch(batch):
            yield Record(
                offset=base + (r.offset - head.base_offset),
                timestamp=r.timestamp,
                key=None if r.key is None else bytes(r.key),
                value=None if r.value is None else bytes(r.value),
                headers=tuple((k, None if v is None else bytes(v)) for k, v in r.headers),
            )
    except KafkaError:
        raise
    except Exception as exc:
        raise KafkaError(ErrorCode.corrupt_message, f"undecodable record batch: {exc}") from exc


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
) -> bytes:
    """Build one batch whose base offset is the first record's offset; offsets must
    be ascending (gaps allowed)."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    # aiokafka's C builder takes a first timestamp of -1 for "none yet" and bases the
    # batch on the next record's, so a -1 would be served as that; its Python twin
    # writes what it is given.
    make = DefaultRecordBatchBuilder if records[0].timestamp != -1 else _DefaultRecordBatchBuilderPy
    builder = make(2, compression, 0, producer_id, producer_epoch, base_sequence, 1 << 62)
    base = records[0].offset
    for r in records:
        builder.append(r.offset - base, r.timestamp, r.key, r.value, list(r.headers))
    out = builder.build()
    _BASE_OFFSET.pack_into(out, 0, base)
    return bytes(out)


def records_section(batch: bytes, head: BatchHeader) -> bytes:
    """The batch's records, decompressed: what follows the header, as a sequence of
    length-prefixed records. Raises KafkaError(CORRUPT_MESSAGE) when it does not
    decompress."""
    body = memoryview(batch)[HEADER_SIZE:]
    codec = head.compression
    try:
        if codec == 0:
            return bytes(body)
        if codec == 1:
            return bytes(gzip_decode(body))
        if codec == 2:
            return bytes(snappy_decode(body.tobytes()))
        if codec == 3:
            return bytes(lz4_decode(body.tobytes()))
        if codec == 4:
            return bytes(zstd_decode(body.tobytes()))
    except Exception as exc:
        raise KafkaError(ErrorCode.corrupt_message, f"undecodable record batch: {exc}") from exc
    raise KafkaError(ErrorCode.corrupt_message, f"unknown compression codec {codec}")


def with_base_offset(batch: bytes, base_offset: int) -> bytes:
    """Re-base a stored batch. The base offset is outside the CRC, so no re-check.
    One copy of the batch (slicing it first would make two)."""
    with memoryview(batch) as view:
        return b"".join((_BASE_OFFSET.pack(base_offset), view[8:]))
