"""Admin through confluent-kafka's AdminClient: topics, configs, records, cluster."""

from __future__ import annotations

from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from conformance.clients.base import until
from conformance.model import Ctx, Observation, Rec, scenario
from conformance.setup import create_topic

CF = ("confluent-kafka",)
SHOWN_CONFIGS = ("cleanup.policy", "retention.ms", "retention.bytes", "max.message.bytes")


def _admin(ctx: Ctx) -> AdminClient:
    return AdminClient({"bootstrap.servers": ctx.bootstrap})


def _result(fut: Any) -> Any:
    """A future's value, or the error name the client reports."""
    try:
        return fut.result(60)
    except KafkaException as exc:
        return {"client error": exc.args[0].name()}


def _configs(admin: AdminClient, topic: str) -> Any:
    res = ConfigResource(ResourceType.TOPIC, topic)
    got = _result(admin.describe_configs([res])[res])
    if isinstance(got, dict) and "client error" in got:
        return got
    return {k: got[k].value for k in SHOWN_CONFIGS if k in got}


@scenario("admin/topics", CF, quick=True)
def topics(ctx: Ctx, _client: object) -> Observation:
    """Create, create again, grow, shrink, grow by one on each broker with an explicit
    assignment (brokers in id order), on a broker that is not there, describe, delete,
    delete again."""
    admin = _admin(ctx)
    topic = ctx.name("admin-topic")
    out: dict[str, Any] = {}
    new = NewTopic(topic, 2, 1, config={"retention.ms": "3600000"})
    out["create"] = _result(admin.create_topics([new], operation_timeout=30)[topic])
    out["create again"] = _result(admin.create_topics([new], operation_timeout=30)[topic])
    out["grow to 4"] = _result(admin.create_partitions([NewPartitions(topic, 4)])[topic])
    out["shrink to 3"] = _result(admin.create_partitions([NewPartitions(topic, 3)])[topic])
    nodes = sorted(n.id for n in admin.describe_cluster(request_timeout=30).result(30).nodes)
    count = 4
    for i, node in enumerate(nodes):
        placed = NewPartitions(topic, count + 1, replica_assignment=[[node]])
        grown = _result(admin.create_partitions([placed])[topic])
        out[f"grow by one on broker {i}"] = grown
        count += grown is None
    elsewhere = NewPartitions(topic, count + 1, replica_assignment=[[nodes[-1] + 100]])
    out["grow on a broker that is not there"] = _result(admin.create_partitions([elsewhere])[topic])
    out["partitions"] = until(
        f"{count} partitions in metadata", 30, lambda: _partitions(admin, topic, count)
    )
    out["delete"] = _result(admin.delete_topics([topic], operation_timeout=30)[topic])
    out["delete again"] = _result(admin.delete_topics([topic], operation_timeout=30)[topic])
    return out


def _partitions(admin: AdminClient, topic: str, expected: int) -> list[int] | None:
    """The partition ids once metadata shows `expected` of them (it lags on Kafka)."""
    found = sorted(admin.list_topics(topic, timeout=30).topics[topic].partitions)
    return found if len(found) == expected else None


@scenario("admin/describe-configs", CF, quick=True)
def describe_configs(ctx: Ctx, _client: object) -> Observation:
    """A topic's configs (the ones kop maps to Pulsar policies), as created and as default."""
    admin = _admin(ctx)
    custom, plain = ctx.name("cfg-custom"), ctx.name("cfg-plain")
    create_topic(
        ctx.bootstrap, custom, configs={"retention.ms": "3600000", "max.message.bytes": "2097152"}
    )
    create_topic(ctx.bootstrap, plain)
    return {"custom": _configs(admin, custom), "default": _configs(admin, plain)}


@scenario("admin/alter-configs", CF)
def alter_configs(ctx: Ctx, _client: object) -> Observation:
    """Incremental alter of retention.ms and max.message.bytes, read back."""
    admin = _admin(ctx)
    topic = ctx.name("cfg-alter")
    create_topic(ctx.bootstrap, topic)
    set_op = AlterConfigOpType.SET
    changes = [
        ConfigEntry("retention.ms", "7200000", incremental_operation=set_op),
        ConfigEntry("max.message.bytes", "3000000", incremental_operation=set_op),
    ]
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=changes)
    altered = _result(admin.incremental_alter_configs([res])[res])
    return {"alter": None if altered is None else str(altered), "now": _configs(admin, topic)}


