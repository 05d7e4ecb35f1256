"""OffsetFetch: a group's committed offsets, as Kafka shows them: of a topic the client
may not read, a named partition is answered TOPIC_AUTHORIZATION_FAILED and, when all are
asked for, left out. v1-7 ask for one group and are answered at the top level; the route
reads and writes that old shape (`_fetch_up`/`_fetch_down`)."""

from __future__ import annotations

import dataclasses
from typing import Any

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
from kio.schema.types import TopicName
from kio.static.primitive import i32, i64

from kop.api.context import RequestContext, Services
from kop.api.groups import group_key
from kop.api.offsets import may_read
from kop.api.routes import Now, Route
from kop.groups.consumer.offset_checks import fetch_allowed
from kop.groups.types import TopicPartition
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey, response_schema
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import Unrepresentable, downgrade, upgrade


async def handle(
    services: Services, ctx: RequestContext, request: OffsetFetchRequest
) -> Now[OffsetFetchResponse]:
    """v8+ ask for several groups; earlier versions for one (see `_fetch_up`)."""
    out = [await _fetch_group(services, ctx, g, request.require_stable) for g in request.groups]
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
    services: Services, ctx: RequestContext, asked: OffsetFetchRequestGroup, require_stable: bool
) -> OffsetFetchResponseGroup:
    """Committed offsets of the asked partitions (all the group has, when `topics`
    is null); -1 for a partition without one, as Kafka answers. Topics the principal
    may not read are left out of "all" and refused when asked for by name. A member of
    a KIP-848 group (v9+) names itself and its epoch, which must be current."""
    group_id, topics = asked.group_id, asked.topics
    try:
        groups = services.groups
        key = await group_key(services, ctx, group_id)
        groups.check(key)
        member = fetch_allowed(groups.consumer.get(key), asked.member_id, int(asked.member_epoch))
        if member is not ErrorCode.none:
            raise KafkaError(member)
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
    allowed = {name: await may_read(ctx, name, group_id) for name in {tp.topic for tp in wanted}}
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


ROUTES = (
    Route(
        ApiKey.OFFSET_FETCH,
        OffsetFetchRequest,
        OffsetFetchResponse,
        handle,
        up=_fetch_up,
        down=_fetch_down,
    ),
)
