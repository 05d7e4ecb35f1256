"""KIP-932 share groups' membership APIs: ShareGroupHeartbeat and ShareGroupDescribe
(the rules: kop/groups/share/). A group is named in the client's tenant and authorized
first (`group_key`), as every group is; subscribed names are bounded and must be
topics the principal may describe (TOPIC_AUTHORIZATION_FAILED otherwise)."""

from __future__ import annotations

import uuid

from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_describe.v1.response import Assignment as DescribedAssignment
from kio.schema.share_group_describe.v1.response import (
    DescribedGroup,
    Member,
    ShareGroupDescribeResponse,
)
from kio.schema.share_group_describe.v1.response import TopicPartitions as DescribedPartitions
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.schema.share_group_heartbeat.v1.response import (
    Assignment,
    ShareGroupHeartbeatResponse,
    TopicPartitions,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32

from kop.api.consumer_groups import MAX_SUBSCRIBED_TOPICS
from kop.api.context import RequestContext, Services, topic_for
from kop.api.group_topics import resolved
from kop.api.groups import group_key
from kop.api.routes import Later, Now, Route
from kop.groups.consumer.group import TopicMeta
from kop.groups.consumer.member import Assignment as Partitions
from kop.groups.share.coordinator import ShareAnswer, ShareHeartbeat
from kop.groups.share.group import SIMPLE, ShareGroup
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE, milliseconds
from kop.security.authorizer import TopicOp


async def heartbeat(
    services: Services, ctx: RequestContext, request: ShareGroupHeartbeatRequest
) -> Now[ShareGroupHeartbeatResponse] | Later[ShareGroupHeartbeatResponse]:
    try:
        key = await group_key(services, ctx, request.group_id)
        topics = request.subscribed_topic_names
        if topics is not None and len(topics) > MAX_SUBSCRIBED_TOPICS:
            raise KafkaError(
                ErrorCode.invalid_request, f"at most {MAX_SUBSCRIBED_TOPICS} subscribed topics"
            )
        for name in topics or ():
            if not await ctx.access.topic(topic_for(ctx, name), TopicOp.DESCRIBE):
                raise KafkaError(
                    ErrorCode.topic_authorization_failed, f"not authorized to describe {name}"
                )
        hb = ShareHeartbeat(
            key, request.member_id, int(request.member_epoch), request.rack_id,
            tuple(topics) if topics is not None else None, ctx.client_id or "", ctx.client_host,
        )  # fmt: skip
        services.groups.check(key)
    except KafkaError as exc:
        return Now(_refused(exc))
    return Later(_beat(services, ctx, hb))


async def _beat(
    services: Services, ctx: RequestContext, hb: ShareHeartbeat
) -> ShareGroupHeartbeatResponse:
    async def resolve(names: set[str]) -> dict[str, TopicMeta]:
        return dict((await resolved(services, ctx, names, set())).topics)

    try:
        # the group's own configs first: its session timeout applies to this heartbeat
        settings = await services.groups.configs.fresh(hb.group_id)
        answer = await services.groups.share.heartbeat(hb, resolve)
    except KafkaError as exc:
        return _refused(exc)
    return _answered(answer, settings.share_heartbeat_ms)


def _answered(answer: ShareAnswer, interval_ms: int) -> ShareGroupHeartbeatResponse:
    assignment = None
    if answer.assignment is not None:
        assignment = Assignment(topic_partitions=_partitions(answer.assignment))
    return ShareGroupHeartbeatResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none, member_id=answer.member_id,
        member_epoch=i32(answer.member_epoch), heartbeat_interval=milliseconds(interval_ms),
        assignment=assignment,
    )  # fmt: skip


def _partitions(a: Partitions) -> tuple[TopicPartitions, ...]:
    return tuple(
        TopicPartitions(topic_id=t, partitions=tuple(i32(p) for p in sorted(parts)))
        for t, parts in sorted(a.items())
        if parts
    )


def _refused(exc: KafkaError) -> ShareGroupHeartbeatResponse:
    return ShareGroupHeartbeatResponse(
        throttle_time=NO_THROTTLE, error_code=exc.code, error_message=exc.message,
        member_id=None, member_epoch=i32(0), heartbeat_interval=milliseconds(0),
    )  # fmt: skip


# -- ShareGroupDescribe ----------------------------------------------------------------


async def describe(
    services: Services, ctx: RequestContext, request: ShareGroupDescribeRequest
) -> Now[ShareGroupDescribeResponse]:
    out = []
    for group_id in request.group_ids:
        try:
            key = await group_key(services, ctx, group_id)
            services.groups.check(key)
            g = services.groups.share.get(key)
            if g is None:
                raise KafkaError(
                    ErrorCode.group_id_not_found, f"Group {group_id} is not a share group."
                )
            out.append(_described(group_id, g))
        except KafkaError as exc:
            out.append(DescribedGroup(
                error_code=exc.code, error_message=exc.message, group_id=group_id,
                group_state="", group_epoch=i32(0), assignment_epoch=i32(0), assignor_name="",
                members=(),
            ))  # fmt: skip
    return Now(ShareGroupDescribeResponse(throttle_time=NO_THROTTLE, groups=tuple(out)))


def _described(group_id: GroupId, g: ShareGroup) -> DescribedGroup:
    names = {t.topic_id: t.name for t in g.topics.values()}
    members = tuple(
        Member(
            member_id=m.member_id,
            rack_id=m.rack,
            member_epoch=i32(m.epoch),
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(TopicName(t) for t in m.topics),
            assignment=DescribedAssignment(topic_partitions=_named(m.assignment, names)),
        )
        for m in g.members.values()
    )
    return DescribedGroup(
        error_code=ErrorCode.none, group_id=group_id, group_state=g.state,
        group_epoch=i32(g.epoch), assignment_epoch=i32(g.assignment_epoch),
        assignor_name=SIMPLE, members=members,
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
        ApiKey.SHARE_GROUP_HEARTBEAT,
        ShareGroupHeartbeatRequest,
        ShareGroupHeartbeatResponse,
        heartbeat,
    ),
    Route(
        ApiKey.SHARE_GROUP_DESCRIBE,
        ShareGroupDescribeRequest,
        ShareGroupDescribeResponse,
        describe,
    ),
)
