"""The classic group protocol's members: JoinGroup, SyncGroup, Heartbeat, LeaveGroup
(FindCoordinator is kop/api/find_coordinator.py, the admin APIs kop/api/group_admin.py).
A group is named in the client's tenant and authorized first (`group_key`).

JoinGroup and SyncGroup may wait for other members: their answers are `Later`, so the
connection goes on serving its other requests (heartbeats) meanwhile; refused before
they reach the group, they are answered `Now`.

LeaveGroup (v0-2: one `member_id`, answered by the top-level error code) was reshaped
into a batch; its route reads and writes the old shape (`_leave_up`/`_leave_down`).
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.join_group.v9.request import JoinGroupRequest
from kio.schema.join_group.v9.response import JoinGroupResponse, JoinGroupResponseMember
from kio.schema.leave_group.v5.request import LeaveGroupRequest, MemberIdentity
from kio.schema.leave_group.v5.response import LeaveGroupResponse, MemberResponse
from kio.schema.sync_group.v5.request import SyncGroupRequest
from kio.schema.sync_group.v5.response import SyncGroupResponse
from kio.static.primitive import i32

from kop.api.context import RequestContext, Services
from kop.api.group_topics import resolved
from kop.api.routes import Later, Now, Route
from kop.groups.consumer.requests import Resolved
from kop.groups.coordinator import JoinRequest
from kop.groups.rebalance import JoinResult
from kop.groups.scope import ReservedGroupName
from kop.groups.service import GroupService
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey, response_schema
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import Unrepresentable, downgrade, upgrade


async def group_key(services: Services, ctx: RequestContext, group_id: str) -> str:
    """The group `group_id` names for this client (its tenant's: kop.groups.scope), if
    its principal may use it (GROUP_AUTHORIZATION_FAILED, as Kafka, otherwise)."""
    groups = services.groups
    if not await ctx.access.group(ctx.namespace, group_id):
        raise KafkaError(ErrorCode.group_authorization_failed, f"not authorized for {group_id}")
    try:
        return groups.scope.key(ctx.namespace, group_id)
    except ReservedGroupName as exc:
        raise KafkaError(ErrorCode.invalid_group_id, str(exc)) from None


def _ms(value: datetime.timedelta) -> int:
    return int(value.total_seconds() * 1000)


async def join_group(
    services: Services, ctx: RequestContext, request: JoinGroupRequest
) -> Now[JoinGroupResponse] | Later[JoinGroupResponse]:
    """Later: the join waits for the rebalance it takes part in to complete."""
    session = _ms(request.session_timeout)
    # v0 has no rebalance timeout: the session timeout bounds the rebalance, as in Kafka
    rebalance = _ms(request.rebalance_timeout) if ctx.api_version >= 1 else session
    try:
        key = await group_key(services, ctx, request.group_id)
    except KafkaError as exc:
        return Now(_join_response(JoinResult(exc.code, request.member_id), ctx.api_version))
    join = JoinRequest(
        key,
        request.member_id,
        request.group_instance_id,
        request.protocol_type,
        tuple((p.name, p.metadata) for p in request.protocols),
        session,
        rebalance,
        ctx.client_id or "",
        ctx.client_host,
        ctx.api_version >= 4,
        ctx.api_version >= 9,
    )
    return Later(_join(services, ctx, join))


async def _join(services: Services, ctx: RequestContext, join: JoinRequest) -> JoinGroupResponse:
    async def resolve(names: set[str], regexes: set[str]) -> Resolved:
        return await resolved(services, ctx, names, regexes)

    version = ctx.api_version
    try:
        r = await services.groups.classic.join(join, resolve)
    except KafkaError as exc:
        r = JoinResult(exc.code, join.member_id)
    return _join_response(r, version)


def _join_response(r: JoinResult, version: int) -> JoinGroupResponse:
    # The protocol name is nullable from v7 on; before, no protocol is "".
    nothing = None if version >= 7 else ""
    return JoinGroupResponse(
        throttle_time=NO_THROTTLE,
        error_code=r.error,
        generation_id=i32(r.generation),
        protocol_type=r.protocol_type,
        protocol_name=r.protocol if r.protocol is not None else nothing,
        leader=r.leader,
        skip_assignment=r.skip_assignment,  # only ever set for v9 (JoinRequest)
        member_id=r.member_id,
        members=tuple(
            JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=meta)
            for m, i, meta in r.members
        ),
    )


async def sync_group(
    services: Services, ctx: RequestContext, request: SyncGroupRequest
) -> Now[SyncGroupResponse] | Later[SyncGroupResponse]:
    """Later: a follower's sync waits for the leader's assignment."""
    try:
        groups = services.groups
        key = await group_key(services, ctx, request.group_id)
    except KafkaError as exc:
        return Now(_sync_refused(exc.code))
    return Later(_sync(groups, key, request))


def _sync_refused(code: ErrorCode) -> SyncGroupResponse:
    return SyncGroupResponse(throttle_time=NO_THROTTLE, error_code=code, assignment=b"")


async def _sync(groups: GroupService, key: str, request: SyncGroupRequest) -> SyncGroupResponse:
    try:
        r = await groups.classic.sync(
            key,
            request.generation_id,
            request.member_id,
            request.group_instance_id,
            {a.member_id: a.assignment for a in request.assignments},
            (request.protocol_type, request.protocol_name),
        )
    except KafkaError as exc:
        return _sync_refused(exc.code)
    return SyncGroupResponse(
        throttle_time=NO_THROTTLE,
        error_code=r.error,
        protocol_type=r.protocol_type,
        protocol_name=r.protocol,
        assignment=r.assignment,
    )


async def heartbeat(
    services: Services, ctx: RequestContext, request: HeartbeatRequest
) -> Now[HeartbeatResponse]:
    try:
        code = await services.groups.classic.heartbeat(
            await group_key(services, ctx, request.group_id),
            request.generation_id,
            request.member_id,
            request.group_instance_id,
        )
    except KafkaError as exc:
        code = exc.code
    return Now(HeartbeatResponse(throttle_time=NO_THROTTLE, error_code=code))


async def leave_group(
    services: Services, ctx: RequestContext, request: LeaveGroupRequest
) -> Now[LeaveGroupResponse]:
    members = [(m.member_id, m.group_instance_id) for m in request.members]
    try:
        key = await group_key(services, ctx, request.group_id)
        codes = await services.groups.classic.leave(key, members)
    except KafkaError as exc:
        return Now(LeaveGroupResponse(throttle_time=NO_THROTTLE, error_code=exc.code, members=()))
    return Now(
        LeaveGroupResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            members=tuple(
                MemberResponse(member_id=m, group_instance_id=i, error_code=c)
                for (m, i), c in zip(members, codes, strict=True)
            ),
        )
    )


def _leave_up(body: Any, version: int) -> LeaveGroupRequest:
    """v0-2 name one member, by its id alone."""
    if version >= 3:
        return upgrade(body, LeaveGroupRequest)
    return LeaveGroupRequest(
        group_id=body.group_id, members=(MemberIdentity(member_id=body.member_id),)
    )


def _leave_down(answer: LeaveGroupResponse, version: int) -> object:
    """v0-2 have no members: their one member's code is the top-level one (an answer for
    more members is refused)."""
    if version < 3:
        if len(answer.members) > 1:
            raise Unrepresentable(f"{len(answer.members)} members at version {version}")
        code = answer.error_code
        if code is ErrorCode.none and answer.members:
            code = answer.members[0].error_code
        answer = dataclasses.replace(answer, error_code=code, members=())
    return downgrade(answer, response_schema(ApiKey.LEAVE_GROUP, version), ApiKey.LEAVE_GROUP)


ROUTES = (
    Route(ApiKey.JOIN_GROUP, JoinGroupRequest, JoinGroupResponse, join_group),
    Route(ApiKey.SYNC_GROUP, SyncGroupRequest, SyncGroupResponse, sync_group),
    Route(ApiKey.HEARTBEAT, HeartbeatRequest, HeartbeatResponse, heartbeat),
    Route(
        ApiKey.LEAVE_GROUP,
        LeaveGroupRequest,
        LeaveGroupResponse,
        leave_group,
        up=_leave_up,
        down=_leave_down,
    ),
)
