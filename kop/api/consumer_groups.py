"""The KIP-848 consumer group protocol's APIs: ConsumerGroupHeartbeat and
ConsumerGroupDescribe (the rules: kop/groups/consumer/).

A group is named in the client's tenant and authorized first (`group_key`, GROUP
authorization as for classic groups). The topics a member names must be ones its
principal may DESCRIBE (TOPIC_AUTHORIZATION_FAILED otherwise, as Kafka 4.1+); a regex
matches only topics of the tenant the principal may describe, never internal ones.
What a client sends is bounded: subscribed names, the regex's length, owned partitions.
"""

from __future__ import annotations

import uuid

from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_describe.v1.response import (
    Assignment as DescribedAssignment,
)
from kio.schema.consumer_group_describe.v1.response import (
    ConsumerGroupDescribeResponse,
    DescribedGroup,
    Member,
)
from kio.schema.consumer_group_describe.v1.response import (
    TopicPartitions as DescribedPartitions,
)
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.consumer_group_heartbeat.v1.response import (
    Assignment,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i8, i32

from kop.api.context import RequestContext, Services, topic_for
from kop.api.group_topics import resolved
from kop.api.groups import group_key
from kop.api.routes import Later, Now, Route
from kop.groups.consumer.group import ConsumerGroup
from kop.groups.consumer.member import Assignment as Partitions
from kop.groups.consumer.requests import Answer, Heartbeat, Resolved
from kop.groups.consumer.topic_regex import InvalidRegex, compile_pattern
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE, milliseconds
from kop.security.authorizer import TopicOp

MAX_SUBSCRIBED_TOPICS = 10_000  # names one member may subscribe to
# ConsumerGroupDescribe v1's member type: a member of the consumer protocol, or one of
# the classic protocol inside the group (after an online upgrade, "upgraded: false")
CONSUMER_MEMBER_TYPE, CLASSIC_MEMBER_TYPE = i8(1), i8(0)


async def heartbeat(
    services: Services, ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
) -> Now[ConsumerGroupHeartbeatResponse] | Later[ConsumerGroupHeartbeatResponse]:
    """Later: the answer waits until what the heartbeat changed is persisted."""
    try:
        key = await group_key(services, ctx, request.group_id)
        hb = await _heartbeat(ctx, request, key)
        services.groups.check(key)
    except KafkaError as exc:
        return Now(_refused(exc))
    return Later(_beat(services, ctx, hb))


async def _heartbeat(ctx: RequestContext, r: ConsumerGroupHeartbeatRequest, key: str) -> Heartbeat:
    """The request as the rules read it, after the checks only the API layer can make:
    the member id a v1 client must choose, bounds, the regex, the names' rights."""
    if ctx.api_version >= 1 and not r.member_id:
        raise KafkaError(ErrorCode.invalid_request, "MemberId can't be empty.")
    topics = r.subscribed_topic_names
    if topics is not None and len(topics) > MAX_SUBSCRIBED_TOPICS:
        raise KafkaError(
            ErrorCode.invalid_request, f"at most {MAX_SUBSCRIBED_TOPICS} subscribed topics"
        )
    if r.subscribed_topic_regex:
        try:
            compile_pattern(r.subscribed_topic_regex)
        except InvalidRegex as exc:
            raise KafkaError(ErrorCode.invalid_regular_expression, str(exc)) from None
    for name in topics or ():
        if not await ctx.access.topic(topic_for(ctx, name), TopicOp.DESCRIBE):
            raise KafkaError(
                ErrorCode.topic_authorization_failed, f"not authorized to describe {name}"
            )
    owned = None
    if r.topic_partitions is not None:
        owned = {t.topic_id: frozenset(int(p) for p in t.partitions)
                 for t in r.topic_partitions if t.topic_id is not None}  # fmt: skip
    timeout = int(r.rebalance_timeout.total_seconds() * 1000)
    return Heartbeat(
        key, r.member_id, int(r.member_epoch), r.instance_id, r.rack_id, timeout,
        tuple(topics) if topics is not None else None, r.subscribed_topic_regex,
        r.server_assignor, owned, ctx.client_id or "", ctx.client_host,
    )  # fmt: skip


async def _beat(
    services: Services, ctx: RequestContext, hb: Heartbeat
) -> ConsumerGroupHeartbeatResponse:
    async def resolve(names: set[str], regexes: set[str]) -> Resolved:
        return await resolved(services, ctx, names, regexes)

    try:
        if services.groups.share.get(hb.group_id) is not None:
            raise KafkaError(
                ErrorCode.group_id_not_found, f"Group {hb.group_id} is not a consumer group."
            )
        # the group's own configs first: its session timeout applies to this heartbeat
        settings = await services.groups.configs.fresh(hb.group_id)
        answer = await services.groups.consumer.heartbeat(hb, resolve)
    except KafkaError as exc:
        return _refused(exc)
    return _answered(answer, settings.consumer_heartbeat_ms)


def _answered(answer: Answer, interval_ms: int) -> ConsumerGroupHeartbeatResponse:
    assignment = None
    if answer.assignment is not None:
        assignment = Assignment(topic_partitions=_partitions(answer.assignment))
    return ConsumerGroupHeartbeatResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        member_id=answer.member_id,
        member_epoch=i32(answer.member_epoch),
        heartbeat_interval=milliseconds(interval_ms),
        assignment=assignment,
    )


