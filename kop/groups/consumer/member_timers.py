"""When each member of a KIP-848 group times out, for one of four reasons: its session
expired (no heartbeat within the group's session timeout, or a classic member's own),
it did not revoke partitions within its rebalance timeout, or a classic member did not
rejoin when told to, or sync after it joined, within its rebalance timeout (Kafka's join
and sync timeouts). Pure bookkeeping: the coordinator says what happened and asks what
is due."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kop.groups.consumer.group import ConsumerGroup
from kop.groups.consumer.member import ConsumerMember, MemberState

SESSION = "the member session expired"
REVOKE = "it failed to revoke its partitions within its rebalance timeout"
REJOIN = "it did not rejoin within its rebalance timeout"
SYNC = "it did not sync within its rebalance timeout after it joined"


@dataclass(frozen=True, slots=True)
class Due:
    group_id: str
    member_id: str
    why: str


class MemberTimers:
    def __init__(self, session_of: Callable[[str, ConsumerMember], int]) -> None:
        self._session_of = session_of  # (group, member) -> its session timeout
        # reason -> group -> member -> when
        self._at: dict[str, dict[str, dict[str, int]]] = {
            SESSION: {},
            REVOKE: {},
            REJOIN: {},
            SYNC: {},
        }
        # group -> member -> the member epoch its revocation timer was set at
        self._revoking: dict[str, dict[str, int]] = {}

    def installed(self, g: ConsumerGroup, now_ms: int, beating: str | None) -> None:
        """`g` is the group now: members gone lose their timers, `beating` starts its
        session again, a member that started revoking at a new epoch gets its timeout."""
        for timers in (*self._at.values(), self._revoking):
            of_group = timers.setdefault(g.group_id, {})
            for gone in [m for m in of_group if m not in g.members]:
                del of_group[gone]
        sessions = self._at[SESSION][g.group_id]
        revokes, epochs = self._at[REVOKE][g.group_id], self._revoking[g.group_id]
        if beating is not None and beating in g.members:
            sessions[beating] = now_ms + self._session_of(g.group_id, g.members[beating])
        for m in g.members.values():
            sessions.setdefault(m.member_id, now_ms + self._session_of(g.group_id, m))
            if m.state is not MemberState.UNREVOKED_PARTITIONS:
                revokes.pop(m.member_id, None)
                epochs.pop(m.member_id, None)
            elif epochs.get(m.member_id) != m.epoch:
                revokes[m.member_id] = now_ms + m.rebalance_timeout_ms
                epochs[m.member_id] = m.epoch

    def restored(self, g: ConsumerGroup, now_ms: int) -> None:
        """A group read back: its members' sessions start now."""
        self._at[SESSION][g.group_id] = {
            member_id: now_ms + self._session_of(g.group_id, m)
            for member_id, m in g.members.items()
        }

    def touched(self, group_id: str, m: ConsumerMember, now_ms: int) -> None:
        """A classic member's heartbeat: its session starts again."""
        at = now_ms + self._session_of(group_id, m)
        self._at[SESSION].setdefault(group_id, {})[m.member_id] = at

    def rejoin_by(self, group_id: str, m: ConsumerMember, now_ms: int) -> None:
        """Told to rejoin: it must within its rebalance timeout (the first telling counts)."""
        self._at[REJOIN].setdefault(group_id, {}).setdefault(
            m.member_id, now_ms + m.rebalance_timeout_ms
        )

    def joined(self, group_id: str, m: ConsumerMember, now_ms: int) -> None:
        """A classic member joined: no longer told to rejoin, it must sync in time."""
        self._at[REJOIN].get(group_id, {}).pop(m.member_id, None)
        self._at[SYNC].setdefault(group_id, {})[m.member_id] = now_ms + m.rebalance_timeout_ms

    def synced(self, group_id: str, member_id: str) -> None:
        self._at[SYNC].get(group_id, {}).pop(member_id, None)

    def next_deadline(self) -> int | None:
        """The earliest timeout of any member (a scan: heartbeats move deadlines far
        more often than deadlines are asked for)."""
        return min(
            (at for t in self._at.values() for g in t.values() for at in g.values()), default=None
        )

    def due(self, now_ms: int) -> list[Due]:
        return [
            Due(group, member, why)
            for why, timers in self._at.items()
            for group, of_group in timers.items()
            for member, at in of_group.items()
            if at <= now_ms
        ]

    def drop(self, group_id: str, member_id: str) -> None:
        for timers in (*self._at.values(), self._revoking):
            timers.get(group_id, {}).pop(member_id, None)

    def retry_later(self, due: Due, at_ms: int) -> None:
        """A fencing that could not be persisted is tried again then."""
        for timers in self._at.values():
            of_group = timers.get(due.group_id, {})
            if due.member_id in of_group:
                of_group[due.member_id] = at_ms

    def forget(self, group_id: str) -> None:
        for timers in (*self._at.values(), self._revoking):
            timers.pop(group_id, None)