@scenario("admin/delete-records", CF)
def delete_records(ctx: Ctx, client: Any) -> Observation:
    """DeleteRecords before offset 4 moves the log start: earliest becomes 4."""
    admin = _admin(ctx)
    topic = ctx.name("delrec")
    create_topic(ctx.bootstrap, topic)
    client.produce(ctx.bootstrap, topic, [Rec(None, f"v{i}".encode()) for i in range(10)])
    tp = TopicPartition(topic, 0, 4)
    try:
        done = admin.delete_records([tp])[tp].result(60)
        low = done.low_watermark
    except KafkaException as exc:
        return {"client error": exc.args[0].name()}
    return {
        "low watermark": low,
        "earliest": client.list_offset(ctx.bootstrap, topic, 0, "earliest"),
    }


@scenario("admin/describe-cluster", CF, quick=True)
def describe_cluster(ctx: Ctx, _client: object) -> Observation:
    """DescribeCluster: the brokers (on kop the live instances), one of them the
    controller."""
    admin = _admin(ctx)  # kept: a collected client fails its futures with _DESTROY
    got = _result(admin.describe_cluster(request_timeout=30))
    if isinstance(got, dict):
        return got
    return {"brokers": len(got.nodes), "has controller": got.controller is not None}


@scenario("admin/partitions-per-request", CF)
def partitions_per_request(ctx: Ctx, _client: object) -> Observation:
    """Kafka's controller refuses a CreateTopics asking for more than 10,000 partitions
    in all: every topic of it fails with POLICY_VIOLATION, also a small one (validate
    only, so nothing is made either way)."""
    asked = {"cap-a": 5000, "cap-b": 5001, "cap-small": 1}
    names = {logical: ctx.name(logical) for logical in asked}
    new = [NewTopic(names[logical], count, 1) for logical, count in asked.items()]
    admin = _admin(ctx)  # kept: a collected client fails its futures with _DESTROY
    futures = admin.create_topics(new, validate_only=True)
    out: dict[str, Any] = {}
    for logical in asked:
        try:
            futures[names[logical]].result(60)
            out[logical] = "valid"
        except KafkaException as exc:
            out[logical] = [exc.args[0].name(), exc.args[0].str()]
    return out


BROKER_KEYS = (
    "auto.create.topics.enable", "message.max.bytes", "log.retention.bytes", "log.retention.ms",
    "log.retention.hours", "num.partitions", "default.replication.factor", "min.insync.replicas",
    "log.cleanup.policy", "compression.type", "log.message.timestamp.type",
    "offsets.retention.minutes", "group.initial.rebalance.delay.ms",
)  # fmt: skip


@scenario("admin/broker-configs", CF, quick=True)
def broker_configs(ctx: Ctx, _client: object) -> Observation:
    """The broker's settings a client or operator looks up, with their sources."""
    admin = _admin(ctx)
    node = admin.describe_cluster(request_timeout=30).result(30).nodes[0].id
    res = ConfigResource(ResourceType.BROKER, str(node))
    got = _result(admin.describe_configs([res])[res])
    if isinstance(got, dict) and "client error" in got:
        return got
    return {k: [got[k].value, int(got[k].source)] if k in got else "missing" for k in BROKER_KEYS}


@scenario("admin/groups", CF)
def groups(ctx: Ctx, client: Any) -> Observation:
    """A group that committed and left: listed (Empty), described, its offsets listed,
    deleted, and gone from the list."""
    admin = _admin(ctx)
    topic, group = ctx.name("ag-topic"), ctx.name("ag")
    create_topic(ctx.bootstrap, topic)
    client.produce(ctx.bootstrap, topic, [Rec(None, f"v{i}".encode()) for i in range(5)])
    client.group_consume(ctx.bootstrap, topic, group, 3)

    def listed() -> Any:
        found = _result(admin.list_consumer_groups(request_timeout=30))
        if isinstance(found, dict):
            return found
        return [str(g.state) for g in found.valid if g.group_id == group]

    before = listed()
    described = _result(admin.describe_consumer_groups([group])[group])
    offsets = _result(
        admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    )
    out: dict[str, Any] = {"listed": before}
    if not isinstance(described, dict):
        out["described"] = [str(described.state), len(described.members)]
    if not isinstance(offsets, dict):
        out["offsets"] = [(p.partition, p.offset) for p in offsets.topic_partitions]
    out["delete"] = _result(admin.delete_consumer_groups([group])[group])
    out["listed after"] = listed()
    return out


# What Kafka Streams sets on a repartition topic, and what Connect-like tools and
# operators set (less cleanup.policy=compact, which kop refuses until compaction lands).
STREAMS_CONFIGS = {
    "cleanup.policy": "delete",
    "segment.bytes": "52428800",
    "retention.ms": "-1",
    "message.timestamp.type": "CreateTime",
}
CONNECT_CONFIGS = {
    "segment.ms": "600000", "unclean.leader.election.enable": "false",
    "min.insync.replicas": "2", "flush.messages": "1", "preallocate": "TRUE",
    "min.cleanable.dirty.ratio": ".1", "delete.retention.ms": "100",
    "leader.replication.throttled.replicas": "*", "compression.type": "zstd",
    "message.timestamp.before.max.ms": "86400000", "file.delete.delay.ms": "60000",
}  # fmt: skip