def _partitions(a: Partitions) -> tuple[TopicPartitions, ...]:
    return tuple(
        TopicPartitions(topic_id=t, partitions=tuple(i32(p) for p in sorted(parts)))
        for t, parts in sorted(a.items())
        if parts
    )


def _refused(exc: KafkaError) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(
        throttle_time=NO_THROTTLE,
        error_code=exc.code,
        error_message=exc.message,
        member_id=None,
        member_epoch=i32(0),
        heartbeat_interval=milliseconds(0),
    )


# -- ConsumerGroupDescribe -------------------------------------------------------------


async def describe(
    services: Services, ctx: RequestContext, request: ConsumerGroupDescribeRequest
) -> Now[ConsumerGroupDescribeResponse]:
    out = []
    for group_id in request.group_ids:
        try:
            key = await group_key(services, ctx, group_id)
            services.groups.check(key)
            g = services.groups.consumer.get(key)
            if g is None:
                raise KafkaError(
                    ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group."
                )
            out.append(_described(group_id, g, services))
        except KafkaError as exc:
            out.append(DescribedGroup(
                error_code=exc.code, error_message=exc.message, group_id=group_id,
                group_state="", group_epoch=i32(0), assignment_epoch=i32(0), assignor_name="",
                members=(),
            ))  # fmt: skip
    return Now(ConsumerGroupDescribeResponse(throttle_time=NO_THROTTLE, groups=tuple(out)))


def _described(group_id: GroupId, g: ConsumerGroup, services: Services) -> DescribedGroup:
    names = {t.topic_id: t.name for t in g.topics.values()}
    default = services.groups.consumer.coordinator.settings.assignors[0]
    members = tuple(
        Member(
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            member_epoch=i32(m.epoch),
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(TopicName(t) for t in m.topics),
            subscribed_topic_regex=m.regex,
            assignment=DescribedAssignment(topic_partitions=_named(m.assigned, names)),
            target_assignment=DescribedAssignment(
                topic_partitions=_named(g.targets.get(m.member_id, {}), names)
            ),
            member_type=CONSUMER_MEMBER_TYPE if m.classic is None else CLASSIC_MEMBER_TYPE,
        )
        for m in g.members.values()
    )
    return DescribedGroup(
        error_code=ErrorCode.none, group_id=group_id, group_state=g.state.value,
        group_epoch=i32(g.epoch), assignment_epoch=i32(g.assignment_epoch),
        assignor_name=g.preferred_assignor(default), members=members,
    )  # fmt: skip


def _named(a: Partitions, names: dict[uuid.UUID, str]) -> tuple[DescribedPartitions, ...]:
    return tuple(
        DescribedPartitions(
            topic_id=t,
            topic_name=TopicName(names[t]),
            partitions=tuple(i32(p) for p in sorted(parts)),
        )
        for t, parts in sorted(a.items())
        if parts and t in names
    )


ROUTES = (
    Route(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ConsumerGroupHeartbeatRequest,
        ConsumerGroupHeartbeatResponse,
        heartbeat,
    ),
    Route(
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        ConsumerGroupDescribeRequest,
        ConsumerGroupDescribeResponse,
        describe,
    ),
)
