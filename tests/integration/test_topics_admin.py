"""Kafka's admin API over Pulsar topics: create, describe, grow, delete."""

from __future__ import annotations

import json
import urllib.request

import pytest
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ResourceType,
)
from confluent_kafka.admin import ConfigResource as CfConfigResource
from confluent_kafka.admin import NewPartitions as CfNewPartitions
from confluent_kafka.admin import NewTopic as CfNewTopic
from kafka.admin import (
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewPartitions,
    NewTopic,
)
from kafka.errors import (
    InvalidConfigurationError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)

from tests.integration.clients import PRODUCERS, Rec, kp_consume
from tests.integration.conftest import PULSAR_HTTP, KopProcess


def _admin(kop: KopProcess) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=kop.bootstrap)


def _pulsar_partitions(topic: str) -> int:
    url = f"{PULSAR_HTTP}/admin/v2/persistent/public/default/{topic}/partitions"
    with urllib.request.urlopen(url) as resp:
        return int(json.load(resp)["partitions"])


def test_create_describe_grow_delete(kop: KopProcess, topic: str) -> None:
    admin = _admin(kop)
    try:
        admin.create_topics([NewTopic(topic, 3, 1, topic_configs={"retention.ms": "3600000"})])
        assert _pulsar_partitions(topic) == 3
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic(topic, 3, 1)])
        described = admin.describe_topics([topic])
        assert len(described[0]["partitions"]) == 3
        resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        modified = admin.describe_configs([resource])["topic"][topic]
        assert {k: v["value"] for k, v in modified.items()} == {"retention.ms": "3600000"}
        entries = admin.describe_configs([resource], config_filter="all")["topic"][topic]
        assert entries["cleanup.policy"]["value"] == "delete"
        assert entries["kop.entry.format"]["value"] == "pulsar"
        assert entries["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        admin.create_partitions({topic: NewPartitions(5)})
        assert _pulsar_partitions(topic) == 5
        assert topic in admin.list_topics()
        admin.delete_topics([topic])
        assert topic not in admin.list_topics()
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_topics([topic])
    finally:
        admin.close()


def test_recreated_topic_starts_again_at_offset_zero(kop: KopProcess, topic: str) -> None:
    admin = _admin(kop)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
        recs = [Rec(None, f"old{i}".encode(), (), 1_700_000_000_000) for i in range(5)]
        assert PRODUCERS["kafka-python"](kop.bootstrap, topic, recs, None) == list(range(5))
        admin.delete_topics([topic])
        admin.create_topics([NewTopic(topic, 1, 1)])
        recs = [Rec(None, b"new", (), 1_700_000_000_000)]
        assert PRODUCERS["kafka-python"](kop.bootstrap, topic, recs, None) == [0]
        assert [r.value for r in kp_consume(kop.bootstrap, topic, 1)] == [b"new"]
    finally:
        admin.close()


def test_unsupported_config_is_invalid_config(kop: KopProcess, topic: str) -> None:
    admin = _admin(kop)
    try:
        with pytest.raises(InvalidConfigurationError):
            admin.create_topics(
                [NewTopic(topic, 1, 1, topic_configs={"cleanup.policy": "compact"})]
            )
        with pytest.raises(InvalidConfigurationError):
            admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"no.such.config": "1"})])
        assert topic not in admin.list_topics()
    finally:
        admin.close()


def test_pulsar_retention_follows_kafka_retention(kop: KopProcess, topic: str) -> None:
    admin = _admin(kop)
    try:
        admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"retention.ms": "7200000"})])
    finally:
        admin.close()
    url = f"{PULSAR_HTTP}/admin/v2/persistent/public/default/{topic}/retention"
    with urllib.request.urlopen(url) as resp:
        policy = json.load(resp)
    assert policy == {"retentionTimeInMinutes": 120, "retentionSizeInMB": -1}


