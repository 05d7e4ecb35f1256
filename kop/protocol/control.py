"""Transaction markers: the control batches that end a transaction in a partition's
log (Kafka's EndTransactionMarker). One batch of one record, transactional and
control, under the producer's id and the epoch of the end; the record's key says
commit or abort, its value the coordinator epoch that wrote it. A marker takes an
offset like any record, and consumers skip it."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c

from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import (
    CONTROL_MASK,
    TRANSACTIONAL_MASK,
    Record,
    build_batch,
    iter_records,
    read_header,
)

ABORT, COMMIT = 0, 1
_KEY = struct.Struct(">hh")  # version 0, type
_VALUE = struct.Struct(">hi")  # version 0, coordinator epoch
_ATTRIBUTES_AT = 21
_CRC_START = 21
_CRC_AT = 17


@dataclass(frozen=True, slots=True)
class Marker:
    commit: bool
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


def marker_batch(marker: Marker, timestamp: int, base_offset: int = 0) -> bytes:
    kind = COMMIT if marker.commit else ABORT
    record = Record(
        base_offset, timestamp, _KEY.pack(0, kind), _VALUE.pack(0, marker.coordinator_epoch)
    )
    batch = bytearray(
        build_batch([record], producer_id=marker.producer_id, producer_epoch=marker.producer_epoch)
    )
    struct.pack_into(">h", batch, _ATTRIBUTES_AT, TRANSACTIONAL_MASK | CONTROL_MASK)
    struct.pack_into(">I", batch, _CRC_AT, crc32c.crc32c(memoryview(batch)[_CRC_START:]))
    return bytes(batch)


def read_marker(batch: bytes) -> Marker | None:
    """The marker a control batch holds; None for any other batch. A control batch
    whose record is not a marker of version 0 is CORRUPT_MESSAGE."""
    head = read_header(batch)
    if not head.is_control:
        return None
    records = list(iter_records(batch))
    if len(records) != 1 or records[0].key is None or records[0].value is None:
        raise KafkaError(ErrorCode.corrupt_message, "a control batch holds one marker")
    key, value = records[0].key, records[0].value
    if len(key) != _KEY.size or len(value) < _VALUE.size:
        raise KafkaError(ErrorCode.corrupt_message, "a transaction marker of another size")
    version, kind = _KEY.unpack(key)
    if version != 0 or kind not in (ABORT, COMMIT):
        raise KafkaError(ErrorCode.corrupt_message, f"marker version {version}, type {kind}")
    _, coordinator_epoch = _VALUE.unpack_from(value)
    return Marker(kind == COMMIT, head.producer_id, head.producer_epoch, coordinator_epoch)
