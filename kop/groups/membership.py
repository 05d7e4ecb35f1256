"""What existing members do besides joining and syncing: heartbeats, leaving (one
or a batch, KIP-345 by instance id) and the check before an OffsetCommit is
stored. Part of the pure coordinator (see coordinator.py); the rules and error
codes are Kafka's GroupCoordinator's."""

from __future__ import annotations

from kop.groups.group import Group
from kop.groups.joins import Limits, group_refused
from kop.groups.rebalance import Rebalancer
from kop.groups.tenant_keys import HeldGroups
from kop.groups.types import GroupState
from kop.protocol.errors import ErrorCode


def member_error(
    g: Group | None, member_id: str, instance_id: str | None, generation: int
) -> ErrorCode | None:
    """The checks SyncGroup, Heartbeat and OffsetCommit share, in Kafka's order: the
    member (ClassicGroup.validateMember), then its generation; the group's state only
    after both, so a stale or unknown member learns that first."""
    if g is None or g.state is GroupState.DEAD:
        return ErrorCode.unknown_member_id if g is None else ErrorCode.coordinator_not_available
    return unknown_member(g, member_id, instance_id) or (
        ErrorCode.illegal_generation if generation != g.generation else None
    )


def unknown_member(g: Group, member_id: str, instance_id: str | None) -> ErrorCode | None:
    """A static member is known by its instance id (another member id holding it is
    fenced), a dynamic one by its member id."""
    if instance_id is not None:
        known = g.static.get(instance_id)
        if known is None:
            return ErrorCode.unknown_member_id
        return ErrorCode.fenced_instance_id if known != member_id else None
    return ErrorCode.unknown_member_id if member_id not in g.members else None


class Membership:
    def __init__(self, groups: HeldGroups, rebalance: Rebalancer, limits: Limits) -> None:
        self.groups = groups
        self.rebalance = rebalance
        self.limits = limits

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        g = self.groups.get(group_id)
        error = member_error(g, member_id, instance_id, generation)
        if error is not None or g is None:
            return error or ErrorCode.unknown_member_id
        g.members[member_id].last_seen_ms = now_ms
        if g.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    def leave(
        self, group_id: str, members: list[tuple[str, str | None]], now_ms: int
    ) -> list[ErrorCode]:
        """LeaveGroup (v3+: a batch; a static member may be named by instance id
        alone). One error code per member, in order."""
        g = self.groups.get(group_id)
        if g is None or g.state is GroupState.DEAD:
            return [ErrorCode.unknown_member_id for _ in members]
        return [
            self._leave_one(g, member_id, instance_id, now_ms) for member_id, instance_id in members
        ]

    def _leave_one(
        self, g: Group, member_id: str, instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        if instance_id is not None:
            known = g.static.get(instance_id)
            if known is None:
                return ErrorCode.unknown_member_id
            if member_id and member_id != known:
                return ErrorCode.fenced_instance_id
            member_id = known
        if member_id in g.pending:
            del g.pending[member_id]
            self.rebalance.maybe_complete_join(g, now_ms)
        elif member_id in g.members:
            self.rebalance.remove_member(g, member_id, now_ms)
        else:
            return ErrorCode.unknown_member_id
        return ErrorCode.none

    def hold(self, group_id: str, now_ms: int) -> ErrorCode:
        """A transactional producer outside the group commits its offsets (TxnOffsetCommit
        with generation -1 and no member): the group needs room like any other new one,
        or standalone transactional commits would grow the groups past every bound."""
        if group_id in self.groups:
            return ErrorCode.none
        if group_refused(self.groups, self.limits, group_id):
            return ErrorCode.coordinator_not_available
        self.groups[group_id] = Group(group_id, state_ms=now_ms)
        return ErrorCode.none

    def commit_allowed(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        """Whether an OffsetCommit may be stored. Standalone consumers and assign()
        users commit with generation -1 to an Empty (or new) group; members of the
        current generation commit, also while a rebalance is being prepared."""
        g = self.groups.get(group_id)
        if g is None:
            if generation >= 0:  # from a generation this coordinator never had
                return ErrorCode.illegal_generation
            if group_refused(self.groups, self.limits, group_id):
                return ErrorCode.coordinator_not_available
            g = self.groups[group_id] = Group(group_id, state_ms=now_ms)
        if g.state is GroupState.DEAD:
            return ErrorCode.coordinator_not_available
        if generation < 0 and g.state is GroupState.EMPTY:
            return ErrorCode.none
        if generation >= 0 or member_id or instance_id is not None:
            error = member_error(g, member_id, instance_id, generation)
            if error is not None:
                return error
        elif g.state is not GroupState.EMPTY:
            return ErrorCode.unknown_member_id  # no member named: only to an Empty group
        if g.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.rebalance_in_progress  # a valid member, before its sync
        g.members[member_id].last_seen_ms = now_ms
        return ErrorCode.none