def test_confluent_admin_lists_topics(kop: KopProcess, topic: str) -> None:
    """librdkafka 2.16's AdminClient.list_topics() sends Metadata v12 with 3 bytes after
    its fields; Kafka answers it, and kop closed the connection."""
    admin = _admin(kop)
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
    finally:
        admin.close()
    listed = AdminClient({"bootstrap.servers": kop.bootstrap}).list_topics(timeout=30)
    assert sorted(listed.topics[topic].partitions) == [0, 1]


def _pulsar_retention(topic: str) -> dict[str, int]:
    url = f"{PULSAR_HTTP}/admin/v2/persistent/public/default/{topic}/retention"
    with urllib.request.urlopen(url) as resp:
        return dict(json.load(resp))


# AlterConfigs (the whole set) is one of the two APIs under test, deprecated in clients or not.
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_altered_configs_read_back_and_become_pulsar_retention(kop: KopProcess, topic: str) -> None:
    """IncrementalAlterConfigs (SET, then DELETE back to the default) and AlterConfigs
    (the whole set) through confluent-kafka; retention is what Pulsar deletes by."""
    admin = AdminClient({"bootstrap.servers": kop.bootstrap})
    admin.create_topics([CfNewTopic(topic, 1, 1)])[topic].result(30)

    def alter(*entries: ConfigEntry) -> None:
        res = CfConfigResource(ResourceType.TOPIC, topic, incremental_configs=list(entries))
        admin.incremental_alter_configs([res])[res].result(30)

    def described() -> dict[str, str]:
        res = CfConfigResource(ResourceType.TOPIC, topic)
        return {k: v.value for k, v in admin.describe_configs([res])[res].result(30).items()}

    alter(ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET))
    assert described()["retention.ms"] == "7200000"
    assert _pulsar_retention(topic)["retentionTimeInMinutes"] == 120

    alter(ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE))
    assert described()["retention.ms"] == "604800000"

    whole = CfConfigResource(ResourceType.TOPIC, topic, set_config={"retention.bytes": "1048576"})
    admin.alter_configs([whole])[whole].result(30)
    assert described()["retention.bytes"] == "1048576"
    assert _pulsar_retention(topic)["retentionSizeInMB"] == 1

    too_big = ConfigEntry(
        "max.message.bytes", "104857600", incremental_operation=AlterConfigOpType.SET
    )
    with pytest.raises(KafkaException) as refused:
        alter(too_big)
    assert refused.value.args[0].name() == "INVALID_CONFIG"


def test_topic_ids_are_stable_and_new_for_a_recreated_topic(kop: KopProcess, topic: str) -> None:
    """Kafka 4's tools show topic ids (kafka-topics --describe); kop gave the zero id."""
    admin = AdminClient({"bootstrap.servers": kop.bootstrap})

    def topic_id() -> str:
        described = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
        return str(described.topic_id)

    admin.create_topics([CfNewTopic(topic, 1, 1)])[topic].result(30)
    first = topic_id()
    assert first != "AAAAAAAAAAAAAAAAAAAAAA" and first == topic_id()
    admin.delete_topics([topic])[topic].result(30)
    admin.create_topics([CfNewTopic(topic, 1, 1)])[topic].result(30)
    assert topic_id() not in (first, "AAAAAAAAAAAAAAAAAAAAAA")


def test_partitions_added_with_an_explicit_assignment_to_the_one_broker(
    kop: KopProcess, topic: str
) -> None:
    admin = AdminClient({"bootstrap.servers": kop.bootstrap})
    admin.create_topics([CfNewTopic(topic, 1, 1)])[topic].result(30)
    node = admin.describe_cluster().result(30).nodes[0].id
    grow = CfNewPartitions(topic, 3, replica_assignment=[[node], [node]])
    admin.create_partitions([grow])[topic].result(30)
    assert _pulsar_partitions(topic) == 3
    elsewhere = CfNewPartitions(topic, 4, replica_assignment=[[node + 7]])
    with pytest.raises(KafkaException) as refused:
        admin.create_partitions([elsewhere])[topic].result(30)
    assert refused.value.args[0].name() == "INVALID_REPLICA_ASSIGNMENT"
