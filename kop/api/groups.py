"""The classic group protocol: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, DescribeGroups, ListGroups, DeleteGroups. FindCoordinator names the
instance that owns the group's offsets partition (a transactional id's: its state
partition); the others answer NOT_COORDINATOR.

JoinGroup and SyncGroup may wait for other members: they return an awaitable so
the connection goes on serving its other requests (heartbeats) meanwhile.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from kop.api.context import RequestContext, Response, Services, error_of
from kop.api.transactions import txn_key, txn_service
from kop.cluster.member import Member
from kop.groups.coordinator import JoinRequest
from kop.groups.rebalance import JoinResult
from kop.groups.report import summaries
from kop.groups.scope import ReservedGroupName
from kop.groups.service import GroupService
from kop.groups.types import GroupState
from kop.protocol.errors import ErrorCode, KafkaError

_GROUP_KEY, _TXN_KEY = 0, 1  # FindCoordinator key_type: a consumer group, a transaction


def group_service(services: Services) -> GroupService:
    if services.groups is None:
        raise KafkaError(ErrorCode.coordinator_not_available, "groups are not served")
    return services.groups


async def group_key(services: Services, ctx: RequestContext, group_id: str) -> str:
    """The group `group_id` names for this client (its tenant's: kop.groups.scope), if
    its principal may use it (GROUP_AUTHORIZATION_FAILED, as Kafka, otherwise)."""
    groups = group_service(services)
    if not await ctx.access.group(ctx.namespace, group_id):
        raise KafkaError(ErrorCode.group_authorization_failed, f"not authorized for {group_id}")
    try:
        return groups.scope.key(ctx.namespace, group_id)
    except ReservedGroupName as exc:
        raise KafkaError(ErrorCode.invalid_group_id, str(exc)) from None


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000)


async def find_coordinator(services: Services, ctx: RequestContext, request: Any) -> Response:
    keys = list(getattr(request, "coordinator_keys", None) or [getattr(request, "key", "")])
    key_type = getattr(request, "key_type", _GROUP_KEY)
    coordinators = [await _coordinator(services, ctx, key, key_type) for key in keys]
    first = coordinators[0]
    return {
        "throttle_time": 0,
        "coordinators": coordinators,
        **{k: v for k, v in first.items() if k != "key"},
    }


async def _coordinator(
    services: Services, ctx: RequestContext, key: str, key_type: int
) -> dict[str, Any]:
    """The owner of the group's offsets partition (of the transactional id's state
    partition), as Kafka names the leader of its `__consumer_offsets`
    (`__transaction_state`) partition."""
    listener = ctx.listener
    try:
        if key_type == _GROUP_KEY:
            groups = group_service(services)
            partition = groups.partition_of(await group_key(services, ctx, key))
            owner = _owner(services, services.offsets_partition(partition))
            if owner.node_id == services.broker.node_id and not groups.partitions.coordinates(
                partition
            ):  # librdkafka's admin calls retry this, not the group request's answer
                raise KafkaError(ErrorCode.coordinator_load_in_progress, "groups are loading")
        elif key_type == _TXN_KEY:
            txns = txn_service(services)
            partition = txns.partition_of(await txn_key(services, ctx, key))
            owner = _owner(services, services.txn_partition(partition))
        else:
            raise KafkaError(ErrorCode.invalid_request, f"no coordinator key type {key_type}")
    except KafkaError as exc:
        return {"key": key, "node_id": -1, "host": "", "port": -1,
                "error_code": exc.code, "error_message": exc.message}  # fmt: skip
    host, port = owner.address(listener)
    return {"key": key, "node_id": owner.node_id, "host": host, "port": port,
            "error_code": ErrorCode.none, "error_message": None}  # fmt: skip


def _owner(services: Services, partition_topic: str) -> Member:
    """A transaction coordinator is named while it still loads its partition, as Kafka
    names the leader (its requests answer COORDINATOR_LOAD_IN_PROGRESS meanwhile:
    aiokafka's transactional producer takes that answer to FindCoordinator as fatal)."""
    owner = services.owners.owner(partition_topic)
    if owner is None:
        raise KafkaError(ErrorCode.coordinator_not_available, "no kop instance is alive")
    return owner


async def join_group(
    services: Services, ctx: RequestContext, request: Any
) -> Awaitable[Response] | Response:
    session = _ms(request.session_timeout)
    rebalance = _ms(request.rebalance_timeout) if hasattr(request, "rebalance_timeout") else session
    try:
        key = await group_key(services, ctx, request.group_id)
    except KafkaError as exc:
        return await _refused_join(exc, request.member_id, ctx.api_version)
    join = JoinRequest(
        key,
        request.member_id,
        getattr(request, "group_instance_id", None),
        request.protocol_type,
        tuple((p.name, p.metadata) for p in request.protocols),
        session,
        rebalance,
        ctx.client_id or "",
        ctx.client_host,
        ctx.api_version >= 4,
        ctx.api_version >= 9,
    )
    return _join(services, join, ctx.api_version)


async def _refused_join(exc: KafkaError, member_id: str, version: int) -> Response:
    return _join_response(JoinResult(exc.code, member_id), version)


async def _join(services: Services, join: JoinRequest, version: int) -> Response:
    try:
        r = await group_service(services).join(join)
    except KafkaError as exc:
        r = JoinResult(exc.code, join.member_id)
    return _join_response(r, version)


def _join_response(r: JoinResult, version: int) -> Response:
    # The protocol name is nullable from v7 on; before, no protocol is "".
    nothing = None if version >= 7 else ""
    return {
        "throttle_time": 0,
        "error_code": r.error,
        "generation_id": r.generation,
        "protocol_type": r.protocol_type,
        "protocol_name": r.protocol if r.protocol is not None else nothing,
        "leader": r.leader,
        "skip_assignment": r.skip_assignment,
        "member_id": r.member_id,
        "members": [
            {"member_id": m, "group_instance_id": i, "metadata": meta} for m, i, meta in r.members
        ],
    }


async def sync_group(
    services: Services, ctx: RequestContext, request: Any
) -> Awaitable[Response] | Response:
    try:
        groups = group_service(services)
        key = await group_key(services, ctx, request.group_id)
    except KafkaError as exc:
        return {"throttle_time": 0, "error_code": exc.code, "assignment": b""}
    return _sync(groups, key, request)


async def _sync(groups: GroupService, key: str, request: Any) -> Response:
    try:
        r = await groups.sync(
            key,
            request.generation_id,
            request.member_id,
            getattr(request, "group_instance_id", None),
            {a.member_id: a.assignment for a in request.assignments},
            (getattr(request, "protocol_type", None), getattr(request, "protocol_name", None)),
        )
    except KafkaError as exc:
        return {"throttle_time": 0, "error_code": exc.code, "assignment": b""}
    return {
        "throttle_time": 0,
        "error_code": r.error,
        "protocol_type": r.protocol_type,
        "protocol_name": r.protocol,
        "assignment": r.assignment,
    }


async def heartbeat(services: Services, ctx: RequestContext, request: Any) -> Response:
    try:
        code = group_service(services).heartbeat(
            await group_key(services, ctx, request.group_id),
            request.generation_id,
            request.member_id,
            getattr(request, "group_instance_id", None),
        )
    except KafkaError as exc:
        code = exc.code
    return {"throttle_time": 0, "error_code": code}


async def leave_group(services: Services, ctx: RequestContext, request: Any) -> Response:
    if hasattr(request, "members"):  # v3+: a batch
        members = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        members = [(request.member_id, None)]
    try:
        key = await group_key(services, ctx, request.group_id)
        codes = group_service(services).leave(key, members)
    except KafkaError as exc:
        return {"throttle_time": 0, "error_code": exc.code, "members": []}
    top = codes[0] if len(codes) == 1 and not hasattr(request, "members") else ErrorCode.none
    return {
        "throttle_time": 0,
        "error_code": top,
        "members": [
            {"member_id": m, "group_instance_id": i, "error_code": c}
            for (m, i), c in zip(members, codes, strict=True)
        ],
    }


async def describe_groups(services: Services, ctx: RequestContext, request: Any) -> Response:
    out = []
    for group_id in request.groups:
        try:
            groups = group_service(services)
            key = await group_key(services, ctx, group_id)
            groups.check(key)
            out.append({**_describe(groups, key), "group_id": group_id})
        except KafkaError as exc:
            out.append(
                {
                    "error_code": exc.code,
                    "group_id": group_id,
                    "group_state": "",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                    "authorized_operations": -(2**31),
                }
            )
    return {"throttle_time": 0, "groups": out}


def _describe(groups: GroupService, group_id: str) -> Response:
    """Kafka's summary: members always; their metadata and assignment, and the
    protocol, only in a Stable group. An unknown group is Dead, not an error."""
    g = groups.coordinator.groups.get(group_id)
    out: Response = {
        "error_code": ErrorCode.none,
        "group_id": group_id,
        "group_state": GroupState.DEAD.value,
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
        "authorized_operations": -(2**31),
    }
    if g is None:
        return out
    protocol = g.protocol if g.state is GroupState.STABLE else None
    out.update(
        group_state=g.state.value, protocol_type=g.protocol_type or "", protocol_data=protocol or ""
    )
    out["members"] = [
        {
            "member_id": m.member_id,
            "group_instance_id": m.instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "member_metadata": m.metadata_for(protocol) if protocol else b"",
            "member_assignment": m.assignment if protocol else b"",
        }
        for m in g.members.values()
    ]
    return out


async def list_groups(services: Services, ctx: RequestContext, request: Any) -> Response:
    try:
        groups = group_service(services)
        groups.check_loaded()
    except KafkaError as exc:
        return {"throttle_time": 0, "error_code": exc.code, "groups": []}
    states = {s.lower() for s in getattr(request, "states_filter", ())}
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    out = []
    for g in summaries(groups):
        ns, group_id = groups.scope.split(g["group"])
        if ns != ctx.namespace or (states and g["state"].lower() not in states):
            continue
        if (types and "classic" not in types) or not await ctx.access.group(ns, group_id):
            continue
        out.append({"group_id": group_id, "protocol_type": g["protocol_type"] or "",
                    "group_state": g["state"], "group_type": "classic"})  # fmt: skip
    return {"throttle_time": 0, "error_code": ErrorCode.none, "groups": out}


async def delete_groups(services: Services, ctx: RequestContext, request: Any) -> Response:
    results = []
    for group_id in request.groups_names:
        try:
            code = await group_service(services).delete(await group_key(services, ctx, group_id))
        except Exception as exc:
            code, _ = error_of(exc)
        results.append({"group_id": group_id, "error_code": code})
    return {"throttle_time": 0, "results": results}
