"""OffsetCommit, OffsetFetch and OffsetDelete: committed offsets of groups, stored
in the offsets topic and acknowledged only once Pulsar persisted them.

OffsetCommit v2-4 may carry a retention time the newest request has no field for
(`Commit`); OffsetFetch v1-7 ask for one group and are answered at the top level
(`_fetch_up`/`_fetch_down`)."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kio.schema.offset_commit.v9.request import OffsetCommitRequest
from kio.schema.offset_commit.v9.response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from kio.schema.offset_delete.v0.request import OffsetDeleteRequest
from kio.schema.offset_delete.v0.response import (
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from kio.schema.offset_fetch.v7.response import OffsetFetchResponse as OffsetFetchV7
from kio.schema.offset_fetch.v7.response import (
    OffsetFetchResponsePartition as FlatPartition,
)
from kio.schema.offset_fetch.v7.response import OffsetFetchResponseTopic as FlatTopic
from kio.schema.offset_fetch.v9.request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kio.schema.offset_fetch.v9.response import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from kop.api.context import RequestContext, Services, existing_topic, topic_for
from kop.api.groups import group_key
from kop.api.routes import Now, Route
from kop.groups.types import CommittedOffset, GroupState, TopicPartition
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey, response_schema
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import Unrepresentable, downgrade, upgrade
from kop.security.authorizer import TopicOp
from kop.storage.types import StorageError
from kop.topics.catalog import TopicView

MAX_METADATA_BYTES = 4096  # offset.metadata.max.bytes

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Commit:
    """An OffsetCommit as its handler reads it: the newest request, and the retention
    time v2-4 may ask for in ms (None: the broker's offsets.retention.minutes). Kafka
    honours it for those versions and so does kop, but the newest request has no field
    to carry it to the handler."""

    request: OffsetCommitRequest
    retention_ms: int | None = None


def _commit_up(body: Any, version: int) -> Commit:
    retention = _retention_ms(body.retention_time) if version <= 4 else None
    return Commit(upgrade(body, OffsetCommitRequest), retention)


def _retention_ms(retention: datetime.timedelta) -> int | None:
    """OffsetCommit v2-4's retention time (-1: the broker's offsets.retention.minutes)."""
    ms = int(retention.total_seconds() * 1000)
    return ms if ms >= 0 else None


async def offset_commit(
    services: Services, ctx: RequestContext, commit: Commit
) -> Now[OffsetCommitResponse]:
    request = commit.request
    codes: dict[TopicPartition, ErrorCode] = {}
    offsets: dict[TopicPartition, CommittedOffset] = {}
    try:
        key = await group_key(services, ctx, request.group_id)
    except KafkaError as exc:
        return Now(_committed(dict.fromkeys(named_partitions(request.topics), exc.code)))
    await requested_offsets(services, ctx, request.topics, request.group_id, codes, offsets)
    try:
        code = await services.groups.commit(
            key,
            request.generation_id_or_member_epoch,
            request.member_id,
            request.group_instance_id,
            offsets,
            commit.retention_ms,
        )
        unknown = key not in services.groups.coordinator.groups
        if code is ErrorCode.illegal_generation and ctx.api_version >= 9 and unknown:
            code = ErrorCode.group_id_not_found  # Kafka, from v9 on
    except KafkaError as exc:
        code = exc.code
    codes.update({tp: code for tp in offsets})
    return Now(_committed(codes))


def _committed(codes: Mapping[TopicPartition, ErrorCode]) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        throttle_time=NO_THROTTLE,
        topics=tuple(
            OffsetCommitResponseTopic(
                name=TopicName(name),
                partitions=tuple(
                    OffsetCommitResponsePartition(partition_index=i32(p), error_code=c)
                    for p, c in parts
                ),
            )
            for name, parts in by_topic(codes).items()
        ),
    )


class IndexedPartition(Protocol):
    @property
    def partition_index(self) -> int: ...


class NamedTopic(Protocol):
    """A topic of a request that names partitions (OffsetCommit, OffsetDelete, ...)."""

    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[IndexedPartition]: ...


def named_partitions(topics: Iterable[NamedTopic]) -> list[TopicPartition]:
    """Every partition a commit's `topics` name, in their order."""
    return [TopicPartition(t.name, p.partition_index) for t in topics for p in t.partitions]


