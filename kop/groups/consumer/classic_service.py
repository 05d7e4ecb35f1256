"""The classic protocol's requests to a group id that is a KIP-848 group (one a member
of the consumer protocol upgraded, kop/groups/consumer/migration.py): JoinGroup,
SyncGroup, Heartbeat and LeaveGroup of its classic members, on the event loop, under
the group's lock as its heartbeats are (the rules: classic_members.py).

Each method answers None when the id is not a consumer group, and the classic
coordinator takes the request. The caller does so without yielding to the loop in
between, so a group is never upgraded between the look and the classic call.
"""

from __future__ import annotations

from collections.abc import Callable

from kop.groups.consumer import classic_members as rules
from kop.groups.consumer.coordinator import new_member_id
from kop.groups.consumer.migrating import Resolver
from kop.groups.consumer.requests import Heartbeat
from kop.groups.consumer.service import ConsumerGroups
from kop.groups.joins import JoinRequest, Limits
from kop.groups.rebalance import JoinResult, SyncResult
from kop.protocol.errors import ErrorCode, KafkaError


class ClassicMembers:
    def __init__(self, groups: ConsumerGroups, limits: Limits, clock: Callable[[], int]) -> None:
        self._groups = groups
        self._limits = limits
        self._clock = clock

    async def join(self, r: JoinRequest, resolve: Resolver) -> JoinResult | None:
        """A classic member joins the consumer group of that id; an empty consumer group
        gives way to the classic protocol instead (None, as for no consumer group)."""
        c = self._groups.coordinator
        async with self._groups.exclusive(r.group_id):
            old = c.groups.get(r.group_id)
            if old is None:
                return None
            if not old.members:
                await self._groups.yield_to_classic(old)
                return None
            if (
                c.settings.migration_policy == "disabled"
            ):  # Kafka: "the group migration is disabled"
                return JoinResult(ErrorCode.inconsistent_group_protocol, r.member_id)
            lim = self._limits
            if not lim.min_session_timeout_ms <= r.session_timeout_ms <= lim.max_session_timeout_ms:
                return JoinResult(ErrorCode.invalid_session_timeout, r.member_id)
            topics = rules.subscribed(r)
            member_id = r.member_id or new_member_id()
            if not r.member_id and r.require_known_member_id and r.instance_id is None:
                return JoinResult(ErrorCode.member_id_required, member_id)
            asking = Heartbeat(r.group_id, member_id, 0, topics=topics)
            resolved = await resolve(*c.subscriptions(r.group_id, asking))
            g = old.copy()
            joined = rules.join(g, r, member_id, resolved, c.rules)
            replaced = old.static_member(r.instance_id) if r.instance_id is not None else None
            if (
                replaced is not None
                and replaced.member_id != member_id
                and await self._groups.migrating.downgraded(old, replaced.member_id, g)
            ):
                return joined.result  # a classic group now: the member syncs there
            await self._groups.persist(old, g)
            now = self._clock()
            c.install(g, now, member_id)
            c.timers.joined(r.group_id, g.members[member_id], now)
            return joined.result

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        protocol: tuple[str | None, str | None],
    ) -> SyncResult | None:
        c = self._groups.coordinator
        async with self._groups.exclusive(group_id):
            g = c.groups.get(group_id)
            if g is None:
                return None
            try:
                result = rules.sync(g, member_id, instance_id, generation, protocol)
            except KafkaError as exc:
                if exc.code is ErrorCode.rebalance_in_progress:
                    c.timers.rejoin_by(group_id, g.members[member_id], self._clock())
                raise
            c.timers.touched(group_id, g.members[member_id], self._clock())
            c.timers.synced(group_id, member_id)
            return result

    async def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode | None:
        c = self._groups.coordinator
        async with self._groups.exclusive(group_id):
            g = c.groups.get(group_id)
            if g is None:
                return None
            try:
                rejoin = rules.must_rejoin(g, member_id, instance_id, generation)
            except KafkaError as exc:
                return exc.code
            now, m = self._clock(), g.members[member_id]
            c.timers.touched(group_id, m, now)
            if not rejoin:
                return ErrorCode.none
            c.timers.rejoin_by(group_id, m, now)
            return ErrorCode.rebalance_in_progress

    async def leave(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> list[ErrorCode] | None:
        c = self._groups.coordinator
        async with self._groups.exclusive(group_id):
            old = c.groups.get(group_id)
            if old is None:
                return None
            g = old.copy()
            codes = rules.leave(g, members)
            if ErrorCode.none in codes:
                await self._groups.persist(old, g)
                c.install(g, self._clock())
            return codes
