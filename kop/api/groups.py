"""The classic group protocol: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, DescribeGroups, ListGroups, DeleteGroups. FindCoordinator names the
instance that owns the group's offsets partition (a transactional id's: its state
partition); the others answer NOT_COORDINATOR.

JoinGroup and SyncGroup may wait for other members: their answers are `Later`, so the
connection goes on serving its other requests (heartbeats) meanwhile; refused before
they reach the group, they are answered `Now`.

FindCoordinator (v0-3: one `key`, answered at the top level) and LeaveGroup (v0-2: one
`member_id`, answered by the top-level error code) were reshaped into batches; their
routes read and write the old shapes (`_coordinator_up`/`_coordinator_down`,
`_leave_up`/`_leave_down`).
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.delete_groups.v2.response import DeletableGroupResult, DeleteGroupsResponse
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.describe_groups.v5.response import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsResponse,
)
from kio.schema.find_coordinator.v0.response import (
    FindCoordinatorResponse as FindCoordinatorV0,
)
from kio.schema.find_coordinator.v3.response import (
    FindCoordinatorResponse as FindCoordinatorV3,
)
from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v6.response import Coordinator, FindCoordinatorResponse
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.join_group.v9.request import JoinGroupRequest
from kio.schema.join_group.v9.response import JoinGroupResponse, JoinGroupResponseMember
from kio.schema.leave_group.v5.request import LeaveGroupRequest, MemberIdentity
from kio.schema.leave_group.v5.response import LeaveGroupResponse, MemberResponse
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.list_groups.v5.response import ListedGroup, ListGroupsResponse
from kio.schema.sync_group.v5.request import SyncGroupRequest
from kio.schema.sync_group.v5.response import SyncGroupResponse
from kio.schema.types import BrokerId, GroupId
from kio.static.primitive import i32

from kop.api.context import RequestContext, Services, error_of
from kop.api.routes import Later, Now, Route
from kop.api.transactions import txn_key
from kop.cluster.member import Member
from kop.groups.coordinator import JoinRequest
from kop.groups.rebalance import JoinResult
from kop.groups.report import summaries
from kop.groups.scope import ReservedGroupName
from kop.groups.service import GroupService
from kop.groups.types import GroupState
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey, response_schema
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import Unrepresentable, downgrade, upgrade

_GROUP_KEY, _TXN_KEY = 0, 1  # FindCoordinator key_type: a consumer group, a transaction


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


async def find_coordinator(
    services: Services, ctx: RequestContext, request: FindCoordinatorRequest
) -> Now[FindCoordinatorResponse]:
    # An empty batch is answered for the key "", as kop always answered it.
    keys = request.coordinator_keys or ("",)
    coordinators = [await _coordinator(services, ctx, key, request.key_type) for key in keys]
    return Now(FindCoordinatorResponse(throttle_time=NO_THROTTLE, coordinators=tuple(coordinators)))


def _coordinator_up(body: Any, version: int) -> FindCoordinatorRequest:
    """v0-3 ask for one `key` (v0 only a group's: key_type takes its default, 0)."""
    request = upgrade(body, FindCoordinatorRequest)
    return request if version >= 4 else dataclasses.replace(request, coordinator_keys=(body.key,))


def _coordinator_down(answer: FindCoordinatorResponse, version: int) -> object:
    """v0-3 answer their one key at the top level (an answer for more keys is refused:
    it would say less than the handler meant); v0 has neither throttle time nor error
    message, both ignorable in Kafka's schema (dropped, as Kafka drops them)."""
    api = ApiKey.FIND_COORDINATOR
    if version >= 4:
        return downgrade(answer, response_schema(api, version), api)
    if len(answer.coordinators) != 1:
        raise Unrepresentable(f"{len(answer.coordinators)} coordinators at version {version}")
    first = answer.coordinators[0]
    if version == 0:
        return FindCoordinatorV0(
            error_code=first.error_code, node_id=first.node_id, host=first.host, port=first.port
        )
    single = FindCoordinatorV3(
        throttle_time=answer.throttle_time, error_code=first.error_code,
        error_message=first.error_message, node_id=first.node_id, host=first.host,
        port=first.port,
    )  # fmt: skip
    return downgrade(single, response_schema(api, version), api)


async def _coordinator(
    services: Services, ctx: RequestContext, key: str, key_type: int
) -> Coordinator:
    """The owner of the group's offsets partition (of the transactional id's state
    partition), as Kafka names the leader of its `__consumer_offsets`
    (`__transaction_state`) partition."""
    listener = ctx.listener
    try:
        if key_type == _GROUP_KEY:
            groups = services.groups
            partition = groups.partition_of(await group_key(services, ctx, key))
            owner = _owner(services, services.offsets_partition(partition))
            if owner.node_id == services.broker.node_id and not groups.partitions.coordinates(
                partition
            ):  # librdkafka's admin calls retry this, not the group request's answer
                raise KafkaError(ErrorCode.coordinator_load_in_progress, "groups are loading")
        elif key_type == _TXN_KEY:
            txns = services.txns
            partition = txns.partition_of(await txn_key(services, ctx, key))
            owner = _owner(services, services.txn_partition(partition))
        else:
            raise KafkaError(ErrorCode.invalid_request, f"no coordinator key type {key_type}")
    except KafkaError as exc:
        return Coordinator(key=key, node_id=BrokerId(-1), host="", port=i32(-1),
                           error_code=exc.code, error_message=exc.message)  # fmt: skip
    host, port = owner.address(listener)
    return Coordinator(key=key, node_id=BrokerId(owner.node_id), host=host, port=i32(port),
                       error_code=ErrorCode.none, error_message=None)  # fmt: skip


def _owner(services: Services, partition_topic: str) -> Member:
    """A transaction coordinator is named while it still loads its partition, as Kafka
    names the leader (its requests answer COORDINATOR_LOAD_IN_PROGRESS meanwhile:
    aiokafka's transactional producer takes that answer to FindCoordinator as fatal)."""
    owner = services.ownership.owner(partition_topic)
    if owner is None:
        raise KafkaError(ErrorCode.coordinator_not_available, "no kop instance is alive")
    return owner


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
    return Later(_join(services, join, ctx.api_version))


async def _join(services: Services, join: JoinRequest, version: int) -> JoinGroupResponse:
    try:
        r = await services.groups.join(join)
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
        r = await groups.sync(
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
        code = services.groups.heartbeat(
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
        codes = services.groups.leave(key, members)
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


async def describe_groups(
    services: Services, ctx: RequestContext, request: DescribeGroupsRequest
) -> Now[DescribeGroupsResponse]:
    out = []
    for group_id in request.groups:
        try:
            groups = services.groups
            key = await group_key(services, ctx, group_id)
            groups.check(key)
            out.append(_describe(groups, key, group_id))
        except KafkaError as exc:
            out.append(_described(exc.code, group_id, ""))
    return Now(DescribeGroupsResponse(throttle_time=NO_THROTTLE, groups=tuple(out)))


def _described(
    code: ErrorCode, group_id: GroupId, state: str, protocol_type: str = "",
    protocol: str = "", members: tuple[DescribedGroupMember, ...] = (),
) -> DescribedGroup:  # fmt: skip
    return DescribedGroup(
        error_code=code,
        group_id=group_id,
        group_state=state,
        protocol_type=protocol_type,
        protocol_data=protocol,
        members=members,
    )  # authorized_operations keeps its default (-2**31): kop computes none


def _describe(groups: GroupService, key: str, group_id: GroupId) -> DescribedGroup:
    """Kafka's summary of group `key` (`group_id` to its client): members always; their
    metadata and assignment, and the protocol, only in a Stable group. An unknown group
    is Dead, not an error."""
    g = groups.coordinator.groups.get(key)
    if g is None:
        return _described(ErrorCode.none, group_id, GroupState.DEAD.value)
    protocol = g.protocol if g.state is GroupState.STABLE else None
    members = tuple(
        DescribedGroupMember(
            member_id=m.member_id,
            group_instance_id=m.instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata_for(protocol) if protocol else b"",
            member_assignment=m.assignment if protocol else b"",
        )
        for m in g.members.values()
    )
    return _described(
        ErrorCode.none, group_id, g.state.value, g.protocol_type or "", protocol or "", members
    )


async def list_groups(
    services: Services, ctx: RequestContext, request: ListGroupsRequest
) -> Now[ListGroupsResponse]:
    try:
        groups = services.groups
        groups.check_loaded()
    except KafkaError as exc:
        return Now(ListGroupsResponse(throttle_time=NO_THROTTLE, error_code=exc.code, groups=()))
    states = {s.lower() for s in request.states_filter}
    types = {t.lower() for t in request.types_filter}
    out = []
    for g in summaries(groups):
        ns, group_id = groups.scope.split(g["group"])
        if ns != ctx.namespace or (states and g["state"].lower() not in states):
            continue
        if (types and "classic" not in types) or not await ctx.access.group(ns, group_id):
            continue
        out.append(ListedGroup(group_id=GroupId(group_id), protocol_type=g["protocol_type"] or "",
                               group_state=g["state"], group_type="classic"))  # fmt: skip
    return Now(
        ListGroupsResponse(throttle_time=NO_THROTTLE, error_code=ErrorCode.none, groups=tuple(out))
    )


async def delete_groups(
    services: Services, ctx: RequestContext, request: DeleteGroupsRequest
) -> Now[DeleteGroupsResponse]:
    results = []
    for group_id in request.groups_names:
        try:
            code = await services.groups.delete(await group_key(services, ctx, group_id))
        except Exception as exc:
            code, _ = error_of(exc)
        results.append(DeletableGroupResult(group_id=group_id, error_code=code))
    return Now(DeleteGroupsResponse(throttle_time=NO_THROTTLE, results=tuple(results)))


ROUTES = (
    Route(
        ApiKey.FIND_COORDINATOR,
        FindCoordinatorRequest,
        FindCoordinatorResponse,
        find_coordinator,
        up=_coordinator_up,
        down=_coordinator_down,
    ),
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
    Route(ApiKey.DESCRIBE_GROUPS, DescribeGroupsRequest, DescribeGroupsResponse, describe_groups),
    Route(ApiKey.LIST_GROUPS, ListGroupsRequest, ListGroupsResponse, list_groups),
    Route(ApiKey.DELETE_GROUPS, DeleteGroupsRequest, DeleteGroupsResponse, delete_groups),
)
