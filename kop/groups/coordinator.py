"""The classic group coordinator as a pure state machine (the h11 shape): every
call takes the time, changes the groups and returns an answer at once or parks
the request under the caller's token (PARKED); answers to parked requests and
group records to persist collect in `effects`, which the caller drains after
each call (`take_effects`). The caller also calls `tick(now)` by
`next_deadline()` so timeouts fire. No I/O, no clock, no asyncio.

The rules and error codes are Kafka's (GroupCoordinator.scala): JoinGroup's live
in joins.py, SyncGroup's in syncs.py, the rest of what members do in
membership.py, the phases of a rebalance in rebalance.py and the timeouts in
timers.py, planned by schedule.py.
"""

from __future__ import annotations

from kop.groups.group import Group
from kop.groups.joins import PARKED, Joiner, JoinRequest, Limits
from kop.groups.membership import Membership
from kop.groups.rebalance import Answer, Effect, JoinResult, Rebalancer, SyncResult
from kop.groups.schedule import Schedule
from kop.groups.syncs import Syncer
from kop.groups.tenant_keys import HeldGroups
from kop.groups.timers import fire
from kop.groups.types import GroupMetadata, GroupState
from kop.protocol.errors import ErrorCode

__all__ = ["PARKED", "Coordinator", "JoinRequest", "Limits"]


class Coordinator:
    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.groups = HeldGroups(self.limits.default_tenant)
        self.effects: list[Effect] = []
        self.rebalance = Rebalancer(self.effects, self.limits.initial_rebalance_delay_ms)
        self._joins = Joiner(self.groups, self.effects, self.rebalance, self.limits)
        self._syncs = Syncer(self.groups, self.effects, self.rebalance)
        self._members = Membership(self.groups, self.rebalance, self.limits)
        self._schedule = Schedule(self.groups)

    def take_effects(self) -> list[Effect]:
        out = list(self.effects)
        self.effects.clear()
        return out

    def join(self, request: JoinRequest, token: object, now_ms: int) -> JoinResult | None:
        self._schedule.touch(request.group_id)
        return self._joins.join(request, token, now_ms)

    def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        assignments: dict[str, bytes],
        token: object,
        now_ms: int,
        protocol: tuple[str | None, str | None] = (None, None),
    ) -> SyncResult | None:
        self._schedule.touch(group_id)
        return self._syncs.sync(
            group_id, generation, member_id, instance_id, assignments, token, now_ms, protocol
        )

    def stored(self, metadata: GroupMetadata, ok: bool, now_ms: int) -> None:
        """The outcome of a Store effect (see Syncer.stored)."""
        self._schedule.touch(metadata.group_id)
        self._syncs.stored(metadata, ok, now_ms)

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        self._schedule.touch(group_id)
        return self._members.heartbeat(group_id, generation, member_id, instance_id, now_ms)

    def leave(
        self, group_id: str, members: list[tuple[str, str | None]], now_ms: int
    ) -> list[ErrorCode]:
        self._schedule.touch(group_id)
        return self._members.leave(group_id, members, now_ms)

    def commit_allowed(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        self._schedule.touch(group_id)
        return self._members.commit_allowed(group_id, generation, member_id, instance_id, now_ms)

    def hold(self, group_id: str, now_ms: int) -> ErrorCode:
        code = self._members.hold(group_id, now_ms)
        self._schedule.touch(group_id)
        return code

    # -- timers -----------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """No later than the earliest timeout of any group (it may be earlier)."""
        return self._schedule.next_deadline()

    def tick(self, now_ms: int) -> None:
        for group_id in self._schedule.due(now_ms):
            fire(self.groups[group_id], self.rebalance, now_ms)

    # -- reload, DeleteGroups, expiry -------------------------------------------------

    def restore(self, meta: GroupMetadata, now_ms: int) -> None:
        """A group read back from the offsets topic. One above `max_size` (the limit
        was lowered) rebalances at once, as Kafka's does on load: the members that
        rejoin last are refused with GROUP_MAX_SIZE_REACHED."""
        g = self.groups[meta.group_id] = Group.from_metadata(meta, now_ms)
        if len(g.members) > self.limits.max_size:
            self.rebalance.prepare(g, now_ms)
        self._schedule.touch(meta.group_id)

    def restore_offsets_only(self, group_id: str, now_ms: int) -> None:
        """A group known only by its committed offsets (a standalone consumer's): Empty,
        as Kafka loads it, so it counts towards `max_groups` and its commits go on."""
        if group_id not in self.groups:
            self.groups[group_id] = Group(group_id, state_ms=now_ms)

    def delete(self, group_id: str) -> ErrorCode:
        code = self.deletable(group_id)
        if code is ErrorCode.none:
            self.forget(group_id)
        return code

    def deletable(self, group_id: str) -> ErrorCode:
        """DeleteGroups' check: only an Empty group goes."""
        g = self.groups.get(group_id)
        if g is None or g.state is GroupState.DEAD:
            return ErrorCode.group_id_not_found
        if g.state is not GroupState.EMPTY:
            return ErrorCode.non_empty_group
        return ErrorCode.none

    def unload(self, group_ids: list[str]) -> None:
        """Another instance coordinates these groups now: their parked requests are
        answered NOT_COORDINATOR (the clients look the coordinator up again) and the
        groups leave memory; their records stay in the offsets topic for the next."""
        for group_id in group_ids:
            self.hand_over(group_id, ErrorCode.not_coordinator)

    def hand_over(self, group_id: str, error: ErrorCode) -> GroupMetadata | None:
        """The group leaves this coordinator (another instance coordinates it, or it
        becomes a KIP-848 group: REBALANCE_IN_PROGRESS, so its members join again):
        its parked requests are answered `error`; what it was is returned."""
        g: Group | None = self.groups.pop(group_id, None)
        if g is None:
            return None
        meta: GroupMetadata = g.to_metadata()
        g.state = GroupState.DEAD
        for m in g.members.values():
            if m.join_token is not None:
                self.effects.append(Answer(m.join_token, JoinResult(error, m.member_id)))
            if m.sync_token is not None:
                self.effects.append(Answer(m.sync_token, SyncResult(error)))
            m.join_token = m.sync_token = None
        return meta

    def adopt(self, meta: GroupMetadata, now_ms: int) -> None:
        """A KIP-848 group whose last member of that protocol left becomes a classic
        group again (kop/groups/consumer/migration.py): its members rejoin at once."""
        self.groups[meta.group_id] = g = Group.from_metadata(meta, now_ms)
        self.rebalance.prepare(g, now_ms)
        self._schedule.touch(meta.group_id)

    def forget(self, group_id: str) -> None:
        """Drop a group (deleted, or Empty with every offset expired)."""
        g = self.groups.pop(group_id, None)
        if g is not None:
            g.state = GroupState.DEAD
