"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) over the
pure coordinator, run by the driver: a join or sync is parked until the coordinator
answers it (a rebalance ends, a timer fires), a heartbeat or leave answers at once.
Every call first checks that this instance coordinates the group now; a join is
refused to a share group's id, one id space for every kind (kop/groups/kinds.py).

A group id that is a KIP-848 group takes the classic members' requests itself
(Kafka's online upgrade: kop/groups/consumer/classic_service.py); one that emptied
gives way to a classic join."""

from __future__ import annotations

from collections.abc import Callable

from kop.groups.consumer.classic_service import ClassicMembers
from kop.groups.consumer.migrating import Resolver
from kop.groups.coordinator import Coordinator, JoinRequest
from kop.groups.driver import Driver
from kop.groups.full_warning import FullWarning
from kop.groups.kinds import GroupKinds
from kop.groups.rebalance import JoinResult, SyncResult
from kop.protocol.errors import ErrorCode


class ClassicProtocol:
    def __init__(
        self,
        coordinator: Coordinator,
        driver: Driver,
        kinds: GroupKinds,
        inside: ClassicMembers,
        full: FullWarning,
        check: Callable[[str], None],
    ) -> None:
        self._coordinator = coordinator
        self._driver = driver
        self._kinds = kinds
        self._inside = inside  # classic members of KIP-848 groups
        self._full = full
        self._check = check  # NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS

    async def join(self, request: JoinRequest, resolve: Resolver) -> JoinResult:
        """`resolve`: the topics a classic member of a KIP-848 group subscribes to,
        as its principal sees them."""
        self._check(request.group_id)
        self._kinds.refuse_share(request.group_id)
        inside = await self._inside.join(request, resolve)
        if inside is not None:
            return inside
        result = await self._driver.parked(
            lambda token, now: self._coordinator.join(request, token, now)
        )
        self._full.tell(request.group_id, result.error)
        return result

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        assignments: dict[str, bytes],
        protocol: tuple[str | None, str | None] = (None, None),
    ) -> SyncResult:
        self._check(group_id)
        inside = await self._inside.sync(group_id, generation, member_id, instance_id, protocol)
        if inside is not None:
            return inside
        return await self._driver.parked(
            lambda token, now: self._coordinator.sync(
                group_id, generation, member_id, instance_id, assignments, token, now, protocol
            )
        )

    async def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        self._check(group_id)
        inside = await self._inside.heartbeat(group_id, generation, member_id, instance_id)
        if inside is not None:
            return inside
        beat = self._coordinator.heartbeat
        return self._driver.now(lambda now: beat(group_id, generation, member_id, instance_id, now))

    async def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        self._check(group_id)
        inside = await self._inside.leave(group_id, members)
        if inside is not None:
            return inside
        return self._driver.now(lambda now: self._coordinator.leave(group_id, members, now))
