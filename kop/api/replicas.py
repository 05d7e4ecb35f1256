"""The replica-management APIs, answered as a Kafka cluster whose partitions each have
one replica answers them: ElectLeaders, AlterPartitionReassignments,
ListPartitionReassignments and AlterReplicaLogDirs. Tools call them
(`kafka-leader-election`, `kafka-reassign-partitions --list`, balancers, kafka-python's
admin client); "unsupported" breaks those tools where Kafka's answers do not.

A partition's one replica is the instance that owns it (rendezvous over the live
instances, docs/decisions.md D15), which is always its leader: an election is never
needed. No reassignment is ever in progress: kop places partitions itself, so a move to
another broker is refused with the reason, while "reassigning" a partition to the
broker that holds it is the no-op Kafka also answers with success. A partition's log
directory is its topic's Pulsar namespace (DescribeLogDirs): it cannot move to
another. All four are cluster operations, for superusers (Kafka's CLUSTER ALTER or
DESCRIBE), and a refused principal costs kop no look-up of what it named."""

from __future__ import annotations

from collections.abc import Callable

from kio.schema.alter_partition_reassignments.v1.request import (
    AlterPartitionReassignmentsRequest,
)
from kio.schema.alter_partition_reassignments.v1.response import (
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from kio.schema.alter_replica_log_dirs.v2.request import AlterReplicaLogDirsRequest
from kio.schema.alter_replica_log_dirs.v2.response import (
    AlterReplicaLogDirPartitionResult,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirTopicResult,
)
from kio.schema.elect_leaders.v2.request import ElectLeadersRequest
from kio.schema.elect_leaders.v2.response import (
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)
from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest
from kio.schema.list_partition_reassignments.v0.response import ListPartitionReassignmentsResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from kop.api.context import RequestContext, Services, existing_topic
from kop.api.internal_topics import is_internal
from kop.api.routes import Now, Route
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE

_REFUSED = "kop places partitions over its live instances (rendezvous): a partition cannot be moved"


# A topic's partitions as these APIs see them: index -> the node id of its one replica
# (-1: no live instance), or None for a partition that does not exist.
Placement = Callable[[int], int | None]


async def _placement(services: Services, ctx: RequestContext, name: str) -> tuple[Placement, str]:
    """Where the topic's partitions are, and its log directory (its Pulsar namespace;
    "" for none). `__consumer_offsets` (listed in Metadata) is placed with the offsets
    topic's partitions; any other name is a topic of the client's namespace, or none."""
    if is_internal(name):
        count = services.offsets_topic_partitions
        return (
            lambda i: _node(services, services.offsets_partition(i)) if 0 <= i < count else None
        ), ""
    try:
        view = await existing_topic(services, ctx, name)
    except KafkaError:
        return (lambda _i: None), ""
    where = f"pulsar://{view.topic.namespace.path}"
    return (
        lambda i: _node(services, view.partition_topic(i)) if 0 <= i < view.partitions else None
    ), where


def _node(services: Services, partition_topic: str) -> int:
    owner = services.ownership.owner(partition_topic)
    return -1 if owner is None else owner.node_id


async def elect_leaders(
    services: Services, ctx: RequestContext, request: ElectLeadersRequest
) -> Now[ElectLeadersResponse]:
    """Every partition already has its one replica as leader: ELECTION_NOT_NEEDED for
    each one named; for "all partitions" (null), no result, as Kafka leaves out the
    partitions that needed none. A refused principal gets the refusal at the top and
    for each partition named (v0 answers have no top-level code, and Kafka's schema does
    not let it be dropped: it is set from v1 only), as from Kafka."""
    denied = not await ctx.access.cluster()
    results = []
    for t in request.topic_partitions or ():
        if denied:
            parts = [_elected(i, ErrorCode.cluster_authorization_failed, "for superusers only")
                     for i in t.partitions]  # fmt: skip
        else:
            leader, _ = await _placement(services, ctx, t.topic)
            parts = [_election(i, leader(i)) for i in t.partitions]
        results.append(ReplicaElectionResult(topic=t.topic, partition_result=tuple(parts)))
    top = ErrorCode.cluster_authorization_failed if denied else ErrorCode.none
    return Now(
        ElectLeadersResponse(
            throttle_time=NO_THROTTLE,
            error_code=top if ctx.api_version >= 1 else ErrorCode.none,
            replica_election_results=tuple(results),
        )
    )


def _election(index: int, node: int | None) -> PartitionResult:
    if node is None:
        return _elected(index, ErrorCode.unknown_topic_or_partition, "no such partition")
    if node < 0:
        return _elected(index, ErrorCode.leader_not_available, "no kop instance is alive")
    return _elected(index, ErrorCode.election_not_needed, "the only replica is the leader")


def _elected(index: int, code: ErrorCode, message: str) -> PartitionResult:
    return PartitionResult(partition_id=i32(index), error_code=code, error_message=message)


async def alter_partition_reassignments(
    services: Services, ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> Now[AlterPartitionReassignmentsResponse]:
    """A cancel finds nothing to cancel; a target of the one broker that holds the
    partition is done already; any other target is refused with the reason."""
    if not await ctx.access.cluster():
        return Now(
            AlterPartitionReassignmentsResponse(
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode.cluster_authorization_failed,
                error_message="cluster operations are for superusers",
                responses=(),
                allow_replication_factor_change=True,
            )
        )
    responses = []
    for t in request.topics:
        leader, _ = await _placement(services, ctx, t.name)
        parts = []
        for p in t.partitions:
            code, message = _reassignment(leader(p.partition_index), p.replicas)
            parts.append(
                ReassignablePartitionResponse(
                    partition_index=p.partition_index, error_code=code, error_message=message
                )
            )
        responses.append(ReassignableTopicResponse(name=t.name, partitions=tuple(parts)))
    return Now(
        AlterPartitionReassignmentsResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            responses=tuple(responses),
            allow_replication_factor_change=True,
        )
    )


def _reassignment(
    node: int | None, replicas: tuple[BrokerId, ...] | None
) -> tuple[ErrorCode, str | None]:
    if node is None:
        return ErrorCode.unknown_topic_or_partition, "no such partition"
    if replicas is None:
        return ErrorCode.no_reassignment_in_progress, "no reassignment is in progress"
    if len(replicas) != 1:
        return ErrorCode.invalid_replication_factor, "every kop partition has one replica"
    if replicas[0] == node:
        return ErrorCode.none, None
    return ErrorCode.invalid_replica_assignment, _REFUSED


async def list_partition_reassignments(
    services: Services, ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> Now[ListPartitionReassignmentsResponse]:
    if not await ctx.access.cluster():
        return Now(
            ListPartitionReassignmentsResponse(
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode.cluster_authorization_failed,
                error_message="cluster operations are for superusers",
                topics=(),
            )
        )
    return Now(
        ListPartitionReassignmentsResponse(
            throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, topics=()
        )
    )


async def alter_replica_log_dirs(
    services: Services, ctx: RequestContext, request: AlterReplicaLogDirsRequest
) -> Now[AlterReplicaLogDirsResponse]:
    """A partition stays in its topic's Pulsar namespace: moving it there is done
    already, anywhere else LOG_DIR_NOT_FOUND; a partition another instance serves is
    REPLICA_NOT_AVAILABLE here, as on a Kafka broker that does not host it."""
    denied = not await ctx.access.cluster()
    me = services.broker.node_id
    by_topic: dict[TopicName, list[AlterReplicaLogDirPartitionResult]] = {}
    for d in request.dirs:
        for t in d.topics:
            parts = by_topic.setdefault(t.name, [])
            if denied:
                code = ErrorCode.cluster_authorization_failed
                parts.extend(_moved(i, code) for i in t.partitions)
                continue
            leader, where = await _placement(services, ctx, t.name)
            for index in t.partitions:
                parts.append(_moved(index, _move(leader(index), where, d.path, me)))
    results = tuple(
        AlterReplicaLogDirTopicResult(topic_name=n, partitions=tuple(ps))
        for n, ps in by_topic.items()
    )
    return Now(AlterReplicaLogDirsResponse(throttle_time=NO_THROTTLE, results=results))


ROUTES = (
    Route(ApiKey.ELECT_LEADERS, ElectLeadersRequest, ElectLeadersResponse, elect_leaders),
    Route(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponse,
        alter_partition_reassignments,
    ),
    Route(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
        list_partition_reassignments,
    ),
    Route(
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        AlterReplicaLogDirsRequest,
        AlterReplicaLogDirsResponse,
        alter_replica_log_dirs,
    ),
)


def _moved(index: int, code: ErrorCode) -> AlterReplicaLogDirPartitionResult:
    return AlterReplicaLogDirPartitionResult(partition_index=i32(index), error_code=code)


def _move(node: int | None, where: str, path: str, me: int) -> ErrorCode:
    if node is None:
        return ErrorCode.unknown_topic_or_partition
    if node != me:
        return ErrorCode.replica_not_available
    return ErrorCode.none if where and path == where else ErrorCode.log_dir_not_found
