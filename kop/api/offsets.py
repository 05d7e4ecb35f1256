"""OffsetCommit and OffsetDelete: committed offsets of groups, stored in the offsets
topic and acknowledged only once Pulsar persisted them (OffsetFetch reads them back:
kop/api/offset_fetch.py), and the partition lists they share with OffsetFetch and
TxnOffsetCommit.

OffsetCommit v2-4 may carry a retention time the newest request has no field for
(`Commit`)."""

from __future__ import annotations

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
from kio.schema.types import TopicName
from kio.static.primitive import i32

from kop.api.context import RequestContext, Services, existing_topic, topic_for
from kop.api.groups import group_key
from kop.api.routes import Now, Route
from kop.groups.types import CommittedOffset, GroupState, TopicPartition
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import upgrade
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
        code = await services.groups.commits.commit(
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


async def may_read(ctx: RequestContext, name: str, group_id: str) -> bool:
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
            if codes[tp] is ErrorCode.none and not await may_read(ctx, tp.topic, request.group_id):
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
    Route(ApiKey.OFFSET_DELETE, OffsetDeleteRequest, OffsetDeleteResponse, offset_delete),
)
