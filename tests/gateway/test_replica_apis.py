"""The replica-management APIs answered as a Kafka cluster whose partitions each have
one replica answers them, through kafka-python's admin client (which raised
"unsupported" here where a one-broker Kafka answers): ElectLeaders finds every
partition's only replica leading (ELECTION_NOT_NEEDED); no reassignment is ever in
progress; a partition "reassigned" to the broker that holds it is done, one moved
anywhere else is refused with the reason; a partition's log directory is its topic's
Pulsar namespace. All four are cluster operations: a principal that is not a
superuser is refused CLUSTER_AUTHORIZATION_FAILED, as Kafka refuses it."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import (
    InvalidReplicationAssignmentError,
    InvalidReplicationFactorError,
    LogDirNotFoundError,
    NoError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from kafka.structs import TopicPartitionReplica
from kio.schema.alter_partition_reassignments.v1.request import (
    ReassignablePartition,
    ReassignableTopic,
)
from kio.schema.alter_replica_log_dirs.v2.request import (
    AlterReplicaLogDir,
    AlterReplicaLogDirTopic,
)
from kio.schema.elect_leaders.v2.request import TopicPartitions

from conformance.clients.raw import RawClient
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ApiKey
from tests.gateway.memory_gateway import gateway_with_hot_topic

NOT_NEEDED, UNKNOWN = ErrorCode.election_not_needed, ErrorCode.unknown_topic_or_partition


def _admin(port: int) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=10_000)


def _elections(response: Any) -> dict[tuple[str, int], int]:
    return {
        (r.topic, p.partition_id): p.error_code
        for r in response.replica_election_results
        for p in r.partition_result
    }


def _as_a_tool_does(port: int) -> dict[str, Any]:
    admin = _admin(port)
    try:
        named = admin.elect_leaders(0, {"hot": [0, 1], "ghost": [0]}, raise_errors=False)
        every = admin.elect_leaders(0, None, raise_errors=False)  # the client names them all
        moved = admin.alter_partition_reassignments(
            {
                TopicPartition("hot", 0): [0],  # where it is: done
                TopicPartition("hot", 1): [7],  # elsewhere: refused
                TopicPartition("ghost", 0): [0],
            }
        )
        factor = admin.alter_partition_reassignments({TopicPartition("hot", 0): [0, 1]})
        cancelled = admin.alter_partition_reassignments({TopicPartition("hot", 1): None})
        ongoing = admin.list_partition_reassignments()
        dirs = admin.alter_replica_log_dirs(
            {
                TopicPartitionReplica("hot", 0, 0): "pulsar://public/default",
                TopicPartitionReplica("hot", 1, 0): "/var/lib/kafka/data",
            }
        )
    finally:
        admin.close()
    return {"named": named, "every": every, "moved": moved, "factor": factor,
            "cancelled": cancelled, "ongoing": ongoing, "dirs": dirs}  # fmt: skip


async def test_tools_get_a_one_replica_clusters_answers() -> None:
    async with gateway_with_hot_topic(2) as (gateway, _backend):
        got = await asyncio.to_thread(_as_a_tool_does, gateway.kafka_port)
    assert _elections(got["named"]) == {
        ("hot", 0): NOT_NEEDED, ("hot", 1): NOT_NEEDED, ("ghost", 0): UNKNOWN,
    }  # fmt: skip
    every = _elections(got["every"])
    assert every[("hot", 0)] == NOT_NEEDED
    assert every[("__consumer_offsets", 0)] == NOT_NEEDED  # listed in Metadata, so placed
    assert got["moved"] == {
        TopicPartition("hot", 0): None,
        TopicPartition("hot", 1): InvalidReplicationAssignmentError,
        TopicPartition("ghost", 0): UnknownTopicOrPartitionError,
    }
    assert got["factor"] == {TopicPartition("hot", 0): InvalidReplicationFactorError}
    assert got["cancelled"] == {TopicPartition("hot", 1): NoReassignmentInProgressError}
    assert got["ongoing"] == {}
    assert got["dirs"] == {
        TopicPartitionReplica("hot", 0, 0): NoError,
        TopicPartitionReplica("hot", 1, 0): LogDirNotFoundError,
    }


def _every_version_of_each(client: RawClient) -> dict[tuple[str, int], int]:
    """Each API at each version kop serves: its top-level (or first) error code."""
    out: dict[tuple[str, int], int] = {}
    for v in (0, 1, 2):
        kind = {"election_type": 0} if v >= 1 else {}  # v0 elects the preferred one only
        r = client.request(
            ApiKey.ELECT_LEADERS, v, timeout=datetime.timedelta(seconds=5),
            topic_partitions=(TopicPartitions(topic="hot", partitions=(0,)),), **kind,
        )  # fmt: skip
        out[("elect", v)] = r.replica_election_results[0].partition_result[0].error_code
        if v >= 1:
            out[("elect top", v)] = r.error_code
    for v in (0, 1):
        part = ReassignablePartition(partition_index=0, replicas=(5,))
        fields: dict[str, Any] = {
            "timeout": datetime.timedelta(seconds=5),
            "topics": (ReassignableTopic(name="hot", partitions=(part,)),),
        }
        if v >= 1:
            fields["allow_replication_factor_change"] = True
        r = client.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, v, **fields)
        out[("reassign top", v)] = r.error_code
        if r.responses:
            out[("reassign", v)] = r.responses[0].partitions[0].error_code
    r = client.request(
        ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, timeout=datetime.timedelta(seconds=5), topics=None
    )
    out[("list", 0)] = r.error_code
    return out


async def test_every_version_serves_a_superuser_and_refuses_anyone_else() -> None:
    config = {"authorization_enabled": True, "anonymous_role": "ops"}
    async with gateway_with_hot_topic(1, superuser_roles="ops", **config) as (gateway, _):
        client = RawClient(gateway.kafka_port)
        try:
            allowed = await asyncio.to_thread(_every_version_of_each, client)
        finally:
            client.close()
    assert allowed == {
        ("elect", 0): NOT_NEEDED, ("elect", 1): NOT_NEEDED, ("elect", 2): NOT_NEEDED,
        ("elect top", 1): 0, ("elect top", 2): 0,
        ("reassign top", 0): 0, ("reassign", 0): ErrorCode.invalid_replica_assignment,
        ("reassign top", 1): 0, ("reassign", 1): ErrorCode.invalid_replica_assignment,
        ("list", 0): 0,
    }  # fmt: skip
    async with gateway_with_hot_topic(1, **config) as (gateway, _):
        client = RawClient(gateway.kafka_port)
        try:
            refused = await asyncio.to_thread(_refused, client)
        finally:
            client.close()
    assert set(refused) == {ErrorCode.cluster_authorization_failed}


def _refused(client: RawClient) -> list[int]:
    elect = client.request(
        ApiKey.ELECT_LEADERS, 2, election_type=0, timeout=datetime.timedelta(seconds=5),
        topic_partitions=(TopicPartitions(topic="hot", partitions=(0,)),),
    )  # fmt: skip
    part = ReassignablePartition(partition_index=0, replicas=(0,))
    reassign = client.request(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, timeout=datetime.timedelta(seconds=5),
        allow_replication_factor_change=True,
        topics=(ReassignableTopic(name="hot", partitions=(part,)),),
    )  # fmt: skip
    listed = client.request(
        ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, timeout=datetime.timedelta(seconds=5), topics=None
    )
    topic = AlterReplicaLogDirTopic(name="hot", partitions=(0,))
    moved = client.request(
        ApiKey.ALTER_REPLICA_LOG_DIRS, 2,
        dirs=(AlterReplicaLogDir(path="pulsar://public/default", topics=(topic,)),),
    )  # fmt: skip
    elect_v0 = client.request(
        ApiKey.ELECT_LEADERS, 0, timeout=datetime.timedelta(seconds=5),
        topic_partitions=(TopicPartitions(topic="hot", partitions=(0,)),),
    )  # fmt: skip
    return [elect.error_code, elect.replica_election_results[0].partition_result[0].error_code,
            elect_v0.replica_election_results[0].partition_result[0].error_code,
            reassign.error_code, listed.error_code,
            moved.results[0].partitions[0].error_code]  # fmt: skip
