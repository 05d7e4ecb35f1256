"""The groups an administrator sees: DescribeGroups, ListGroups, DeleteGroups, each
group named in the client's tenant and authorized before it is read or deleted.
"""

from __future__ import annotations

from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.delete_groups.v2.response import DeletableGroupResult, DeleteGroupsResponse
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.describe_groups.v5.response import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsResponse,
)
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.list_groups.v5.response import ListedGroup, ListGroupsResponse
from kio.schema.types import GroupId

from kop.api.context import RequestContext, Services, error_of
from kop.api.groups import group_key
from kop.api.routes import Now, Route
from kop.groups.report import summaries
from kop.groups.service import GroupService
from kop.groups.types import GroupState
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE


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
        if (types and g["type"] not in types) or not await ctx.access.group(ns, group_id):
            continue
        out.append(ListedGroup(group_id=GroupId(group_id), protocol_type=g["protocol_type"] or "",
                               group_state=g["state"], group_type=g["type"]))  # fmt: skip
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
    Route(ApiKey.DESCRIBE_GROUPS, DescribeGroupsRequest, DescribeGroupsResponse, describe_groups),
    Route(ApiKey.LIST_GROUPS, ListGroupsRequest, ListGroupsResponse, list_groups),
    Route(ApiKey.DELETE_GROUPS, DeleteGroupsRequest, DeleteGroupsResponse, delete_groups),
)
