"""One classic consumer group's membership: members, generation, chosen protocol
and the timers that bound each phase. No I/O; the coordinator drives it.

Parked requests (a JoinGroup waiting for the rebalance, a SyncGroup waiting for
the leader's assignment) are represented by tokens the caller chose; the group
only remembers which member holds which token.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kop.groups.consumer_protocol import subscribed_topics
from kop.groups.types import GroupMetadata, GroupState, MemberMetadata

# KIP-394: a member id handed out with MEMBER_ID_REQUIRED, or a member that joined
# for the first time, is dropped if it does not (re)join within this long.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


@dataclass(slots=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    join_token: object | None = None  # a JoinGroup parked until the rebalance completes
    sync_token: object | None = None  # a SyncGroup parked until the leader's assignment
    is_new: bool = True
    last_seen_ms: int = 0  # last heartbeat, join or sync

    def metadata_for(self, protocol: str) -> bytes:
        return next(meta for name, meta in self.protocols if name == protocol)

    def matches(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        return self.protocols == protocols

    def alive_at(self, now_ms: int) -> bool:
        """Kafka's shouldKeepAlive: a member waiting on a join is kept (a new one for
        NEW_MEMBER_JOIN_TIMEOUT_MS), one waiting on a sync is kept until the sync
        deadline, otherwise heartbeats must arrive within the session timeout."""
        if self.join_token is not None:
            return not self.is_new or now_ms < self.last_seen_ms + NEW_MEMBER_JOIN_TIMEOUT_MS
        if self.sync_token is not None:
            return True
        return now_ms < self.last_seen_ms + self.session_timeout_ms

    def to_metadata(self) -> MemberMetadata:
        return MemberMetadata(
            self.member_id, self.instance_id, self.client_id, self.client_host,
            self.session_timeout_ms, self.rebalance_timeout_ms, self.protocols, self.assignment,
        )  # fmt: skip


@dataclass(slots=True)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    protocol_type: str | None = None
    protocol: str | None = None
    generation: int = 0
    leader: str | None = None
    state_ms: int = 0  # when the current state began (offset expiry of Empty groups)
    members: dict[str, Member] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)  # member id -> expires at (ms)
    static: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    join_deadline_ms: int | None = None  # PreparingRebalance ends by then at the latest
    initial_end_ms: int | None = None  # set while an initial delayed join may extend
    sync_deadline_ms: int | None = None  # CompletingRebalance ends by then at the latest
    new_member_added: bool = False  # during an initial delayed join

    def transition(self, state: GroupState, now_ms: int) -> None:
        self.state = state
        self.state_ms = now_ms

    def supports(self, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """A member may join only with the group's protocol type and at least one
        protocol every current member also supports."""
        if not protocols:
            return False
        if not self.members:
            return True
        if protocol_type != self.protocol_type:
            return False
        names = {name for name, _ in protocols}
        return bool(names & self.candidates())

    def candidates(self) -> set[str]:
        common: set[str] | None = None
        for m in self.members.values():
            names = {name for name, _ in m.protocols}
            common = names if common is None else common & names
        return common or set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol all members support;
        the most votes wins (Kafka's rule; ties go to the first counted)."""
        candidates = self.candidates()
        votes: Counter[str] = Counter()
        for m in self.members.values():
            votes[next(name for name, _ in m.protocols if name in candidates)] += 1
        return votes.most_common(1)[0][0]

    def all_joined(self) -> bool:
        return not self.pending and all(m.join_token is not None for m in self.members.values())

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def add(self, member: Member) -> None:
        self.members[member.member_id] = member
        self.pending.pop(member.member_id, None)
        if member.instance_id is not None:
            self.static[member.instance_id] = member.member_id
        if self.protocol_type is None or len(self.members) == 1:
            self.protocol_type = member.protocol_type

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None and member.instance_id is not None:
            self.static.pop(member.instance_id, None)
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return member

    def fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A static member whose instance id now belongs to another member id."""
        if instance_id is None:
            return False
        known = self.static.get(instance_id)
        return known is not None and known != member_id

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members of a consumer group subscribe to; None when that
        cannot be known (another protocol type, or unreadable metadata)."""
        if self.protocol_type != "consumer" or self.protocol is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            found = subscribed_topics(m.metadata_for(self.protocol))
            if found is None:
                return None
            topics.update(found)
        return topics

    @classmethod
    def from_metadata(cls, meta: GroupMetadata, now_ms: int) -> Group:
        """Its last generation, Stable with its members (their sessions start now, as
        when Kafka's coordinator moves), or Empty."""
        g = cls(meta.group_id, protocol_type=meta.protocol_type, protocol=meta.protocol,
                generation=meta.generation, leader=meta.leader, state_ms=meta.state_ms)  # fmt: skip
        if meta.protocol is None:
            return g
        for m in meta.members:
            g.add(Member(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.session_timeout_ms, m.rebalance_timeout_ms, meta.protocol_type or "",
                m.protocols, m.assignment, is_new=False, last_seen_ms=now_ms,
            ))  # fmt: skip
        g.state = GroupState.STABLE if g.members else GroupState.EMPTY
        return g

    def to_metadata(self) -> GroupMetadata:
        return GroupMetadata(
            self.group_id, self.protocol_type, self.generation, self.protocol, self.leader,
            self.state_ms, tuple(m.to_metadata() for m in self.members.values()),
        )  # fmt: skip
