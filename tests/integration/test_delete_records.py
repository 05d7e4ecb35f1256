"""DeleteRecords on a real Pulsar, through librdkafka's AdminClient: the log start
moves, ListOffsets earliest and consumers resetting to earliest follow it, the
refusals are Kafka's, and the new start survives a restart of kop. Pulsar keeps
the records below it (it cannot delete single messages) until its retention
removes them, so a Pulsar reader still sees them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pulsar
import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kio.schema.delete_records.v0.request import DeleteRecordsPartition, DeleteRecordsTopic
from kio.schema.errors import ErrorCode

from conformance.clients.raw import RawClient
from tests.integration.admin import create_topic
from tests.integration.clients import Rec, cf_consume, cf_produce
from tests.integration.conftest import PULSAR_URL, KopProcess


def _recs(n: int) -> list[Rec]:
    return [Rec(f"k{i}".encode(), f"v{i}".encode(), (), 1_700_000_000_000 + i) for i in range(n)]


def _delete(admin: AdminClient, topic: str, offset: int, partition: int = 0) -> int:
    [future] = admin.delete_records([TopicPartition(topic, partition, offset)]).values()
    return int(future.result(timeout=30).low_watermark)


def _delete_error(admin: AdminClient, topic: str, offset: int) -> object:
    with pytest.raises(KafkaException) as info:
        _delete(admin, topic, offset)
    return info.value.args[0].code()


def _raw_delete(gateway: KopProcess, topic: str, partition: int) -> tuple[ErrorCode, int]:
    """DeleteRecords v0 as the wire has it: librdkafka refuses an unknown partition
    before sending. (error code, low watermark)."""
    client = RawClient(gateway.port)
    try:
        asked = DeleteRecordsPartition(partition_index=partition, offset=1)
        resp = client.request(
            21,
            0,
            topics=(DeleteRecordsTopic(name=topic, partitions=(asked,)),),
            timeout=timedelta(seconds=5),
        )
    finally:
        client.close()
    part = resp.topics[0].partitions[0]
    return part.error_code, part.low_watermark


def _offsets(admin: AdminClient, topic: str) -> tuple[int, int]:
    """(earliest, latest) of partition 0, from ListOffsets."""
    tp = TopicPartition(topic, 0)
    found = []
    for spec in (OffsetSpec.earliest(), OffsetSpec.latest()):
        [future] = admin.list_offsets({tp: spec}).values()
        found.append(future.result(timeout=30).offset)
    return found[0], found[1]


def _pulsar_messages(topic: str) -> int:
    client = pulsar.Client(PULSAR_URL, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(
            f"persistent://public/default/{topic}-partition-0", pulsar.MessageId.earliest
        )
        count = 0
        while reader.has_message_available():
            reader.read_next(timeout_millis=10_000)
            count += 1
        return count
    finally:
        client.close()


def test_delete_records_moves_the_log_start(pulsar: str, tmp_path: Path, topic: str) -> None:
    gateway = KopProcess(tmp_path)
    gateway.start()
    try:
        create_topic(gateway.bootstrap, topic)
        assert cf_produce(gateway.bootstrap, topic, _recs(10), None) == list(range(10))
        admin = AdminClient({"bootstrap.servers": gateway.bootstrap})

        assert _delete(admin, topic, 4) == 4
        assert _offsets(admin, topic) == (4, 10)
        got = cf_consume(gateway.bootstrap, topic, 6, start=0, reset="earliest")
        assert [(r.offset, r.value) for r in got] == [(i, f"v{i}".encode()) for i in range(4, 10)]

        assert _delete(admin, topic, 2) == 4  # never back
        assert _delete_error(admin, topic, 11) == KafkaError.OFFSET_OUT_OF_RANGE
        unknown = (ErrorCode.unknown_topic_or_partition, -1)
        assert _raw_delete(gateway, topic, 3) == unknown
        assert _raw_delete(gateway, f"{topic}-none", 0) == unknown
        assert _pulsar_messages(topic) == 10  # Pulsar still holds them

        gateway.stop()
        gateway.start()
        admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
        assert _offsets(admin, topic) == (4, 10)
        assert cf_produce(gateway.bootstrap, topic, _recs(1), None) == [10]
        assert _delete(admin, topic, -1) == 11  # -1: the high watermark
        assert _offsets(admin, topic) == (11, 11)
    finally:
        gateway.stop()
