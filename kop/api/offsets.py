"""OffsetCommit, OffsetFetch and OffsetDelete: committed offsets of groups, stored
in the offsets topic and acknowledged only once Pulsar persisted them."""

from __future__ import annotations

from typing import Any

from kop.api.context import RequestContext, Response, Services, existing_topic, topic_for
from kop.api.groups import group_key, group_service
from kop.groups.types import CommittedOffset, GroupState, TopicPartition
from kop.protocol.errors import ErrorCode, KafkaError
from kop.security.authorizer import TopicOp
from kop.storage.types import StorageError
from kop.topics.catalog import TopicView

MAX_METADATA_BYTES = 4096  # offset.metadata.max.bytes


async def offset_commit(services: Services, ctx: RequestContext, request: Any) -> Response:
    codes: dict[TopicPartition, ErrorCode] = {}
    offsets: dict[TopicPartition, CommittedOffset] = {}
    try:
        key = await group_key(services, ctx, request.group_id)
    except KafkaError as exc:
        return refused_all(request, exc.code)
    await requested_offsets(services, ctx, request.topics, request.group_id, codes, offsets)
    try:
        code = await group_service(services).commit(
            key,
            request.generation_id_or_member_epoch,
            request.member_id,
            getattr(request, "group_instance_id", None),
            offsets,
            _retention_ms(request),
        )
        unknown = key not in group_service(services).coordinator.groups
        if code is ErrorCode.illegal_generation and ctx.api_version >= 9 and unknown:
            code = ErrorCode.group_id_not_found  # Kafka, from v9 on
    except KafkaError as exc:
        code = exc.code
    codes.update({tp: code for tp in offsets})
    return {"throttle_time": 0, "topics": codes_by_topic(codes)}


def refused_all(request: Any, code: ErrorCode) -> Response:
    """A commit refused as a whole: `code` for every partition it named."""
    every = [
        TopicPartition(t.name, p.partition_index) for t in request.topics for p in t.partitions
    ]
    return {"throttle_time": 0, "topics": codes_by_topic(dict.fromkeys(every, code))}


async def requested_offsets(
    services: Services, ctx: RequestContext, topics: Any, group_id: str,
    codes: dict[TopicPartition, ErrorCode], offsets: dict[TopicPartition, CommittedOffset],
) -> None:  # fmt: skip
    """A commit's offsets (into `offsets`), and the partitions refused on their own
    (into `codes`): not to be read by the principal, not there, metadata too large."""
    for t in topics:
        try:
            view = await _group_topic(services, ctx, t.name, group_id)
            partitions = view.partitions
        except KafkaError as exc:
            partitions, code = -1, exc.code
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            meta = p.committed_metadata
            if partitions < 0:
                codes[tp] = code
            elif not 0 <= p.partition_index < partitions:
                codes[tp] = ErrorCode.unknown_topic_or_partition
            elif meta is not None and len(meta.encode()) > MAX_METADATA_BYTES:
                codes[tp] = ErrorCode.offset_metadata_too_large
            else:
                epoch = getattr(p, "committed_leader_epoch", -1)
                offsets[tp] = CommittedOffset(p.committed_offset, epoch, meta)


async def _group_topic(
    services: Services, ctx: RequestContext, name: str, group_id: str
) -> TopicView:
    """A topic the group may commit on: `consume` there, under the group's subscription
    name (Pulsar's subscription permissions)."""
    topic = topic_for(ctx, name)
    if not await ctx.access.group_topic(topic, group_id):
        raise KafkaError(ErrorCode.topic_authorization_failed, f"not authorized to consume {name}")
    return await existing_topic(services, ctx, name, TopicOp.CONSUME)


def _retention_ms(request: Any) -> int | None:
    """OffsetCommit v2-4 may ask for its offsets to be kept this long (-1: the
    broker's offsets.retention.minutes), as Kafka honours it for those versions."""
    retention = getattr(request, "retention_time", None)
    if retention is None:
        return None
    ms = int(retention.total_seconds() * 1000)
    return ms if ms >= 0 else None


def codes_by_topic(codes: dict[TopicPartition, ErrorCode]) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, code in codes.items():
        topics.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "error_code": code}
        )
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]


