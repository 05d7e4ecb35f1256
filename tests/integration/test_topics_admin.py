"""Kafka's admin API over Pulsar topics: create, describe, grow, delete."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

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
    PolicyViolationError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)

from tests.integration.clients import PRODUCERS, Rec, kp_consume
from tests.integration.conftest import PULSAR_HTTP, KopProcess
from tests.integration.observe import pulsar_rest


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
            admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"cleanup.policy": "shred"})])
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


def _limited_topics(namespace: str) -> dict[str, int]:
    """The Kafka topics kop made in a namespace, by Pulsar's account."""
    names = pulsar_rest("GET", f"persistent/{namespace}/partitioned") or []
    found = {}
    for name in names:
        local = name.rsplit("/", 1)[-1]
        found[local] = int(
            pulsar_rest("GET", f"persistent/{namespace}/{local}/partitions")["partitions"]
        )
    return found


def _outcomes(futures: dict[str, Any]) -> dict[str, str]:
    """Each topic's outcome as the client reports it: "ok" or Kafka's error name."""
    out = {}
    for name, fut in futures.items():
        try:
            fut.result(120)
            out[name] = "ok"
        except KafkaException as exc:
            out[name] = exc.args[0].name()
    return out


def test_partition_limits_refuse_before_pulsar_is_asked(limited_kop: KopProcess) -> None:
    """max_partitions_per_topic=4, max_partitions_total=10 in a namespace of the
    gateway's own. Each refusal is POLICY_VIOLATION with a message naming the
    setting, and leaves nothing in Pulsar; validate_only answers the same."""
    namespace = f"public/{limited_kop.env['KOP_NAMESPACE']}"
    admin = AdminClient({"bootstrap.servers": limited_kop.bootstrap})
    with pytest.raises(KafkaException) as wide:
        admin.create_topics([CfNewTopic("wide", 5, 1)])["wide"].result(60)
    assert wide.value.args[0].name() == "POLICY_VIOLATION"
    assert "max_partitions_per_topic" in wide.value.args[0].str()
    assert _limited_topics(namespace) == {}

    three = [CfNewTopic("a", 4, 1), CfNewTopic("b", 3, 1), CfNewTopic("c", 4, 1)]
    validated = _outcomes(admin.create_topics(three, validate_only=True))
    assert validated == {"a": "ok", "b": "ok", "c": "POLICY_VIOLATION"}  # 4 + 3 + 4 > 10
    assert _limited_topics(namespace) == {}
    futures = admin.create_topics(three)
    assert _outcomes(futures) == validated
    with pytest.raises(KafkaException) as total:
        futures["c"].result(0)
    assert "max_partitions_total" in total.value.args[0].str()
    assert _limited_topics(namespace) == {"a": 4, "b": 3}

    # Generous: Pulsar answers slowly on a loaded machine, and the default is 30 s.
    kp = KafkaAdminClient(bootstrap_servers=limited_kop.bootstrap, request_timeout_ms=120_000)
    try:
        with pytest.raises(PolicyViolationError):
            kp.create_partitions({"a": NewPartitions(5)})  # above 4 per topic
        kp.create_partitions({"b": NewPartitions(4)})  # 8 in all
        kp.create_topics([NewTopic("d", 2, 1)])  # 10 in all
        with pytest.raises(PolicyViolationError):
            kp.create_partitions({"d": NewPartitions(3)})  # 11
        with pytest.raises(PolicyViolationError):
            kp.create_topics([NewTopic("e", 1, 1)])  # 11
    finally:
        kp.close()
    assert _limited_topics(namespace) == {"a": 4, "b": 4, "d": 2}


def test_kafkas_cap_on_one_create_topics_request(limited_kop: KopProcess) -> None:
    """Kafka's own rule, kept by kop: more than 10,000 partitions in one CreateTopics
    fail every topic of it, also one that alone would be fine."""
    admin = AdminClient({"bootstrap.servers": limited_kop.bootstrap})
    asked = [CfNewTopic("big1", 5000, 1), CfNewTopic("big2", 5001, 1), CfNewTopic("small", 1, 1)]
    futures = admin.create_topics(asked, validate_only=True)
    assert _outcomes(futures) == dict.fromkeys(["big1", "big2", "small"], "POLICY_VIOLATION")
    with pytest.raises(KafkaException) as refused:
        futures["small"].result(0)
    assert refused.value.args[0].str() == "Excessively large number of partitions per request."
