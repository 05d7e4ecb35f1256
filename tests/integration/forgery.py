"""Inconsistencies the validators must catch, made for real: messages written
straight to Pulsar that a Kafka client reads differently than the offset model
counts them, and an offset-index checkpoint that names the wrong message."""

from __future__ import annotations

import struct

import crc32c
import pulsar

from kop.log.checkpoint_store import CheckpointStore
from kop.log.offset_index import Checkpoint
from kop.protocol.records import Record, build_batch
from kop.pulsar.admin import PulsarAdmin
from kop.pulsar.client import PulsarSession
from kop.storage.types import Position
from spark_jobs.blocking import run_apart
from spark_jobs.pulsar_source import stored_message

_HEADER = 61  # a v2 batch header; records follow
_CRC_AT, _CRC_FROM, _LAST_DELTA_AT = 17, 21, 23


def batch_with_deltas(values: list[bytes], deltas: list[int], timestamp: int) -> bytes:
    """A valid-looking kafka-format batch (count = last offset delta + 1, good CRC)
    whose records carry `deltas` as their offset deltas instead of 0, 1, 2...
    Kafka clients number records by their deltas; the offset model by place."""
    assert len(values) == len(deltas) and all(0 <= d < 64 for d in deltas)
    records = [Record(i, timestamp, None, v) for i, v in enumerate(values)]
    data = bytearray(build_batch(records))
    pos = _HEADER
    for delta in deltas:
        length, size = _varint(data, pos)
        attrs_at = pos + size
        _ts_delta, ts_size = _varint(data, attrs_at + 1)
        delta_at = attrs_at + 1 + ts_size
        assert data[delta_at] < 0x80  # a one-byte varint: it can be rewritten in place
        data[delta_at] = delta << 1  # zigzag
        pos = attrs_at + length
    struct.pack_into(">i", data, _LAST_DELTA_AT, len(values) - 1)
    struct.pack_into(">I", data, _CRC_AT, crc32c.crc32c(bytes(data[_CRC_FROM:])))
    return bytes(data)


def _varint(data: bytearray, pos: int) -> tuple[int, int]:
    shift = value = size = 0
    while True:
        b = data[pos + size]
        value |= (b & 0x7F) << shift
        size += 1
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), size
        shift += 7


def write_straight_to_pulsar(pulsar_url: str, topic: str, batch: bytes) -> None:
    client = pulsar.Client(pulsar_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        producer.send(batch, properties={"__kafka.entry": "batch"})
        producer.close()
    finally:
        client.close()


def nth_position(pulsar_url: str, topic: str, n: int) -> Position:
    """The entry holding the n-th message (0-based) of a Pulsar partition."""
    client = pulsar.Client(pulsar_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        for _ in range(n):
            reader.read_next(timeout_millis=10_000)
        position = stored_message(reader.read_next(timeout_millis=10_000)).position
        return Position(position.ledger, position.entry)
    finally:
        client.close()


def forge_checkpoint(
    pulsar_url: str, http_url: str, system_namespace: str, topic: str, claim: Checkpoint
) -> None:
    """Persist a checkpoint into kop's offset index, as kop itself would."""

    async def save() -> None:
        admin = PulsarAdmin(http_url)
        session = PulsarSession(pulsar_url, admin)
        try:
            store = CheckpointStore(session, f"persistent://{system_namespace}/offset-index")
            await store.save(topic, [claim], [], None)
        finally:
            await session.close()
            await admin.close()

    run_apart(save())
