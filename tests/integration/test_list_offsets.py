"""ListOffsets: earliest, latest and by timestamp, as librdkafka and kafka-python ask."""

from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTP

from tests.integration.admin import create_topic
from tests.integration.clients import PRODUCERS, Rec
from tests.integration.conftest import KopProcess


def _recs(n: int, base: int) -> list[Rec]:
    return [Rec(None, f"v{i}".encode(), (), base + i * 100) for i in range(n)]


def test_offsets_for_times_kafka_python(kop: KopProcess, topic: str) -> None:
    create_topic(kop.bootstrap, topic, entry_format="kafka")
    PRODUCERS["kafka-python"](kop.bootstrap, topic, _recs(50, 1_000_000), "gzip")
    consumer = KafkaConsumer(bootstrap_servers=kop.bootstrap)
    tp = KpTP(topic, 0)
    try:
        found = consumer.offsets_for_times({tp: 1_000_000 + 1234})[tp]
        assert (found.offset, found.timestamp) == (13, 1_001_300)
        assert consumer.offsets_for_times({tp: 1_000_000})[tp].offset == 0
        assert consumer.offsets_for_times({tp: 9_999_999})[tp] is None
        assert consumer.beginning_offsets([tp])[tp] == 0
        assert consumer.end_offsets([tp])[tp] == 50
    finally:
        consumer.close()


def test_offsets_for_times_librdkafka_across_checkpoints(pulsar: str, tmp_path, topic: str) -> None:  # type: ignore[no-untyped-def]
    """A small checkpoint interval makes the lookup start from the index, not the log start."""
    from tests.integration.conftest import KopProcess as Kop

    gateway = Kop(tmp_path, KOP_CHECKPOINT_INTERVAL="7", KOP_TAIL_BUFFER_BYTES="0")
    gateway.start()
    try:
        create_topic(gateway.bootstrap, topic)
        PRODUCERS["confluent-kafka"](gateway.bootstrap, topic, _recs(120, 5_000_000), None)
        consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": "x"})
        try:
            for wanted in (0, 37, 64, 119):
                [tp] = consumer.offsets_for_times(
                    [TopicPartition(topic, 0, 5_000_000 + wanted * 100 - 50)], 10
                )
                assert tp.offset == wanted
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), 10)
            assert (low, high) == (0, 120)
        finally:
            consumer.close()
    finally:
        gateway.stop()
