"""JoinGroup: Kafka's rules for who may join and what a join starts
(GroupCoordinator.handleJoinGroup, KIP-345 static membership, KIP-394 member id
required). Part of the pure coordinator (see coordinator.py)."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass

from kop.groups.group import Group, Member
from kop.groups.rebalance import Answer, Effect, JoinResult, Rebalancer, Store, SyncResult
from kop.groups.tenant_keys import HeldGroups
from kop.groups.types import GroupState
from kop.protocol.errors import ErrorCode

PARKED = None  # returned instead of a result when the answer comes later as an effect


@dataclass(frozen=True, slots=True)
class Limits:
    min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms
    max_size: int = 2**31 - 1  # group.max.size
    max_groups: int = 2**31 - 1  # kop's own: groups held at once (Kafka has no such bound)
    max_groups_per_tenant: int = 2**31 - 1  # kop's own: a tenant's share of max_groups
    default_tenant: str = ""  # the tenant of the default namespace's (bare) group ids


def group_refused(groups: HeldGroups, limits: Limits, group_id: str) -> bool:
    """A group not held yet is refused while `max_groups` are, or while its tenant holds
    `max_groups_per_tenant` (COORDINATOR_NOT_AVAILABLE: retriable, so its clients go
    on once expiry or a deletion makes room)."""
    if group_id in groups:
        return False
    full = len(groups) >= limits.max_groups
    return full or groups.of_tenant(group_id) >= limits.max_groups_per_tenant


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    instance_id: str | None
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str
    client_host: str
    require_known_member_id: bool  # JoinGroup v4+
    supports_skip_assignment: bool = False  # JoinGroup v9+ (KIP-814)


class Joiner:
    def __init__(
        self, groups: HeldGroups, effects: list[Effect], rebalance: Rebalancer, limits: Limits
    ) -> None:
        self.groups = groups
        self.effects = effects
        self.rebalance = rebalance
        self.limits = limits

    def join(self, r: JoinRequest, token: object, now_ms: int) -> JoinResult | None:
        if not r.group_id:
            return JoinResult(ErrorCode.invalid_group_id, r.member_id)
        lim = self.limits
        if not lim.min_session_timeout_ms <= r.session_timeout_ms <= lim.max_session_timeout_ms:
            return JoinResult(ErrorCode.invalid_session_timeout, r.member_id)
        g = self.groups.get(r.group_id)
        if g is None:
            if r.member_id:  # a member of a group this coordinator does not know
                return JoinResult(ErrorCode.unknown_member_id, r.member_id)
            if group_refused(self.groups, lim, r.group_id):
                return JoinResult(ErrorCode.coordinator_not_available, r.member_id)
            g = self.groups[r.group_id] = Group(r.group_id, state_ms=now_ms)
        if g.state is GroupState.DEAD:
            return JoinResult(ErrorCode.coordinator_not_available, r.member_id)
        if not g.supports(r.protocol_type, r.protocols):
            return JoinResult(ErrorCode.inconsistent_group_protocol, r.member_id)
        if not r.member_id:
            return self._join_unknown(g, r, token, now_ms)
        return self._join_known(g, r, token, now_ms)

    def _join_unknown(
        self, g: Group, r: JoinRequest, token: object, now_ms: int
    ) -> JoinResult | None:
        member_id = f"{r.client_id}-{uuid.uuid4()}"
        if r.instance_id is not None and r.instance_id in g.static:
            return self._replace_static(g, r, member_id, token, now_ms)
        if len(g.members) + len(g.pending) >= self.limits.max_size:
            return JoinResult(ErrorCode.group_max_size_reached, "")
        if r.require_known_member_id and r.instance_id is None:
            g.pending[member_id] = now_ms + r.session_timeout_ms  # KIP-394: join again with it
            return JoinResult(ErrorCode.member_id_required, member_id)
        self._add(g, r, member_id, token, now_ms)
        return PARKED

    def _join_known(
        self, g: Group, r: JoinRequest, token: object, now_ms: int
    ) -> JoinResult | None:
        if r.member_id in g.pending:
            self._add(g, r, r.member_id, token, now_ms)
            return PARKED
        member = g.members.get(r.member_id)
        if g.fenced(r.member_id, r.instance_id):
            return JoinResult(ErrorCode.fenced_instance_id, r.member_id)
        if member is None:
            return JoinResult(ErrorCode.unknown_member_id, r.member_id)
        if self._over_capacity(g, member):
            self.rebalance.remove_member(g, member.member_id, now_ms)
            return JoinResult(ErrorCode.group_max_size_reached, "")
        member.last_seen_ms = now_ms
        # Nothing changed: the same generation again (its join answer may have been
        # lost), except that a leader rejoining a Stable group starts a rebalance.
        follower = g.state is GroupState.STABLE and member.member_id != g.leader
        if member.matches(r.protocols) and (g.state is GroupState.COMPLETING_REBALANCE or follower):
            return self._current_generation(g, member)
        self._update(g, member, r, token, now_ms)
        return PARKED

    def _over_capacity(self, g: Group, member: Member) -> bool:
        """Kafka's acceptJoiningMember for a member rejoining a rebalance: refused once
        `max_size` members have rejoined. Only a group above the limit (reloaded after
        it was lowered) can get there; it sheds the members that rejoin last."""
        if g.state is not GroupState.PREPARING_REBALANCE or member.join_token is not None:
            return False
        if len(g.members) <= self.limits.max_size:
            return False
        rejoined = sum(1 for m in g.members.values() if m.join_token is not None)
        return rejoined >= self.limits.max_size

    def _current_generation(self, g: Group, member: Member) -> JoinResult:
        everyone: tuple[tuple[str, str | None, bytes], ...] = ()
        if member.member_id == g.leader and g.protocol is not None:
            everyone = tuple(
                (m.member_id, m.instance_id, m.metadata_for(g.protocol)) for m in g.members.values()
            )
        return JoinResult(
            ErrorCode.none, member.member_id, g.generation, g.protocol_type, g.protocol,
            g.leader or "", everyone,
        )  # fmt: skip

    def _replace_static(
        self, g: Group, r: JoinRequest, member_id: str, token: object, now_ms: int
    ) -> JoinResult | None:
        """KIP-345: a static member rejoining with a new member id takes over the old
        one's place (the old id is fenced from now on). In a Stable group whose
        selected protocol stays the same it gets its assignment back without a
        rebalance, whatever else its subscription says (Java and librdkafka put
        owned partitions and the generation in it), as Kafka's coordinator does."""
        old = g.members[g.static[r.instance_id or ""]]
        old_leader = g.leader
        g.remove(old.member_id)
        if old.join_token is not None:
            self.effects.append(
                Answer(old.join_token, JoinResult(ErrorCode.fenced_instance_id, old.member_id))
            )
        if old.sync_token is not None:
            self.effects.append(Answer(old.sync_token, SyncResult(ErrorCode.fenced_instance_id)))
        new = _member(r, member_id, now_ms)
        new.assignment, new.is_new = old.assignment, False
        g.add(new)
        g.leader = member_id if old_leader in (old.member_id, None) else old_leader
        if g.state is GroupState.STABLE and g.select_protocol() == g.protocol:
            self.effects.append(Store(g.to_metadata()))
            return self._static_rejoined(g, new, old_leader, r.supports_skip_assignment)
        new.join_token = token
        if g.state is GroupState.PREPARING_REBALANCE:
            self.rebalance.maybe_complete_join(g, now_ms)
        else:
            self.rebalance.prepare(g, now_ms)
        return PARKED

    def _static_rejoined(
        self, g: Group, new: Member, old_leader: str | None, skip_supported: bool
    ) -> JoinResult:
        """KIP-814: a rejoined static leader must not run the assignor, since a Stable
        group would drop its new assignment. From v9 it is told it leads with
        `skip_assignment`; before, it is given the old leader's id and no members,
        so it takes itself for a follower."""
        if skip_supported:
            result = self._current_generation(g, new)
            return dataclasses.replace(result, skip_assignment=new.member_id == g.leader)
        return JoinResult(
            ErrorCode.none, new.member_id, g.generation, g.protocol_type, g.protocol,
            old_leader or "",
        )  # fmt: skip

    def _add(self, g: Group, r: JoinRequest, member_id: str, token: object, now_ms: int) -> None:
        member = _member(r, member_id, now_ms)
        member.join_token = token
        g.add(member)
        g.new_member_added = True
        if g.state is not GroupState.PREPARING_REBALANCE:
            self.rebalance.prepare(g, now_ms)
        else:
            self.rebalance.maybe_complete_join(g, now_ms)

    def _update(self, g: Group, m: Member, r: JoinRequest, token: object, now_ms: int) -> None:
        if m.join_token is not None:  # a retried join replaces the earlier one
            self.effects.append(
                Answer(m.join_token, JoinResult(ErrorCode.rebalance_in_progress, m.member_id))
            )
        m.protocols, m.join_token = r.protocols, token
        m.session_timeout_ms, m.rebalance_timeout_ms = r.session_timeout_ms, r.rebalance_timeout_ms
        if g.state is not GroupState.PREPARING_REBALANCE:
            self.rebalance.prepare(g, now_ms)
        else:
            self.rebalance.maybe_complete_join(g, now_ms)


def _member(r: JoinRequest, member_id: str, now_ms: int) -> Member:
    return Member(
        member_id, r.instance_id, r.client_id, r.client_host, r.session_timeout_ms,
        r.rebalance_timeout_ms, r.protocol_type, r.protocols, last_seen_ms=now_ms,
    )  # fmt: skip
