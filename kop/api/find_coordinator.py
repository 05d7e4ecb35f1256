"""FindCoordinator: the instance that owns a group's offsets partition (a transactional
id's: its state partition) is its coordinator, as Kafka names the leader of its
`__consumer_offsets` (`__transaction_state`) partition. v0-3 ask for one `key` and are
answered at the top level; the route reads and writes that old shape
(`_coordinator_up`/`_coordinator_down`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kio.schema.find_coordinator.v0.response import (
    FindCoordinatorResponse as FindCoordinatorV0,
)
from kio.schema.find_coordinator.v3.response import (
    FindCoordinatorResponse as FindCoordinatorV3,
)
from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v6.response import Coordinator, FindCoordinatorResponse
from kio.schema.types import BrokerId
from kio.static.primitive import i32

from kop.api.context import RequestContext, Services
from kop.api.groups import group_key
from kop.api.routes import Now, Route
from kop.api.transactions import txn_key
from kop.cluster.member import Member
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey, response_schema
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import Unrepresentable, downgrade, upgrade

_GROUP_KEY, _TXN_KEY = 0, 1  # FindCoordinator key_type: a consumer group, a transaction


async def handle(
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


ROUTES = (
    Route(
        ApiKey.FIND_COORDINATOR,
        FindCoordinatorRequest,
        FindCoordinatorResponse,
        handle,
        up=_coordinator_up,
        down=_coordinator_down,
    ),
)
