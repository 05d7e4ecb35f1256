"""KIP-932's share-group offset APIs, as `kafka-share-groups --describe`, `--reset-offsets`
and `--delete-offsets` use them: DescribeShareGroupOffsets, AlterShareGroupOffsets and
DeleteShareGroupOffsets (the rules: kop/groups/share/state.py and offsets.py; D30).

A client's request goes to the group's coordinator: the group is named in the client's
tenant and authorized first (`group_key`; Kafka's DESCRIBE, READ and DELETE on the group
are one check in kop), each topic after (DESCRIBE to describe, READ otherwise), then each
partition's leader does its part. The same requests from another kop instance (proven by
`KOP-PEER`, never by a client id) carry a leader's part: the group by kop's key, topics by
their full Pulsar names, answered for the partitions this instance leads.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kio.schema.alter_share_group_offsets.v0.request import AlterShareGroupOffsetsRequest
from kio.schema.alter_share_group_offsets.v0.response import (
    AlterShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponsePartition,
    AlterShareGroupOffsetsResponseTopic,
)
from kio.schema.delete_share_group_offsets.v0.request import DeleteShareGroupOffsetsRequest
from kio.schema.delete_share_group_offsets.v0.response import (
    DeleteShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponseTopic,
)
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
)
from kio.schema.describe_share_group_offsets.v1.response import (
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroup,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from kop.api.context import RequestContext, Services, topic_for
from kop.api.groups import group_key
from kop.api.routes import Later, Route
from kop.groups.share.offsets import ShareTarget
from kop.groups.share.state import ABSENT, StartOffset
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.sasl.peers import is_instance as is_peer
from kop.security.authorizer import TopicOp
from kop.topics.catalog import TopicView

T = TypeVar("T")
_NO_OFFSETS = KafkaError(
    ErrorCode.unknown_topic_or_partition, "There is no offset information to delete."
)


def _from_peer(services: Services, ctx: RequestContext) -> bool:
    return is_peer(ctx.principal, services.ownership.instances())


async def _view(
    services: Services, ctx: RequestContext, name: str, op: TopicOp
) -> TopicView | None:
    """The topic, if the principal may `op` it (TOPIC_AUTHORIZATION_FAILED, asked before
    whether it exists) and it exists."""
    topic = topic_for(ctx, name)
    if not await ctx.access.topic(topic, op):
        raise KafkaError(
            ErrorCode.topic_authorization_failed, f"not authorized to {op.value} {name}"
        )
    return await services.catalog.describe(topic)


def _target(view: TopicView, index: int) -> ShareTarget:
    return ShareTarget(
        view.topic.full, index, view.partition_topic(index), view.compacted,
        view.compacted_expire_ms,
    )  # fmt: skip


async def _coordinated(services: Services, ctx: RequestContext, group_id: str) -> str:
    key = await group_key(services, ctx, group_id)
    services.groups.check(key)
    return key


# -- DescribeShareGroupOffsets ----------------------------------------------------------


async def describe(
    services: Services, ctx: RequestContext, request: DescribeShareGroupOffsetsRequest
) -> Later[DescribeShareGroupOffsetsResponse]:
    async def answer() -> DescribeShareGroupOffsetsResponse:
        led = _from_peer(services, ctx)
        groups = [
            await (_describe_led if led else _describe_group)(services, ctx, g)
            for g in request.groups
        ]
        return DescribeShareGroupOffsetsResponse(throttle_time=NO_THROTTLE, groups=tuple(groups))

    return Later(answer())


async def _describe_group(
    services: Services, ctx: RequestContext, g: DescribeShareGroupOffsetsRequestGroup
) -> DescribeShareGroupOffsetsResponseGroup:
    try:
        key = await _coordinated(services, ctx, g.group_id)
    except KafkaError as exc:
        return _described_group(g.group_id, [], exc)
    every = g.topics is None  # every topic the group has state on that the principal sees
    if g.topics is None:
        known = services.groups.share.get(key)
        names = (set(known.topics) | known.offset_topics) if known is not None else set()
        asked: list[tuple[str, tuple[int, ...] | None]] = [(n, None) for n in sorted(names)]
    else:
        asked = [(t.topic_name, tuple(int(p) for p in t.partitions)) for t in g.topics]
    topics = []
    targets: dict[tuple[str, int], ShareTarget] = {}
    views: dict[str, TopicView | None] = {}
    parts_of: dict[str, tuple[int, ...]] = {}
    for name, parts in asked:
        try:
            view = views[name] = await _view(services, ctx, name, TopicOp.DESCRIBE)
        except KafkaError as exc:
            if not every:  # asked for: refused by partition, as Kafka does
                topics.append(_described_topic(name, None, dict.fromkeys(parts or (), exc)))
            continue
        count = view.partitions if view is not None else 0
        parts_of[name] = tuple(range(count)) if parts is None else parts
        for p in parts_of[name]:
            if 0 <= p < count and view is not None:
                targets[(name, p)] = _target(view, p)
    found = await services.share_offsets.describe(key, list(targets.values()))
    for name, _parts in asked:
        if name not in views:
            continue
        view = views[name]
        outcome = {
            p: found.get(targets[(name, p)], ABSENT) if (name, p) in targets else ABSENT
            for p in parts_of[name]
        }
        if every:  # only where the group has state, as Kafka lists them
            outcome = {p: o for p, o in outcome.items() if o != ABSENT}
            if not outcome:
                continue
        topics.append(_described_topic(name, view, outcome))
    return _described_group(g.group_id, topics)


async def _describe_led(
    services: Services, ctx: RequestContext, g: DescribeShareGroupOffsetsRequestGroup
) -> DescribeShareGroupOffsetsResponseGroup:
    """A coordinator asks for the partitions this instance leads."""
    topics = []
    for t in g.topics or ():
        try:
            view = await _led_view(services, ctx, t.topic_name)
        except KafkaError as exc:
            topics.append(_described_topic(t.topic_name, None, {int(p): exc for p in t.partitions}))
            continue
        outcome: dict[int, StartOffset | KafkaError] = {}
        for p in t.partitions:
            outcome[int(p)] = await _led(
                view,
                int(p),
                functools.partial(services.share_offsets.describe_here, g.group_id),
            )
        topics.append(_described_topic(t.topic_name, view, outcome))
    return _described_group(g.group_id, topics)


def _described_topic(
    name: str, view: TopicView | None, outcome: dict[int, StartOffset | KafkaError]
) -> DescribeShareGroupOffsetsResponseTopic:
    partitions = []
    for index, o in sorted(outcome.items()):
        if isinstance(o, KafkaError):
            partitions.append(DescribeShareGroupOffsetsResponsePartition(
                partition_index=i32(index), start_offset=i64(-1), leader_epoch=i32(0),
                lag=i64(-1), error_code=o.code, error_message=o.message,
            ))  # fmt: skip
        else:
            partitions.append(DescribeShareGroupOffsetsResponsePartition(
                partition_index=i32(index), start_offset=i64(o.start_offset),
                leader_epoch=i32(o.leader_epoch), lag=i64(o.lag), error_code=ErrorCode.none,
            ))  # fmt: skip
    return DescribeShareGroupOffsetsResponseTopic(
        topic_name=TopicName(name),
        topic_id=view.topic_id if view is not None else None,
        partitions=tuple(partitions),
    )


def _described_group(
    group_id: GroupId, topics: list[DescribeShareGroupOffsetsResponseTopic],
    error: KafkaError | None = None,
) -> DescribeShareGroupOffsetsResponseGroup:  # fmt: skip
    return DescribeShareGroupOffsetsResponseGroup(
        group_id=group_id, topics=tuple(topics),
        error_code=error.code if error else ErrorCode.none,
        error_message=error.message if error else None,
    )  # fmt: skip


# -- AlterShareGroupOffsets ----------------------------------------------------------------


async def alter(
    services: Services, ctx: RequestContext, request: AlterShareGroupOffsetsRequest
) -> Later[AlterShareGroupOffsetsResponse]:
    async def answer() -> AlterShareGroupOffsetsResponse:
        try:
            if _from_peer(services, ctx):
                return _altered(await _alter_led(services, ctx, request))
            return _altered(await _alter_group(services, ctx, request))
        except KafkaError as exc:
            return _altered([], exc)

    return Later(answer())


Altered = tuple[str, TopicView | None, dict[int, KafkaError | None]]


async def _alter_group(
    services: Services, ctx: RequestContext, request: AlterShareGroupOffsetsRequest
) -> list[Altered]:
    key = await _coordinated(services, ctx, request.group_id)
    held = services.groups.share.hold(key)
    asked: list[tuple[str, TopicView | None, dict[int, KafkaError | None], dict[int, ShareTarget]]]
    asked = []
    offsets: dict[ShareTarget, int] = {}
    for t in request.topics:
        indexes = [int(p.partition_index) for p in t.partitions]
        try:
            view = await _view(services, ctx, t.topic_name, TopicOp.CONSUME)
        except KafkaError as exc:
            asked.append((t.topic_name, None, dict.fromkeys(indexes, exc), {}))
            continue
        refused: dict[int, KafkaError | None] = {}
        targets: dict[int, ShareTarget] = {}
        for p in t.partitions:
            index = int(p.partition_index)
            if view is None or not 0 <= index < view.partitions:
                refused[index] = KafkaError(
                    ErrorCode.unknown_topic_or_partition, f"{t.topic_name} has no partition {index}"
                )
            else:
                targets[index] = _target(view, index)
                offsets[targets[index]] = int(p.start_offset)
        asked.append((t.topic_name, view, refused, targets))
    held.offset_topics.update(name for name, view, _r, targets in asked if view and targets)
    done = await services.share_offsets.alter(key, offsets)
    return [
        (name, view, {**refused, **{i: done.get(target) for i, target in targets.items()}})
        for name, view, refused, targets in asked
    ]


async def _alter_led(
    services: Services, ctx: RequestContext, request: AlterShareGroupOffsetsRequest
) -> list[Altered]:
    out: list[Altered] = []
    for t in request.topics:
        view = await _led_view(services, ctx, t.topic_name)
        result: dict[int, KafkaError | None] = {}
        for p in t.partitions:
            here = functools.partial(_alter_here, services, request.group_id, int(p.start_offset))
            result[int(p.partition_index)] = await _led(view, int(p.partition_index), here)
        out.append((t.topic_name, view, result))
    return out


def _altered(
    topics: list[Altered], error: KafkaError | None = None
) -> AlterShareGroupOffsetsResponse:
    responses = tuple(
        AlterShareGroupOffsetsResponseTopic(
            topic_name=TopicName(name),
            topic_id=view.topic_id if view is not None else None,
            partitions=tuple(
                AlterShareGroupOffsetsResponsePartition(
                    partition_index=i32(index),
                    error_code=e.code if e else ErrorCode.none,
                    error_message=e.message if e else None,
                )
                for index, e in sorted(result.items())
            ),
        )
        for name, view, result in topics
    )
    return AlterShareGroupOffsetsResponse(
        throttle_time=NO_THROTTLE, error_code=error.code if error else ErrorCode.none,
        error_message=error.message if error else None, responses=responses,
    )  # fmt: skip


# -- DeleteShareGroupOffsets ---------------------------------------------------------------


async def delete(
    services: Services, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
) -> Later[DeleteShareGroupOffsetsResponse]:
    async def answer() -> DeleteShareGroupOffsetsResponse:
        try:
            if _from_peer(services, ctx):
                return _deleted(await _delete_led(services, ctx, request))
            return _deleted(await _delete_group(services, ctx, request))
        except KafkaError as exc:
            return _deleted([], exc)

    return Later(answer())


Deleted = tuple[str, TopicView | None, KafkaError | None]


async def _delete_group(
    services: Services, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
) -> list[Deleted]:
    key = await _coordinated(services, ctx, request.group_id)
    known = services.groups.share.check_empty(key)
    out: list[Deleted] = []
    any_state = False
    for t in request.topics:
        try:
            view = await _view(services, ctx, t.topic_name, TopicOp.CONSUME)
        except KafkaError as exc:
            out.append((t.topic_name, None, exc))
            continue
        if view is None:
            out.append((t.topic_name, None, KafkaError(
                ErrorCode.unknown_topic_or_partition, f"no topic {t.topic_name!r}"
            )))  # fmt: skip
            continue
        targets = [_target(view, i) for i in range(view.partitions)]
        outcome = await services.share_offsets.delete(key, targets)
        if isinstance(outcome, KafkaError):
            out.append((t.topic_name, view, outcome))
        elif outcome:
            any_state = True
            out.append((t.topic_name, view, None))
            if known is not None:
                known.offset_topics.discard(t.topic_name)
        else:
            out.append((t.topic_name, view, _NO_OFFSETS))
    if known is None and not any_state:
        raise KafkaError(ErrorCode.group_id_not_found, f"Group {request.group_id} not found.")
    return out


async def _delete_led(
    services: Services, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
) -> list[Deleted]:
    """Every partition of each topic this instance leads."""
    out: list[Deleted] = []
    for t in request.topics:
        view = await _led_view(services, ctx, t.topic_name)
        found: list[bool | KafkaError] = []
        for index in range(view.partitions if view is not None else 0):
            if view is not None and services.ownership.mine(view.partition_topic(index)):
                found.append(
                    await _led(
                        view,
                        index,
                        functools.partial(services.share_offsets.delete_here, request.group_id),
                    )
                )
        failed = [f for f in found if isinstance(f, KafkaError)]
        if failed:
            out.append((t.topic_name, view, failed[0]))
        elif any(found):
            out.append((t.topic_name, view, None))
        else:
            out.append((t.topic_name, view, _NO_OFFSETS))
    return out


def _deleted(
    topics: list[Deleted], error: KafkaError | None = None
) -> DeleteShareGroupOffsetsResponse:
    return DeleteShareGroupOffsetsResponse(
        throttle_time=NO_THROTTLE, error_code=error.code if error else ErrorCode.none,
        error_message=error.message if error else None,
        responses=tuple(
            DeleteShareGroupOffsetsResponseTopic(
                topic_name=TopicName(name), topic_id=view.topic_id if view is not None else None,
                error_code=e.code if e else ErrorCode.none, error_message=e.message if e else None,
            )
            for name, view, e in topics
        ),
    )  # fmt: skip


async def _alter_here(services: Services, key: str, offset: int, target: ShareTarget) -> None:
    await services.share_offsets.alter_here(key, target, offset)


# -- a leader's part -------------------------------------------------------------------------


async def _led_view(services: Services, ctx: RequestContext, name: str) -> TopicView | None:
    """The topic a peer names by its full Pulsar name (any tenant's: a peer is kop)."""
    return await services.catalog.describe(topic_for(ctx, name))


async def _led(
    view: TopicView | None, index: int, call: Callable[[ShareTarget], Awaitable[T]]
) -> T | KafkaError:
    if view is None or not 0 <= index < view.partitions:
        return KafkaError(ErrorCode.unknown_topic_or_partition, f"no partition {index}")
    try:
        return await call(_target(view, index))
    except KafkaError as exc:
        return exc


ROUTES = (
    Route(
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsResponse,
        describe,
    ),
    Route(
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        AlterShareGroupOffsetsRequest,
        AlterShareGroupOffsetsResponse,
        alter,
    ),
    Route(
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
        DeleteShareGroupOffsetsRequest,
        DeleteShareGroupOffsetsResponse,
        delete,
    ),
)
