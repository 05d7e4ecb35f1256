"""The share groups this instance coordinates, at work on the event loop: a heartbeat
looks the group's topics up (through the caller, who knows the client's tenant and
rights) when they may have changed, then applies the rules (one heartbeat per group at
a time); a task ends the sessions of members that stopped heartbeating.

A group is kept in the offsets topic as Kafka keeps it in its own (kop.groups.share.stored):
its epochs, members, assignments and the topics whose start offsets were set, written
before a heartbeat that changed them is answered (a heartbeat that changes nothing
durable writes nothing). So after the coordinator moves or restarts, its members go on
at their epochs, and an empty group is still listed, described and deletable. What a
share group has consumed is not in these records: it is the Pulsar subscriptions (D27).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping

from kop.groups.consumer.group import TopicMeta
from kop.groups.group_locks import GroupLocks
from kop.groups.share.coordinator import ShareAnswer, ShareCoordinator, ShareHeartbeat
from kop.groups.share.group import ShareGroup
from kop.groups.share.stored import ShareSnapshot, snapshot
from kop.groups.share.writes import Failed, ShareStore, ShareWrites, Unstored, retriable
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
        store: ShareStore | None = None,
        failed: Failed | None = None,
    ) -> None:
        self.coordinator = coordinator
        self._clock = clock
        self._check = check  # NOT_COORDINATOR unless this instance coordinates the group
        self._taken = taken  # a classic or consumer group holds the id
        self._room = room  # may a new group be held (max_groups, per tenant)
        self._writes = ShareWrites(
            coordinator, clock, store or Unstored(), failed if failed is not None else retriable
        )
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
            before = snapshot(c.groups.get(hb.group_id))
            answer = c.heartbeat(hb, resolved, self._clock())
            await self._writes.asked(hb.group_id, before)
            return answer

    def restore(self, groups: Iterable[ShareGroup]) -> None:
        """Groups read back from their offsets partition (their sessions start now)."""
        for g in groups:
            self.coordinator.groups[g.group_id] = g

    def forget(self, group_ids: Iterable[str]) -> None:
        """Groups whose offsets partition another instance coordinates now."""
        for group_id in group_ids:
            self.coordinator.forget(group_id)

    @property
    def groups(self) -> list[str]:
        return list(self.coordinator.groups)

    def get(self, group_id: str) -> ShareGroup | None:
        return self.coordinator.groups.get(group_id)

    def check_empty(self, group_id: str) -> ShareGroup | None:
        """Before its offsets change: GROUP_ID_NOT_FOUND if another kind of group holds
        the id, NON_EMPTY_GROUP while the share group has members; the group, if this
        coordinator knows it."""
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
        offsets are set before any member joined (bounded as a heartbeat's new group).
        Kept once `offset_topics` has written it."""
        g = self.check_empty(group_id)
        if g is not None:
            return g
        if not self._room(group_id):
            raise KafkaError(ErrorCode.coordinator_not_available, "too many groups held")
        g = self.coordinator.groups[group_id] = ShareGroup(group_id)
        return g

    async def offset_topics(
        self, group_id: str, before: ShareSnapshot | None, added: Iterable[str] = (),
        removed: Iterable[str] = (),
    ) -> None:  # fmt: skip
        """The topics whose start offsets were set (listed with the subscribed ones when
        all the group's offsets are described), changed and written; `before`: the
        group as it was when the caller began (None: `hold` made it)."""
        async with self._exclusive(group_id):
            g = self.coordinator.groups.get(group_id)
            if g is None:
                return
            g.offset_topics.update(added)
            g.offset_topics.difference_update(removed)
            await self._writes.asked(group_id, before)

    def snapshot(self, group_id: str) -> ShareSnapshot | None:
        return snapshot(self.coordinator.groups.get(group_id))

    async def delete(self, group_id: str) -> ErrorCode:
        """DeleteGroups: an empty share group goes, its records first (its Pulsar
        subscriptions stay: D27)."""
        async with self._exclusive(group_id):
            g = self.coordinator.groups.get(group_id)
            if g is None:
                return ErrorCode.group_id_not_found
            if g.members:
                return ErrorCode.non_empty_group
            code = await self._writes.deleted(g)
            if code is ErrorCode.none:
                self.coordinator.forget(group_id)
            return code

    async def run_timers(self) -> None:
        """Ends the sessions of members that stopped heartbeating."""
        while True:
            await asyncio.sleep(TICK_S)
            await self.expire()

    async def expire(self) -> None:
        """Members whose session ended leave their groups, and that is written (a write
        that fails is logged: read back, they come again and their sessions end again)."""
        now = self._clock()
        late = [
            group_id for group_id, g in self.coordinator.groups.items()
            if any(m.deadline_ms <= now for m in g.members.values())
        ]  # fmt: skip
        for group_id in late:
            async with self._exclusive(group_id):
                before = snapshot(self.coordinator.groups.get(group_id))
                for member_id in self.coordinator.expire_group(group_id, self._clock()):
                    log.info("share group %s: member %s's session ended", group_id, member_id)
                await self._writes.ended(group_id, before)
