"""The share groups this instance coordinates, at work on the event loop: a heartbeat
looks the group's topics up (through the caller, who knows the client's tenant and
rights) when they may have changed, then applies the rules (one heartbeat per group at
a time); a task ends the sessions of members that stopped heartbeating.

Membership is kept in memory only (D27): after the coordinator moves or restarts, a
member's next heartbeat gets UNKNOWN_MEMBER_ID and it joins again, as the Kafka share
consumer does. What a share group has consumed is not membership: it is the Pulsar
subscriptions, which outlive every kop instance.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping

from kop.groups.consumer.group import TopicMeta
from kop.groups.group_locks import GroupLocks
from kop.groups.share.coordinator import ShareAnswer, ShareCoordinator, ShareHeartbeat
from kop.groups.share.group import ShareGroup
from kop.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

Resolver = Callable[[set[str]], Awaitable[Mapping[str, TopicMeta]]]
TICK_S = 1.0


class ShareGroups:
    def __init__(
        self,
        coordinator: ShareCoordinator,
        clock: Callable[[], int],
        check: Callable[[str], None],
        taken: Callable[[str], bool],
        room: Callable[[str], bool],
    ) -> None:
        self.coordinator = coordinator
        self._clock = clock
        self._check = check  # NOT_COORDINATOR unless this instance coordinates the group
        self._taken = taken  # a classic or consumer group holds the id
        self._room = room  # may a new group be held (max_groups, per tenant)
        self._locks = GroupLocks()

    def _exclusive(self, group_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        return self._locks.exclusive(group_id)

    async def heartbeat(self, hb: ShareHeartbeat, resolve: Resolver) -> ShareAnswer:
        async with self._exclusive(hb.group_id):
            self._check(hb.group_id)
            c = self.coordinator
            if hb.group_id not in c.groups:
                if self._taken(hb.group_id):
                    raise KafkaError(
                        ErrorCode.group_id_not_found, f"Group {hb.group_id} is not a share group."
                    )
                if hb.member_epoch == 0 and not self._room(hb.group_id):
                    raise KafkaError(ErrorCode.coordinator_not_available, "too many groups held")
            names = c.wants(hb, self._clock())
            resolved = None
            if names is not None:
                resolved = await resolve(names)
                self._check(hb.group_id)  # still ours after the lookup
            return c.heartbeat(hb, resolved, self._clock())

    def get(self, group_id: str) -> ShareGroup | None:
        return self.coordinator.groups.get(group_id)

    def check_empty(self, group_id: str) -> ShareGroup | None:
        """Before its offsets change: GROUP_ID_NOT_FOUND if another kind of group holds
        the id, NON_EMPTY_GROUP while the share group has members; the group, if this
        coordinator knows it (membership is not kept across restarts: D27)."""
        if self._taken(group_id):
            raise KafkaError(
                ErrorCode.group_id_not_found, f"Group {group_id} is not a share group."
            )
        g = self.coordinator.groups.get(group_id)
        if g is not None and g.members:
            raise KafkaError(ErrorCode.non_empty_group, f"share group {group_id} has members")
        return g

    def hold(self, group_id: str) -> ShareGroup:
        """The share group, made empty if there is none, as Kafka 4.2+ makes one whose
        offsets are set before any member joined (bounded as a heartbeat's new group)."""
        g = self.check_empty(group_id)
        if g is not None:
            return g
        if not self._room(group_id):
            raise KafkaError(ErrorCode.coordinator_not_available, "too many groups held")
        g = self.coordinator.groups[group_id] = ShareGroup(group_id)
        return g

    def delete(self, group_id: str) -> ErrorCode:
        """DeleteGroups: an empty share group goes (its Pulsar subscriptions stay: D27)."""
        g = self.coordinator.groups.get(group_id)
        if g is None:
            return ErrorCode.group_id_not_found
        if g.members:
            return ErrorCode.non_empty_group
        self.coordinator.forget(group_id)
        return ErrorCode.none

    async def run_timers(self) -> None:
        """Ends the sessions of members that stopped heartbeating."""
        while True:
            await asyncio.sleep(TICK_S)
            for group_id, member_id in self.coordinator.expire(self._clock()):
                log.info("share group %s: member %s's session ended", group_id, member_id)
