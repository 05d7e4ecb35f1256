"""SyncGroup: the leader hands out the assignment, and the generation completes
once its record is persisted (GroupCoordinator.handleSyncGroup). Part of the pure
coordinator (see coordinator.py)."""

from __future__ import annotations

from kop.groups.group import Group
from kop.groups.joins import PARKED
from kop.groups.membership import member_error
from kop.groups.rebalance import Effect, Rebalancer, Store, SyncResult
from kop.groups.types import GroupMetadata, GroupState
from kop.protocol.errors import ErrorCode


class Syncer:
    def __init__(self, groups: dict[str, Group], effects: list[Effect], rebalance: Rebalancer):
        self.groups = groups
        self.effects = effects
        self.rebalance = rebalance

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
        """`protocol` is the (type, name) a v5+ request names: one the group does not
        have is INCONSISTENT_GROUP_PROTOCOL, once member and generation are known good."""
        g = self.groups.get(group_id)
        error = member_error(g, member_id, instance_id, generation)
        if error is not None or g is None:
            return SyncResult(error or ErrorCode.unknown_member_id)
        if _differs(protocol[0], g.protocol_type) or _differs(protocol[1], g.protocol):
            return SyncResult(ErrorCode.inconsistent_group_protocol)
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


def _differs(asked: str | None, held: str | None) -> bool:
    return asked is not None and held is not None and asked != held
