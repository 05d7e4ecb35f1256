"""The topic configs Kafka Streams, Kafka Connect and their peers set, through
confluent-kafka's AdminClient, producer and consumer against kop on a real Pulsar:
accepted and described as Kafka describes them, refused with Kafka's message,
and the honoured ones honoured (LogAppendTime, the timestamp window,
compression.type, retention as the Pulsar policy)."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

from conformance.clients.raw import RawClient
from kop.protocol.records import read_header
from tests.integration.conftest import PULSAR_HTTP, KopProcess

STREAMS_REPARTITION = {
    "cleanup.policy": "delete",
    "segment.bytes": "52428800",
    "retention.ms": "-1",
    "message.timestamp.type": "CreateTime",
}
CONNECT_LIKE = {
    "segment.ms": "600000",
    "unclean.leader.election.enable": "false",
    "min.insync.replicas": "2",
    "flush.messages": "1",
    "preallocate": "TRUE",
    "min.cleanable.dirty.ratio": ".1",
    "delete.retention.ms": "100",
    "leader.replication.throttled.replicas": "*",
}


def _admin(kop: KopProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": kop.bootstrap})


def _create(admin: AdminClient, topic: NewTopic) -> None:
    admin.create_topics([topic], operation_timeout=30)[topic.topic].result(30)


def _describe(admin: AdminClient, topic: str) -> dict[str, Any]:
    res = ConfigResource(ResourceType.TOPIC, topic)
    return dict(admin.describe_configs([res])[res].result(30))


def _refusal(admin: AdminClient, topic: str, configs: dict[str, str]) -> tuple[str, str]:
    with pytest.raises(KafkaException) as err:
        _create(admin, NewTopic(topic, 1, 1, config=configs))
    return err.value.args[0].name(), err.value.args[0].str()


@pytest.mark.parametrize("configs", [STREAMS_REPARTITION, CONNECT_LIKE], ids=["streams", "connect"])
def test_streams_and_connect_topics_are_created_and_described_as_on_kafka(
    kop: KopProcess, topic: str, configs: dict[str, str]
) -> None:
    admin = _admin(kop)
    _create(admin, NewTopic(topic, num_partitions=-1, replication_factor=-1, config=configs))
    described = _describe(admin, topic)
    assert len([n for n in described if not n.startswith("kop.")]) == 33
    canonical = {"preallocate": "true", "min.cleanable.dirty.ratio": "0.1"}
    for name, value in configs.items():
        entry = described[name]
        assert entry.value == canonical.get(name, value)
        assert entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value  # set, even if default
        assert not entry.is_default
    assert described["compression.type"].source == ConfigSource.DEFAULT_CONFIG.value
    assert described["message.timestamp.after.max.ms"].value == "3600000"
    metadata = admin.list_topics(topic, timeout=30).topics[topic]
    assert len(metadata.partitions) == 1  # -1: the server's default


def test_bad_values_are_refused_with_kafkas_message(kop: KopProcess, topic: str) -> None:
    admin = _admin(kop)
    assert _refusal(admin, topic, {"segment.bytes": "1"}) == (
        "INVALID_CONFIG",
        "Invalid value 1 for configuration segment.bytes: Value must be at least 1048576",
    )
    assert _refusal(admin, topic, {"compression.type": "none"})[1].endswith(
        "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"
    )
    assert _refusal(admin, topic, {"no.such.config": "1"}) == (
        "INVALID_CONFIG",
        "Unknown topic config name: no.such.config",
    )
    assert (
        _refusal(admin, topic, {"cleanup.policy": "compact", "kop.entry.format": "kafka"})[0]
        == "INVALID_CONFIG"
    )
    assert topic not in admin.list_topics(timeout=30).topics


def test_a_manual_assignment_names_kop_once_per_partition(kop: KopProcess, topic: str) -> None:
    admin = _admin(kop)
    node = admin.describe_cluster(request_timeout=30).result(30).nodes[0].id
    _create(admin, NewTopic(topic, num_partitions=2, replica_assignment=[[node], [node]]))
    assert len(admin.list_topics(topic, timeout=30).topics[topic].partitions) == 2
    with pytest.raises(KafkaException) as err:
        _create(admin, NewTopic(topic + "-x", num_partitions=1, replica_assignment=[[node + 100]]))
    assert err.value.args[0].name() == "INVALID_REPLICA_ASSIGNMENT"


def _consume(kop: KopProcess, topic: str, n: int) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": kop.bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: list[Any] = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and msg.error() is None:
            got.append(msg)
    consumer.close()
    return got


@pytest.mark.parametrize("entry_format", ["pulsar", "kafka"])
def test_log_append_time_is_what_consumers_read(
    kop: KopProcess, topic: str, entry_format: str
) -> None:
    configs = {"message.timestamp.type": "LogAppendTime", "kop.entry.format": entry_format}
    _create(_admin(kop), NewTopic(topic, 1, 1, config=configs))
    producer = Producer({"bootstrap.servers": kop.bootstrap, "linger.ms": 50})
    day_ago = int(time.time() * 1000) - 86_400_000
    before = int(time.time() * 1000)
    for i in range(3):
        producer.produce(topic, value=b"v%d" % i, timestamp=day_ago + i)
    assert producer.flush(30) == 0
    after = int(time.time() * 1000)
    got = _consume(kop, topic, 3)
    assert [m.value() for m in got] == [b"v0", b"v1", b"v2"]
    for m in got:
        kind, stamp = m.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME
        assert before <= stamp <= after


def test_a_record_too_far_ahead_is_invalid_timestamp(kop: KopProcess, topic: str) -> None:
    """Kafka 4 refuses records more than message.timestamp.after.max.ms (1 hour) ahead;
    the batch holding one is refused whole, as on Kafka."""
    _create(_admin(kop), NewTopic(topic, 1, 1))
    reports: list[Any] = []
    producer = Producer({"bootstrap.servers": kop.bootstrap, "retries": 0, "linger.ms": 100})
    later = int(time.time() * 1000) + 2 * 3_600_000
    producer.produce(topic, b"late", timestamp=later, on_delivery=lambda e, _m: reports.append(e))
    producer.produce(topic, b"same batch", on_delivery=lambda e, _m: reports.append(e))
    producer.flush(30)
    assert [None if e is None else e.code() for e in reports] == [KafkaError.INVALID_TIMESTAMP] * 2
    producer.produce(topic, b"now")
    assert producer.flush(30) == 0
    assert [m.value() for m in _consume(kop, topic, 1)] == [b"now"]


def test_compression_type_is_the_codec_fetched_batches_have(kop: KopProcess, topic: str) -> None:
    configs = {"compression.type": "gzip", "kop.entry.format": "kafka"}
    _create(_admin(kop), NewTopic(topic, 1, 1, config=configs))
    producer = Producer({"bootstrap.servers": kop.bootstrap, "compression.type": "lz4"})
    producer.produce(topic, b"x" * 1000)
    assert producer.flush(30) == 0
    raw = RawClient(kop.port)
    try:
        records = raw.fetch(topic, 0).responses[0].partitions[0].records
    finally:
        raw.close()
    assert read_header(records).compression == 1  # gzip, as Kafka recompresses


def _pulsar_retention(topic: str) -> dict[str, int]:
    url = f"{PULSAR_HTTP}/admin/v2/persistent/public/default/{topic}/retention"
    with urllib.request.urlopen(url) as resp:
        return dict(json.load(resp))


def test_retention_applies_only_under_the_delete_policy(kop: KopProcess, topic: str) -> None:
    admin = _admin(kop)
    _create(admin, NewTopic(topic, 1, 1, config={"retention.ms": "7200000"}))
    assert _pulsar_retention(topic)["retentionTimeInMinutes"] == 120
    res = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(
                "cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT
            )
        ],
    )
    admin.incremental_alter_configs([res])[res].result(30)
    assert _describe(admin, topic)["cleanup.policy"].value == ""
    assert _pulsar_retention(topic) == {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}