class CommittedPartition(Protocol):
    """A partition of OffsetCommit's or TxnOffsetCommit's request (the newest of each:
    older versions read with their defaults, a leader epoch of -1)."""

    @property
    def partition_index(self) -> int: ...
    @property
    def committed_offset(self) -> int: ...
    @property
    def committed_leader_epoch(self) -> int: ...
    @property
    def committed_metadata(self) -> str | None: ...


class CommittedTopic(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[CommittedPartition]: ...


async def requested_offsets(
    services: Services, ctx: RequestContext, topics: Iterable[CommittedTopic], group_id: str,
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
                offsets[tp] = CommittedOffset(p.committed_offset, p.committed_leader_epoch, meta)


async def _group_topic(
    services: Services, ctx: RequestContext, name: str, group_id: str
) -> TopicView:
    """A topic the group may commit on: `consume` there, under the group's subscription
    name (Pulsar's subscription permissions)."""
    topic = topic_for(ctx, name)
    if not await ctx.access.group_topic(topic, group_id):
        raise KafkaError(ErrorCode.topic_authorization_failed, f"not authorized to consume {name}")
    return await existing_topic(services, ctx, name, TopicOp.CONSUME)


def by_topic(codes: Mapping[TopicPartition, T]) -> dict[str, list[tuple[int, T]]]:
    """(partition, value) pairs per topic, in the order `codes` has them."""
    topics: dict[str, list[tuple[int, T]]] = {}
    for tp, value in codes.items():
        topics.setdefault(tp.topic, []).append((tp.partition, value))
    return topics


async def offset_fetch(
    services: Services, ctx: RequestContext, request: OffsetFetchRequest
) -> Now[OffsetFetchResponse]:
    """v8+ ask for several groups; earlier versions for one (see `_fetch_up`)."""
    out = [
        await _fetch_group(services, ctx, g.group_id, g.topics, request.require_stable)
        for g in request.groups
    ]
    return Now(OffsetFetchResponse(throttle_time=NO_THROTTLE, groups=tuple(out)))


def _fetch_up(body: Any, version: int) -> OffsetFetchRequest:
    """v1-7 name one group (`group_id`, `topics`) at the top level: a batch of one."""
    request = upgrade(body, OffsetFetchRequest)  # require_stable from v7, else False
    if version >= 8:
        return request
    topics = (
        None
        if body.topics is None  # all the group has (v2+)
        else tuple(upgrade(t, OffsetFetchRequestTopics) for t in body.topics)
    )
    group = OffsetFetchRequestGroup(group_id=body.group_id, topics=topics)
    return dataclasses.replace(request, groups=(group,))


def _fetch_down(answer: OffsetFetchResponse, version: int) -> object:
    """v1-7 answer their one group at the top level (an answer for more groups is
    refused). The top-level error code (v2+)
    and the leader epoch (v5+) are ignorable in Kafka's flat schema: older versions
    drop them, as Kafka does."""
    api = ApiKey.OFFSET_FETCH
    if version >= 8:
        return downgrade(answer, response_schema(api, version), api)
    if len(answer.groups) != 1:
        raise Unrepresentable(f"{len(answer.groups)} groups at version {version}")
    group = answer.groups[0]
    flat = OffsetFetchV7(
        throttle_time=answer.throttle_time,
        topics=tuple(
            FlatTopic(name=t.name, partitions=tuple(_flat(p, version) for p in t.partitions))
            for t in group.topics
        ),
        error_code=group.error_code if version >= 2 else ErrorCode.none,
    )
    return downgrade(flat, response_schema(api, version), api)


def _flat(p: OffsetFetchResponsePartitions, version: int) -> FlatPartition:
    return FlatPartition(
        partition_index=p.partition_index,
        committed_offset=p.committed_offset,
        committed_leader_epoch=p.committed_leader_epoch if version >= 5 else i32(-1),
        metadata=p.metadata,
        error_code=p.error_code,
    )


async def _fetch_group(
    services: Services,
    ctx: RequestContext,
    group_id: GroupId,
    topics: tuple[OffsetFetchRequestTopics, ...] | None,
    require_stable: bool,
) -> OffsetFetchResponseGroup:
    """Committed offsets of the asked partitions (all the group has, when `topics`
    is null); -1 for a partition without one, as Kafka answers. Topics the principal
    may not read are left out of "all" and refused when asked for by name."""
    try:
        groups = services.groups
        key = await group_key(services, ctx, group_id)
        groups.check(key)
    except KafkaError as exc:
        return OffsetFetchResponseGroup(group_id=group_id, topics=(), error_code=exc.code)
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
    by_name: dict[str, list[OffsetFetchResponsePartitions]] = {}
    for tp in wanted:
        o = committed.get(tp) if allowed[tp.topic] else None
        code = ErrorCode.none if allowed[tp.topic] else ErrorCode.topic_authorization_failed
        if code is ErrorCode.none and tp in unstable:
            code = ErrorCode.unstable_offset_commit
        by_name.setdefault(tp.topic, []).append(
            OffsetFetchResponsePartitions(
                partition_index=i32(tp.partition),
                committed_offset=i64(o.offset if o else -1),
                committed_leader_epoch=i32(o.leader_epoch if o else -1),
                metadata=o.metadata if o else "",
                error_code=code,
            )
        )
    return OffsetFetchResponseGroup(
        group_id=group_id,
        error_code=ErrorCode.none,
        topics=tuple(
            OffsetFetchResponseTopics(name=TopicName(name), partitions=tuple(parts))
            for name, parts in by_name.items()
        ),
    )


async def _may_read(ctx: RequestContext, name: str, group_id: str) -> bool:
    try:
        return await ctx.access.group_topic(topic_for(ctx, name), group_id)
    except KafkaError:
        return True  # not a topic name at all: answered as before


async def offset_delete(
    services: Services, ctx: RequestContext, request: OffsetDeleteRequest
) -> Now[OffsetDeleteResponse]:
    """As Kafka: a group's offsets go, except those of topics a member of a live
    consumer group subscribes to (GROUP_SUBSCRIBED_TO_TOPIC). A group whose
    subscriptions cannot be read keeps all of them; a live group of another
    protocol type (Connect's) keeps all of them with NON_EMPTY_GROUP."""
    tps = named_partitions(request.topics)
    try:
        groups = services.groups
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
        return Now(_deleted(exc.code, {}))
    except StorageError:
        return Now(_deleted(ErrorCode.coordinator_not_available, {}))
    return Now(_deleted(ErrorCode.none, codes))


def _deleted(code: ErrorCode, codes: Mapping[TopicPartition, ErrorCode]) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(
        error_code=code,
        throttle_time=NO_THROTTLE,
        topics=tuple(
            OffsetDeleteResponseTopic(
                name=TopicName(name),
                partitions=tuple(
                    OffsetDeleteResponsePartition(partition_index=i32(p), error_code=c)
                    for p, c in parts
                ),
            )
            for name, parts in by_topic(codes).items()
        ),
    )


ROUTES = (
    Route(
        ApiKey.OFFSET_COMMIT,
        Commit,
        OffsetCommitResponse,
        offset_commit,
        up=_commit_up,
    ),
    Route(
        ApiKey.OFFSET_FETCH,
        OffsetFetchRequest,
        OffsetFetchResponse,
        offset_fetch,
        up=_fetch_up,
        down=_fetch_down,
    ),
    Route(ApiKey.OFFSET_DELETE, OffsetDeleteRequest, OffsetDeleteResponse, offset_delete),
)
