"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) over the
pure coordinator, run by the driver: a join or sync is parked until the coordinator
answers it (a rebalance ends, a timer fires), a heartbeat or leave answers at once.
Every call first checks that this instance coordinates the group now; a join is
refused to a share group's id and takes a KIP-848 group that emptied
(`ConsumerGroups.yield_to_classic`), one id space for every kind (kop/groups/kinds.py)."""

from __future__ import annotations

from collections.abc import Callable

from kop.groups.consumer.service import ConsumerGroups
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
        consumer: ConsumerGroups,
        full: FullWarning,
        check: Callable[[str], None],
    ) -> None:
        self._coordinator = coordinator
        self._driver = driver
        self._kinds = kinds
        self._consumer = consumer
        self._full = full
        self._check = check  # NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS

    async def join(self, request: JoinRequest) -> JoinResult:
        self._check(request.group_id)
        self._kinds.refuse_share(request.group_id)
        await self._consumer.yield_to_classic(request.group_id)
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
        return await self._driver.parked(
            lambda token, now: self._coordinator.sync(
                group_id, generation, member_id, instance_id, assignments, token, now, protocol
            )
        )

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        self._check(group_id)
        beat = self._coordinator.heartbeat
        return self._driver.now(lambda now: beat(group_id, generation, member_id, instance_id, now))

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        self._check(group_id)
        return self._driver.now(lambda now: self._coordinator.leave(group_id, members, now))
