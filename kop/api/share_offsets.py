"""KIP-932's share-group offset APIs, as `kafka-share-groups --describe`, `--reset-offsets`
and `--delete-offsets` use them: DescribeShareGroupOffsets, AlterShareGroupOffsets and
DeleteShareGroupOffsets (the rules: kop/groups/share/state.py and offsets.py; D30).

A client's request goes to the group's coordinator: the group is named in the client's
tenant and authorized first (`group_key`; Kafka's DESCRIBE, READ and DELETE on the group
are one check in kop), each topic after (DESCRIBE to describe, READ otherwise), then each
partition's leader does its part. The same requests from another kop instance (proven by
`KOP-PEER`, never by a client id) carry a leader's part: the group by kop's key, topics by
their full Pulsar names, answered for the partitions this instance leads
(`share_offset_leader.py`). The answers are built in `share_offset_answers.py`.
"""

from __future__ import annotations

from kio.schema.alter_share_group_offsets.v0.request import AlterShareGroupOffsetsRequest
from kio.schema.alter_share_group_offsets.v0.response import (
    AlterShareGroupOffsetsResponse,
)
from kio.schema.delete_share_group_offsets.v0.request import DeleteShareGroupOffsetsRequest
from kio.schema.delete_share_group_offsets.v0.response import (
    DeleteShareGroupOffsetsResponse,
)
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
)
from kio.schema.describe_share_group_offsets.v1.response import (
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroup,
)

from kop.api.context import RequestContext, Services, topic_for
from kop.api.groups import group_key
from kop.api.routes import Later, Route
from kop.api.share_offset_answers import (
    NO_OFFSETS,
    Altered,
    Deleted,
    altered,
    deleted,
    described_group,
    described_topic,
    target,
)
from kop.api.share_offset_leader import alter_led, delete_led, describe_led
from kop.groups.share.offsets import ShareTarget
from kop.groups.share.state import ABSENT
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.sasl.peers import is_instance as is_peer
from kop.security.authorizer import TopicOp
from kop.topics.catalog import TopicView


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
            await (describe_led if led else _describe_group)(services, ctx, g)
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
        return described_group(g.group_id, [], exc)
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
                topics.append(described_topic(name, None, dict.fromkeys(parts or (), exc)))
            continue
        count = view.partitions if view is not None else 0
        parts_of[name] = tuple(range(count)) if parts is None else parts
        for p in parts_of[name]:
            if 0 <= p < count and view is not None:
                targets[(name, p)] = target(view, p)
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
        topics.append(described_topic(name, view, outcome))
    return described_group(g.group_id, topics)


# -- AlterShareGroupOffsets ----------------------------------------------------------------


async def alter(
    services: Services, ctx: RequestContext, request: AlterShareGroupOffsetsRequest
) -> Later[AlterShareGroupOffsetsResponse]:
    async def answer() -> AlterShareGroupOffsetsResponse:
        try:
            if _from_peer(services, ctx):
                return altered(await alter_led(services, ctx, request))
            return altered(await _alter_group(services, ctx, request))
        except KafkaError as exc:
            return altered([], exc)

    return Later(answer())


async def _alter_group(
    services: Services, ctx: RequestContext, request: AlterShareGroupOffsetsRequest
) -> list[Altered]:
    key = await _coordinated(services, ctx, request.group_id)
    before = services.groups.share.snapshot(key)
    services.groups.share.hold(key)
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
                targets[index] = target(view, index)
                offsets[targets[index]] = int(p.start_offset)
        asked.append((t.topic_name, view, refused, targets))
    await services.groups.share.offset_topics(
        key, before, added=[name for name, view, _r, targets in asked if view and targets]
    )
    done = await services.share_offsets.alter(key, offsets)
    return [
        (name, view, {**refused, **{i: done.get(target) for i, target in targets.items()}})
        for name, view, refused, targets in asked
    ]


# -- DeleteShareGroupOffsets ---------------------------------------------------------------


async def delete(
    services: Services, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
) -> Later[DeleteShareGroupOffsetsResponse]:
    async def answer() -> DeleteShareGroupOffsetsResponse:
        try:
            if _from_peer(services, ctx):
                return deleted(await delete_led(services, ctx, request))
            return deleted(await _delete_group(services, ctx, request))
        except KafkaError as exc:
            return deleted([], exc)

    return Later(answer())


async def _delete_group(
    services: Services, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
) -> list[Deleted]:
    key = await _coordinated(services, ctx, request.group_id)
    known = services.groups.share.check_empty(key)
    before = services.groups.share.snapshot(key)
    gone: list[str] = []
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
        targets = [target(view, i) for i in range(view.partitions)]
        outcome = await services.share_offsets.delete(key, targets)
        if isinstance(outcome, KafkaError):
            out.append((t.topic_name, view, outcome))
        elif outcome:
            any_state = True
            out.append((t.topic_name, view, None))
            gone.append(t.topic_name)
        else:
            out.append((t.topic_name, view, NO_OFFSETS))
    if known is None and not any_state:
        raise KafkaError(ErrorCode.group_id_not_found, f"Group {request.group_id} not found.")
    if known is not None and gone:
        await services.groups.share.offset_topics(key, before, removed=gone)
    return out


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
