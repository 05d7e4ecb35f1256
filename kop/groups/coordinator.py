"""The classic group coordinator as a pure state machine (the h11 shape): every
call takes the time, changes the groups and returns an answer at once or parks
the request under the caller's token (PARKED); answers to parked requests and
group records to persist collect in `effects`, which the caller drains after
each call (`take_effects`). The caller also calls `tick(now)` by
`next_deadline()` so timeouts fire. No I/O, no clock, no asyncio.

The rules and error codes are Kafka's (GroupCoordinator.scala); JoinGroup's live
in joins.py, the phases of a rebalance in rebalance.py.
"""

from __future__ import annotations

from kop.groups.group import Group
from kop.groups.joins import PARKED, Joiner, JoinRequest, Limits
from kop.groups.rebalance import Effect, JoinResult, Rebalancer, Store, SyncResult
from kop.groups.timers import deadlines, fire
from kop.groups.types import GroupMetadata, GroupState
from kop.protocol.errors import ErrorCode

__all__ = ["PARKED", "Coordinator", "JoinRequest", "Limits"]


class Coordinator:
    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.groups: dict[str, Group] = {}
        self.effects: list[Effect] = []
        self.rebalance = Rebalancer(self.effects, self.limits.initial_rebalance_delay_ms)
        self._joins = Joiner(self.groups, self.effects, self.rebalance, self.limits)

    def take_effects(self) -> list[Effect]:
        out = list(self.effects)
        self.effects.clear()
        return out

    def join(self, request: JoinRequest, token: object, now_ms: int) -> JoinResult | None:
        return self._joins.join(request, token, now_ms)

    def _member_error(
        self, g: Group | None, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode | None:
        """The checks SyncGroup, Heartbeat and OffsetCommit share, in Kafka's order."""
        if g is None or g.state is GroupState.DEAD:
            return ErrorCode.unknown_member_id if g is None else ErrorCode.coordinator_not_available
        if g.fenced(member_id, instance_id):
            return ErrorCode.fenced_instance_id
        if member_id not in g.members:
            return ErrorCode.unknown_member_id
        if generation != g.generation:
            return ErrorCode.illegal_generation
        return None

    # -- SyncGroup ---------------------------------------------------------------

    def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        assignments: dict[str, bytes],
        token: object,
        now_ms: int,
    ) -> SyncResult | None:
        g = self.groups.get(group_id)
        error = self._member_error(g, member_id, instance_id, generation)
        if error is not None or g is None:
            return SyncResult(error or ErrorCode.unknown_member_id)
        member = g.members[member_id]
        member.last_seen_ms = now_ms
        if g.state is GroupState.PREPARING_REBALANCE:
            return SyncResult(ErrorCode.rebalance_in_progress)
        if g.state is GroupState.STABLE:
            return SyncResult(ErrorCode.none, g.protocol_type, g.protocol, member.assignment)
        member.sync_token = token
        if member_id == g.leader:
            for m in g.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            g.sync_deadline_ms = None
            self.effects.append(Store(g.to_metadata()))  # answered in stored()
        return PARKED

    def stored(self, metadata: GroupMetadata, ok: bool, now_ms: int) -> None:
        """The outcome of a Store effect. The sync that completes a generation is
        answered only once its record is persisted; if it could not be, the
        generation is abandoned (COORDINATOR_NOT_AVAILABLE, as Kafka answers a
        failed write) and the members rejoin."""
        g = self.groups.get(metadata.group_id)
        if g is None or g.generation != metadata.generation:
            return
        if g.state is not GroupState.COMPLETING_REBALANCE or g.sync_deadline_ms is not None:
            return
        if ok:
            g.transition(GroupState.STABLE, now_ms)
            self.rebalance.answer_syncs(g, ErrorCode.none)
        else:
            self.rebalance.answer_syncs(g, ErrorCode.coordinator_not_available)
            self.rebalance.prepare(g, now_ms)

    # -- Heartbeat, LeaveGroup -------------------------------------------------------

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        g = self.groups.get(group_id)
        error = self._member_error(g, member_id, instance_id, generation)
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
        codes = []
        for member_id, instance_id in members:
            if instance_id is not None:
                known = g.static.get(instance_id)
                if known is None:
                    codes.append(ErrorCode.unknown_member_id)
                    continue
                if member_id and member_id != known:
                    codes.append(ErrorCode.fenced_instance_id)
                    continue
                member_id = known
            if member_id in g.pending:
                del g.pending[member_id]
                self.rebalance.maybe_complete_join(g, now_ms)
                codes.append(ErrorCode.none)
            elif member_id in g.members:
                self.rebalance.remove_member(g, member_id, now_ms)
                codes.append(ErrorCode.none)
            else:
                codes.append(ErrorCode.unknown_member_id)
        return codes

    # -- OffsetCommit ----------------------------------------------------------------

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
            g = self.groups[group_id] = Group(group_id, state_ms=now_ms)
        if g.state is GroupState.DEAD:
            return ErrorCode.coordinator_not_available
        if g.fenced(member_id, instance_id):
            return ErrorCode.fenced_instance_id
        if generation < 0 and g.state is GroupState.EMPTY:
            return ErrorCode.none
        if g.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        error = self._member_error(g, member_id, instance_id, generation)
        if error is not None:
            return error
        g.members[member_id].last_seen_ms = now_ms
        return ErrorCode.none

    # -- timers -----------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        times = [t for g in self.groups.values() for t in deadlines(g)]
        return min(times) if times else None

    def tick(self, now_ms: int) -> None:
        for g in list(self.groups.values()):
            fire(g, self.rebalance, now_ms)

    # -- reload, DeleteGroups ---------------------------------------------------------

    def restore(self, meta: GroupMetadata, now_ms: int) -> None:
        """A group read back from the offsets topic."""
        self.groups[meta.group_id] = Group.from_metadata(meta, now_ms)

    def delete(self, group_id: str) -> ErrorCode:
        g = self.groups.get(group_id)
        if g is None or g.state is GroupState.DEAD:
            return ErrorCode.group_id_not_found
        if g.state is not GroupState.EMPTY:
            return ErrorCode.non_empty_group
        g.state = GroupState.DEAD
        del self.groups[group_id]
        return ErrorCode.none
