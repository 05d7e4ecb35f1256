"""The KIP-848 consumer groups at work on the event loop: a heartbeat resolves the
group's topics (through the caller, who knows the client's tenant and rights),
applies the pure rules to a copy, persists what changed in one entry of the offsets
topic, and only then installs the copy and answers. One heartbeat per group at a
time (a lock per group), so the copy is never stale.

Timeouts (a member's session, a revocation past its rebalance timeout) fence the
member the same way, from a task that wakes by the next deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from kop.groups.consumer.coordinator import ConsumerCoordinator
from kop.groups.consumer.group import ConsumerGroup
from kop.groups.consumer.member import LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from kop.groups.consumer.member_timers import Due
from kop.groups.consumer.migrating import ClassicGroups, Migrating, Resolver
from kop.groups.consumer.requests import Answer, Heartbeat
from kop.groups.group_locks import GroupLocks
from kop.groups.offsets import CHECK_INTERVAL_MS, Offsets
from kop.groups.offsets_store import OffsetsStore
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.types import StorageError

log = logging.getLogger(__name__)

MAX_TIMER_SLEEP_S = 1.0
IDLE_CHECK_MS = CHECK_INTERVAL_MS  # how long an empty group without offsets is kept


class ConsumerGroups:
    def __init__(
        self,
        store: OffsetsStore,
        coordinator: ConsumerCoordinator,
        clock: Callable[[], int],
        failed: Callable[[str, StorageError], ErrorCode],
        classic: ClassicGroups,
        room: Callable[[str], bool],
        offsets: Offsets,
        check: Callable[[str], None] = lambda _group: None,
    ) -> None:
        self.coordinator = coordinator
        # raises NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS) unless this instance
        # coordinates the group now: asked again once a heartbeat holds its group's lock
        self._check = check
        self._offsets = offsets  # the groups' committed offsets
        self._next_idle_check_ms = 0
        self._store = store
        self._clock = clock
        self._failed = failed  # what a failed write means for the client
        self._classic = classic
        self._room = room  # may a group not held yet be created (bounds on groups held)
        self._locks = GroupLocks()
        self.migrating = Migrating(coordinator, store, classic, clock, failed, self.persist)

    def exclusive(self, group_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        return self._locks.exclusive(group_id)

    async def heartbeat(self, hb: Heartbeat, resolve: Resolver) -> Answer:
        async with self.exclusive(hb.group_id):
            self._check(hb.group_id)
            c = self.coordinator
            old = c.groups.get(hb.group_id)
            if old is None and self._classic.has_members(hb.group_id):
                return await self.migrating.upgrade(hb, resolve)
            replacing = self._make_room(hb) if old is None else False
            now = self._clock()
            resolved = None
            if hb.member_epoch >= 0 and c.needs_refresh(hb, now):
                resolved = await resolve(*c.subscriptions(hb.group_id, hb))
                log.debug("group %s subscribes to %s", hb.group_id, sorted(resolved.topics))
            g, answer = c.heartbeat(hb, resolved, now)
            if (
                hb.member_epoch == LEAVE_EPOCH
                and old is not None
                and await self.migrating.downgraded(old, hb.member_id)
            ):
                return answer
            await self.persist(old, g, replacing)
            if replacing:
                self._classic.forget(hb.group_id)
            leaving = hb.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
            c.install(g, self._clock(), None if leaving else answer.member_id)
            return answer

    def _make_room(self, hb: Heartbeat) -> bool:
        """A new consumer group: refused while the groups held are at their bounds; an
        empty classic group of that id is replaced (its record's tombstone goes with the
        new group's records: True)."""
        members = self._classic.has_members(hb.group_id)
        if members is None and hb.member_epoch == 0 and not self._room(hb.group_id):
            raise KafkaError(ErrorCode.coordinator_not_available, "too many groups held")
        return members is False

    async def persist(
        self, old: ConsumerGroup | None, g: ConsumerGroup, replacing: bool = False
    ) -> None:
        try:
            await self._store.store_consumer_group(old, g, replacing_classic=replacing)
        except StorageError as exc:
            log.warning("consumer group %s not persisted: %s", g.group_id, exc)
            raise KafkaError(self._failed(g.group_id, exc), str(exc)) from None

    # -- timeouts ----------------------------------------------------------------------

    async def run_timers(self) -> None:
        while True:
            now = self._clock()
            deadline = self.coordinator.next_deadline()
            wait = MAX_TIMER_SLEEP_S if deadline is None else (deadline - now) / 1000
            await asyncio.sleep(min(MAX_TIMER_SLEEP_S, max(0.0, wait)))
            for due in self.coordinator.due(self._clock()):
                await self._fence(due)
            await self._forget_idle(self._clock())

    async def _forget_idle(self, now_ms: int) -> None:
        """An empty group without offsets, so for a check interval, goes (as Kafka
        deletes an empty group once its offsets expired): left-behind groups would
        otherwise hold a tenant's share of `max_groups` for ever."""
        if now_ms < self._next_idle_check_ms:
            return
        self._next_idle_check_ms = now_ms + IDLE_CHECK_MS
        for g in list(self.coordinator.groups.values()):
            idle = not g.members and now_ms - g.state_ms >= IDLE_CHECK_MS
            if idle and not self._offsets.of(g.group_id):
                code = await self.delete(g.group_id, self._offsets.forget_group)
                log.info("empty consumer group %s removed: %s", g.group_id, code.name)

    async def _fence(self, due: Due) -> None:
        async with self.exclusive(due.group_id):
            old = self.coordinator.groups.get(due.group_id)
            g = self.coordinator.fenced(due)
            if old is None or g is None:
                return
            log.info("member %s fenced from group %s: %s", due.member_id, due.group_id, due.why)
            try:
                if await self.migrating.downgraded(old, due.member_id):
                    return
                await self.persist(old, g)
            except KafkaError:
                self.coordinator.retry_later(due, self._clock())
                return
            self.coordinator.install(g, self._clock())

    # -- what the other group APIs ask -------------------------------------------------

    def get(self, group_id: str) -> ConsumerGroup | None:
        return self.coordinator.groups.get(group_id)

    async def delete(
        self, group_id: str, forget_offsets: Callable[[str], Awaitable[None]]
    ) -> ErrorCode:
        """DeleteGroups of a consumer group: only an empty one goes, its offsets first
        (`forget_offsets`), then its records; a failed write leaves it in place."""
        async with self.exclusive(group_id):
            g = self.coordinator.groups.get(group_id)
            if g is None:
                return ErrorCode.group_id_not_found
            if g.members:
                return ErrorCode.non_empty_group
            try:
                await forget_offsets(group_id)
                await self._store.delete_consumer_group(g)
            except StorageError as exc:
                return self._failed(group_id, exc)
            self.coordinator.forget(group_id)
            return ErrorCode.none

    async def yield_to_classic(self, g: ConsumerGroup) -> None:
        """A classic JoinGroup names an empty consumer group: it gives way (its records'
        tombstones; its offsets stay). The caller holds the group's lock."""
        try:
            await self._store.delete_consumer_group(g)
        except StorageError as exc:
            raise KafkaError(self._failed(g.group_id, exc), str(exc)) from None
        self.coordinator.forget(g.group_id)