async def offset_fetch(services: Services, ctx: RequestContext, request: Any) -> Response:
    """v8+ asks for several groups; earlier versions for one, answered at the top
    level. Both shapes are given; the version's schema keeps its own."""
    stable = getattr(request, "require_stable", False)
    if hasattr(request, "groups"):
        out = [await _fetch_group(services, ctx, g.group_id, g.topics, stable)
               for g in request.groups]  # fmt: skip
    else:
        out = [await _fetch_group(services, ctx, request.group_id, request.topics, stable)]
    first = out[0] if out else {"topics": [], "error_code": ErrorCode.none}
    return {
        "throttle_time": 0,
        "groups": out,
        "topics": first["topics"],
        "error_code": first["error_code"],
    }


async def _fetch_group(
    services: Services, ctx: RequestContext, group_id: str, topics: Any, require_stable: bool
) -> dict[str, Any]:
    """Committed offsets of the asked partitions (all the group has, when `topics`
    is null); -1 for a partition without one, as Kafka answers. Topics the principal
    may not read are left out of "all" and refused when asked for by name."""
    try:
        groups = group_service(services)
        key = await group_key(services, ctx, group_id)
        groups.check(key)
    except KafkaError as exc:
        return {"group_id": group_id, "topics": [], "error_code": exc.code}
    committed = groups.offsets.of(key)
    # KIP-447: a consumer asking for stable offsets is told to retry while a
    # transaction that committed offsets for the partition has not ended
    unstable = groups.pending.unstable(key) if require_stable else set()
    if topics is None:
        wanted = sorted(committed, key=lambda tp: (tp.topic, tp.partition))
    else:
        wanted = [TopicPartition(t.name, p) for t in topics for p in t.partition_indexes]
    allowed = {name: await _may_read(ctx, name, group_id) for name in {tp.topic for tp in wanted}}
    if topics is None:
        wanted = [tp for tp in wanted if allowed[tp.topic]]
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp in wanted:
        o = committed.get(tp) if allowed[tp.topic] else None
        code = ErrorCode.none if allowed[tp.topic] else ErrorCode.topic_authorization_failed
        if code is ErrorCode.none and tp in unstable:
            code = ErrorCode.unstable_offset_commit
        by_topic.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "committed_offset": o.offset if o else -1,
                "committed_leader_epoch": o.leader_epoch if o else -1,
                "metadata": o.metadata if o else "",
                "error_code": code,
            }
        )
    return {
        "group_id": group_id,
        "error_code": ErrorCode.none,
        "topics": [{"name": n, "partitions": ps} for n, ps in by_topic.items()],
    }


async def _may_read(ctx: RequestContext, name: str, group_id: str) -> bool:
    try:
        return await ctx.access.group_topic(topic_for(ctx, name), group_id)
    except KafkaError:
        return True  # not a topic name at all: answered as before


async def offset_delete(services: Services, ctx: RequestContext, request: Any) -> Response:
    """As Kafka: a group's offsets go, except those of topics a member of a live
    consumer group subscribes to (GROUP_SUBSCRIBED_TO_TOPIC). A group whose
    subscriptions cannot be read keeps all of them; a live group of another
    protocol type (Connect's) keeps all of them with NON_EMPTY_GROUP."""
    tps = [TopicPartition(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    try:
        groups = group_service(services)
        key = await group_key(services, ctx, request.group_id)
        groups.check(key)
        g = groups.coordinator.groups.get(key)
        if g is None and not groups.offsets.of(key):
            raise KafkaError(ErrorCode.group_id_not_found)
        live = g is not None and g.state is not GroupState.EMPTY
        if g is not None and live and g.protocol_type != "consumer":
            raise KafkaError(ErrorCode.non_empty_group)  # Kafka's validateOffsetDelete
        held = g.subscribed_topics() if g is not None and live else set()
        codes = {
            tp: ErrorCode.none if held is not None and tp.topic not in held
            else ErrorCode.group_subscribed_to_topic
            for tp in tps
        }  # fmt: skip
        for tp in tps:
            if codes[tp] is ErrorCode.none and not await _may_read(ctx, tp.topic, request.group_id):
                codes[tp] = ErrorCode.topic_authorization_failed
        await groups.offsets.delete(key, [tp for tp, c in codes.items() if c is ErrorCode.none])
    except KafkaError as exc:
        return {"error_code": exc.code, "throttle_time": 0, "topics": []}
    except StorageError:
        return {"error_code": ErrorCode.coordinator_not_available, "throttle_time": 0, "topics": []}
    return {"error_code": ErrorCode.none, "throttle_time": 0, "topics": codes_by_topic(codes)}
