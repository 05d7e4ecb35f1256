"""The phases of a rebalance (Kafka's GroupCoordinator: prepareRebalance,
onCompleteJoin, the sync that completes a generation, member removal), as pure
transitions of a `Group` that leave their answers and writes in an outbox."""

from __future__ import annotations

from dataclasses import dataclass

from kop.groups.group import Group
from kop.groups.types import GroupMetadata, GroupState
from kop.protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str
    generation: int = -1
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    # For the leader only: (member id, instance id, subscription metadata).
    members: tuple[tuple[str, str | None, bytes], ...] = ()
    # KIP-814 (JoinGroup v9+): a static leader that rejoined a Stable group is told it
    # leads, but must not run the assignor (the group keeps its assignment).
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class Answer:
    """A parked request's response, ready."""

    token: object
    result: JoinResult | SyncResult


@dataclass(frozen=True, slots=True)
class Store:
    """Write the group's record; call `Coordinator.stored` with the outcome when it
    is persisted (a generation's syncs are answered only after that)."""

    metadata: GroupMetadata


Effect = Answer | Store


class Rebalancer:
    def __init__(self, outbox: list[Effect], initial_delay_ms: int) -> None:
        self._out = outbox
        self._initial_delay_ms = initial_delay_ms
        self.count = 0  # rebalances started, for metrics

    def prepare(self, g: Group, now_ms: int) -> None:
        """Start a rebalance: parked syncs learn one is in progress; joins are
        collected until everyone rejoined or the longest rebalance timeout ends it.
        A group rebalancing from Empty waits `initial_delay_ms` for more members
        (group.initial.rebalance.delay.ms), extended while they keep coming."""
        if g.state is GroupState.COMPLETING_REBALANCE:
            self.answer_syncs(g, ErrorCode.rebalance_in_progress)
        initial = g.state is GroupState.EMPTY and self._initial_delay_ms > 0
        timeout = g.max_rebalance_timeout_ms()
        g.sync_deadline_ms = None
        if initial:
            g.join_deadline_ms = now_ms + min(self._initial_delay_ms, max(timeout, 1))
            g.initial_end_ms = now_ms + max(timeout, self._initial_delay_ms)
            g.new_member_added = False
        else:
            g.join_deadline_ms = now_ms + timeout
            g.initial_end_ms = None
        g.transition(GroupState.PREPARING_REBALANCE, now_ms)
        self.count += 1
        self.maybe_complete_join(g, now_ms)  # everyone may have rejoined already

    def maybe_complete_join(self, g: Group, now_ms: int) -> None:
        """Complete the join once everyone rejoined; during an initial delay only
        when nobody is left to wait for (the group then goes Empty at once)."""
        if g.state is not GroupState.PREPARING_REBALANCE or not g.all_joined():
            return
        if g.initial_end_ms is None or not (g.members or g.pending):
            self.complete_join(g, now_ms)

    def join_deadline(self, g: Group, now_ms: int) -> None:
        if g.initial_end_ms is not None and g.new_member_added and now_ms < g.initial_end_ms:
            g.new_member_added = False
            due = g.join_deadline_ms if g.join_deadline_ms is not None else now_ms
            g.join_deadline_ms = min(due + self._initial_delay_ms, g.initial_end_ms)
            return
        self.complete_join(g, now_ms)

    def complete_join(self, g: Group, now_ms: int) -> None:
        """onCompleteJoin: dynamic members that did not rejoin are dropped, then the
        next generation starts: Empty if nobody is left, else CompletingRebalance with
        a join answer for everyone who joined (the member list for the leader). If
        only static members that did not rejoin are left, completion is postponed by
        another rebalance timeout, as Kafka does: their sessions decide whether they
        stay, and a generation nobody was told of would only be abandoned."""
        for m in list(g.members.values()):
            if m.join_token is None and m.instance_id is None:
                g.remove(m.member_id)
        if g.members and all(m.join_token is None for m in g.members.values()):
            g.join_deadline_ms = now_ms + g.max_rebalance_timeout_ms()
            g.initial_end_ms = None
            return
        g.pending.clear()
        g.join_deadline_ms = g.initial_end_ms = None
        g.generation += 1
        if not g.members:
            g.protocol = g.leader = None
            g.transition(GroupState.EMPTY, now_ms)
            self._out.append(Store(g.to_metadata()))
            return
        g.protocol = g.select_protocol()
        if g.leader not in g.members or g.members[g.leader].join_token is None:
            joined = [m.member_id for m in g.members.values() if m.join_token is not None]
            g.leader = joined[0] if joined else next(iter(g.members))
        g.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        g.sync_deadline_ms = now_ms + g.max_rebalance_timeout_ms()
        everyone = tuple(
            (m.member_id, m.instance_id, m.metadata_for(g.protocol)) for m in g.members.values()
        )
        for m in g.members.values():
            m.assignment = b""
            if m.join_token is None:
                continue
            token, m.join_token = m.join_token, None
            m.is_new = False
            m.last_seen_ms = now_ms
            result = JoinResult(
                ErrorCode.none, m.member_id, g.generation, g.protocol_type, g.protocol,
                g.leader or "", everyone if m.member_id == g.leader else (),
            )  # fmt: skip
            self._out.append(Answer(token, result))

    def answer_syncs(self, g: Group, error: ErrorCode) -> None:
        for m in g.members.values():
            if m.sync_token is not None:
                token, m.sync_token = m.sync_token, None
                if error is ErrorCode.none:
                    result = SyncResult(error, g.protocol_type, g.protocol, m.assignment)
                else:
                    result = SyncResult(error, g.protocol_type, g.protocol)
                self._out.append(Answer(token, result))

    def remove_member(self, g: Group, member_id: str, now_ms: int) -> None:
        """A member left or timed out: its parked requests are answered with
        UNKNOWN_MEMBER_ID and the group rebalances (or finishes the one under way)."""
        member = g.remove(member_id)
        if member is None:
            return
        if member.join_token is not None:
            self._out.append(
                Answer(member.join_token, JoinResult(ErrorCode.unknown_member_id, member_id))
            )
        if member.sync_token is not None:
            self._out.append(Answer(member.sync_token, SyncResult(ErrorCode.unknown_member_id)))
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.prepare(g, now_ms)
        if g.state is GroupState.PREPARING_REBALANCE:
            if not g.members and not g.pending:
                self.complete_join(g, now_ms)
            else:
                self.maybe_complete_join(g, now_ms)
