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
from typing import Any

from kop.api.context import RequestContext, Response, Services, existing_topic
from kop.api.internal_topics import is_internal
from kop.protocol.errors import ErrorCode, KafkaError

_REFUSED = "kop places partitions over its live instances (rendezvous): a partition cannot be moved"


# A topic's partitions as these APIs see them: index -> the node id of its one replica
# (-1: no live instance), or None for a partition that does not exist.
Placement = Callable[[int], int | None]


async def _placement(services: Services, ctx: RequestContext, name: str) -> tuple[Placement, str]:
    """Where the topic's partitions are, and its log directory (its Pulsar namespace;
    "" for none). `__consumer_offsets` (listed in Metadata) is placed with the offsets
    topic's partitions; any other name is a topic of the client's namespace, or none."""
    if is_internal(name):
        count = services.offsets_topic_partitions if services.groups is not None else 0
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
    owner = services.owners.owner(partition_topic)
    return -1 if owner is None else owner.node_id


async def elect_leaders(services: Services, ctx: RequestContext, request: Any) -> Response:
    """Every partition already has its one replica as leader: ELECTION_NOT_NEEDED for
    each one named; for "all partitions" (null), no result, as Kafka leaves out the
    partitions that needed none. A refused principal gets the refusal at the top and
    for each partition named (v0 answers have no top-level code), as from Kafka."""
    denied = not await ctx.access.cluster()
    results = []
    for t in request.topic_partitions or ():
        if denied:
            parts = [_elected(i, ErrorCode.cluster_authorization_failed, "for superusers only")
                     for i in t.partitions]  # fmt: skip
        else:
            leader, _ = await _placement(services, ctx, t.topic)
            parts = [_election(i, leader(i)) for i in t.partitions]
        results.append({"topic": t.topic, "partition_result": parts})
    top = ErrorCode.cluster_authorization_failed if denied else ErrorCode.none
    return {"throttle_time": 0, "error_code": top, "replica_election_results": results}


def _election(index: int, node: int | None) -> dict[str, Any]:
    if node is None:
        return _elected(index, ErrorCode.unknown_topic_or_partition, "no such partition")
    if node < 0:
        return _elected(index, ErrorCode.leader_not_available, "no kop instance is alive")
    return _elected(index, ErrorCode.election_not_needed, "the only replica is the leader")


def _elected(index: int, code: ErrorCode, message: str) -> dict[str, Any]:
    return {"partition_id": index, "error_code": code, "error_message": message}


async def alter_partition_reassignments(
    services: Services, ctx: RequestContext, request: Any
) -> Response:
    """A cancel finds nothing to cancel; a target of the one broker that holds the
    partition is done already; any other target is refused with the reason."""
    if not await ctx.access.cluster():
        return {"throttle_time": 0, "error_code": ErrorCode.cluster_authorization_failed,
                "error_message": "cluster operations are for superusers", "responses": (),
                "allow_replication_factor_change": True}  # fmt: skip
    responses = []
    for t in request.topics:
        leader, _ = await _placement(services, ctx, t.name)
        parts = []
        for p in t.partitions:
            code, message = _reassignment(leader(p.partition_index), p.replicas)
            parts.append(
                {"partition_index": p.partition_index, "error_code": code, "error_message": message}
            )
        responses.append({"name": t.name, "partitions": parts})
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
            "responses": responses, "allow_replication_factor_change": True}  # fmt: skip


def _reassignment(
    node: int | None, replicas: tuple[int, ...] | None
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
    services: Services, ctx: RequestContext, request: Any
) -> Response:
    if not await ctx.access.cluster():
        return {"throttle_time": 0, "error_code": ErrorCode.cluster_authorization_failed,
                "error_message": "cluster operations are for superusers", "topics": ()}  # fmt: skip
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "topics": ()}


async def alter_replica_log_dirs(services: Services, ctx: RequestContext, request: Any) -> Response:
    """A partition stays in its topic's Pulsar namespace: moving it there is done
    already, anywhere else LOG_DIR_NOT_FOUND; a partition another instance serves is
    REPLICA_NOT_AVAILABLE here, as on a Kafka broker that does not host it."""
    denied = not await ctx.access.cluster()
    me = services.broker.node_id
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for d in request.dirs:
        for t in d.topics:
            parts = by_topic.setdefault(t.name, [])
            if denied:
                code = ErrorCode.cluster_authorization_failed
                parts.extend({"partition_index": i, "error_code": code} for i in t.partitions)
                continue
            leader, where = await _placement(services, ctx, t.name)
            for index in t.partitions:
                code = _move(leader(index), where, d.path, me)
                parts.append({"partition_index": index, "error_code": code})
    results = [{"topic_name": n, "partitions": ps} for n, ps in by_topic.items()]
    return {"throttle_time": 0, "results": results}


def _move(node: int | None, where: str, path: str, me: int) -> ErrorCode:
    if node is None:
        return ErrorCode.unknown_topic_or_partition
    if node != me:
        return ErrorCode.replica_not_available
    return ErrorCode.none if where and path == where else ErrorCode.log_dir_not_found
