"""One member of a KIP-848 consumer group, as the coordinator keeps it: what it
subscribes to, its epochs, and where it stands on the way to its target assignment.

A member is frozen: every change is a new value, so the heartbeat rules can compute
a group's next state beside the current one and install it only once persisted.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

TopicId = uuid.UUID
# One member's partitions: topic id -> partition numbers.
Assignment = Mapping[TopicId, frozenset[int]]
# (topic id, partition) -> the member epoch at which the member was given it (KIP-1251)
AssignedAt = Mapping[tuple[TopicId, int], int]

JOIN_EPOCH = 0
LEAVE_EPOCH = -1  # a member leaves for good
STATIC_LEAVE_EPOCH = -2  # a static member leaves and will be back within its session


class MemberState(enum.Enum):
    """Kafka's MemberState: how far a member is on its way to the target assignment."""

    STABLE = "stable"  # holds its target at the target's epoch
    UNREVOKED_PARTITIONS = "unrevoked_partitions"  # must give partitions up first
    UNRELEASED_PARTITIONS = "unreleased_partitions"  # waits for others to give some up


@dataclass(frozen=True, slots=True)
class ClassicMeta:
    """A member that speaks the classic protocol inside a KIP-848 group (Kafka's
    online upgrade): the session timeout its JoinGroup asked for and its protocols
    (name, subscription bytes), the first the one it is answered in."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol(self) -> str:
        return self.protocols[0][0]


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300_000
    topics: tuple[str, ...] = ()  # subscribed topic names, sorted
    regex: str | None = None  # a subscription by regular expression (RE2)
    assignor: str | None = None  # the server-side assignor it asks for
    epoch: int = JOIN_EPOCH
    previous_epoch: int = JOIN_EPOCH
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    revoking: Assignment = field(default_factory=dict)  # to give up before going on
    # when each held partition was given (one not listed: at `epoch`)
    assigned_at: AssignedAt = field(default_factory=dict)
    classic: ClassicMeta | None = None  # a classic member's; None: a KIP-848 member

    def moved(
        self, epoch: int, state: MemberState, assigned: Assignment, revoking: Assignment
    ) -> ConsumerMember:
        """At `epoch` with this assignment, remembering the epoch before (a heartbeat
        whose answer was lost comes back with it). A partition it held already keeps
        the epoch it was given at; a new one is given at `epoch`."""
        held = _pairs(self.assigned, self.revoking)
        at = {
            tp: self.assigned_at.get(tp, self.epoch) if tp in held else epoch
            for tp in _pairs(assigned, revoking)
        }
        return replace(
            self, epoch=epoch, previous_epoch=self.epoch, state=state, assigned=assigned,
            revoking=revoking, assigned_at=at,
        )  # fmt: skip

    def released(self) -> ConsumerMember:
        """A static member gone for a while (epoch -2): it keeps what it was assigned,
        drops what it was revoking, and holds it all from epoch 0, so the member that
        comes back with its instance id may commit from its first epoch (Kafka's
        resetAssignedPartitionsEpochsToZero)."""
        at = dict.fromkeys(_pairs(self.assigned, {}), 0)
        return replace(self, epoch=STATIC_LEAVE_EPOCH, revoking={}, assigned_at=at)

    def assignment_epoch(self, topic: TopicId, partition: int) -> int | None:
        """The epoch it was given this partition at, or None when it does not hold it
        (neither assigned nor being revoked)."""
        assigned, revoking = self.assigned.get(topic, ()), self.revoking.get(topic, ())
        if partition not in assigned and partition not in revoking:
            return None
        return self.assigned_at.get((topic, partition), self.epoch)

    def reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.epoch == epoch

    def subscribes(self, matches: Mapping[str, tuple[str, ...]]) -> frozenset[str]:
        """Its topic names: those it named and those its regex matches (`matches`,
        resolved by the caller)."""
        found = matches.get(self.regex, ()) if self.regex is not None else ()
        return frozenset((*self.topics, *found))


def _pairs(*of: Assignment) -> frozenset[tuple[TopicId, int]]:
    return frozenset((t, p) for a in of for t, parts in a.items() for p in parts)


def owns_any(owned: Assignment | None, of: Assignment) -> bool:
    """Whether the client still reports owning any of `of` (None: it did not say,
    which counts as owning them, as in Kafka)."""
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & parts for t, parts in of.items())


def is_subset(owned: Assignment | None, of: Assignment) -> bool:
    """Whether everything the client reports owning is in `of` (None: not known)."""
    if owned is None:
        return False
    return all(parts <= of.get(t, frozenset()) for t, parts in owned.items() if parts)