def _all_configs(admin: AdminClient, topic: str) -> Any:
    """Every Kafka topic config with its value, source and synonyms (kop's own
    `kop.*` configs left out: Kafka has none)."""
    res = ConfigResource(ResourceType.TOPIC, topic)
    try:
        got = admin.describe_configs([res])[res].result(60)  # librdkafka asks for synonyms
    except KafkaException as exc:
        return {"client error": exc.args[0].name()}
    return {
        name: [e.value, int(e.source), e.is_default, e.is_read_only,
               [[s.name, s.value, int(s.source)] for s in e.synonyms.values()]]
        for name, e in sorted(got.items()) if not name.startswith("kop.")
    }  # fmt: skip


def _described(admin: AdminClient, topic: str) -> Any:
    got = _all_configs(admin, topic)
    return None if "client error" in got else got


@scenario("admin/streams-connect-configs", CF)
def streams_connect_configs(ctx: Ctx, _client: object) -> Observation:
    """CreateTopics with the configs Kafka Streams (a repartition topic) and Connect-like
    tools set, partitions and replication factor -1 (the server's defaults): every
    topic config described with value, source and synonyms, also of a plain topic."""
    admin = _admin(ctx)
    out: dict[str, Any] = {}
    for logical, configs in (("streams", STREAMS_CONFIGS), ("connect", CONNECT_CONFIGS),
                             ("plain", {})):  # fmt: skip
        topic = ctx.name(f"cfg-{logical}")
        new = NewTopic(topic, num_partitions=-1, replication_factor=-1, config=configs)
        out[f"create {logical}"] = _result(admin.create_topics([new], operation_timeout=30)[topic])
        # Kafka's metadata may lag its CreateTopics answer for a moment.
        out[logical] = until(f"{logical} described", 30, lambda t=topic: _described(admin, t))
    return out


BAD_CONFIGS = (
    ("segment.bytes", "1"), ("segment.bytes", "x"), ("retention.ms", "-2"),
    ("compression.type", "none"), ("compression.gzip.level", "0"),
    ("message.timestamp.type", "logappendtime"), ("min.cleanable.dirty.ratio", "1.5"),
    ("min.insync.replicas", "0"), ("preallocate", "yes"), ("cleanup.policy", "delete,"),
    ("cleanup.policy", "foo"), ("max.message.bytes", "2147483648"),
    ("follower.replication.throttled.replicas", "bad"), ("remote.storage.enable", "true"),
    ("no.such.config", "1"), ("message.timestamp.difference.max.ms", "1000"),
)  # fmt: skip


@scenario("admin/bad-configs", CF)
def bad_configs(ctx: Ctx, _client: object) -> Observation:
    """Bad topic config values at creation (validate only) and in IncrementalAlterConfigs:
    each refused with its error and Kafka's message."""
    admin = _admin(ctx)
    out: dict[str, Any] = {}
    for name, value in BAD_CONFIGS:
        topic = ctx.name("cfg-bad")
        new = NewTopic(topic, 1, 1, config={name: value})
        try:
            admin.create_topics([new], validate_only=True)[topic].result(60)
            out[f"{name}={value}"] = "valid"
        except KafkaException as exc:
            out[f"{name}={value}"] = [exc.args[0].name(), exc.args[0].str()]
    topic = ctx.name("cfg-alter-bad")
    create_topic(ctx.bootstrap, topic)
    set_op, append, delete = (
        AlterConfigOpType.SET, AlterConfigOpType.APPEND, AlterConfigOpType.DELETE,
    )  # fmt: skip
    ops = {
        "append to a long": [ConfigEntry("retention.ms", "5", incremental_operation=append)],
        "set a bad value": [ConfigEntry("retention.ms", "x", incremental_operation=set_op)],
        "lags crossed": [
            ConfigEntry("min.compaction.lag.ms", "100", incremental_operation=set_op),
            ConfigEntry("max.compaction.lag.ms", "10", incremental_operation=set_op),
        ],
        "delete an unknown": [ConfigEntry("no.such.config", None, incremental_operation=delete)],
    }
    for what, entries in ops.items():
        res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
        try:
            admin.incremental_alter_configs([res])[res].result(60)
            out[what] = "done"
        except KafkaException as exc:
            out[what] = [exc.args[0].name(), exc.args[0].str()]
    return out
