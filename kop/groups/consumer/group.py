"""One KIP-848 consumer group: its epochs, members, target assignment and the topics
its members subscribe to, with the index of who owns which partition now.

The group epoch moves when membership or subscriptions change; the target assignment
is computed for the group epoch (its `assignment_epoch` catches up) and each member
reconciles towards it at its own pace (kop/groups/consumer/reconcile.py).
"""

from __future__ import annotations

import copy
import enum
from collections import Counter
from dataclasses import dataclass, field

from kop.groups.consumer.member import (
    Assignment,
    ConsumerMember,
    TopicId,
)


class ConsumerGroupState(enum.Enum):
    """As ConsumerGroupDescribe names them."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"  # the target assignment is behind the group epoch
    RECONCILING = "Reconciling"  # some member is not at the target yet
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class TopicMeta:
    """A subscribed topic as the assignor sees it."""

    topic_id: TopicId
    name: str
    partitions: int


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)
    topics: dict[str, TopicMeta] = field(default_factory=dict)  # the subscription metadata
    static: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    # regex -> the topic names it matched when the group's topics were last looked up
    matches: dict[str, tuple[str, ...]] = field(default_factory=dict)
    owners: dict[tuple[TopicId, int], int] = field(default_factory=dict)  # -> member epoch
    state_ms: int = 0  # when the group last changed (offset expiry of an empty group)

    def copy(self) -> ConsumerGroup:
        """A working copy a heartbeat changes; members are frozen, so shallow maps do."""
        out = copy.copy(self)
        for name in ("members", "targets", "topics", "static", "owners", "matches"):
            setattr(out, name, dict(getattr(self, name)))
        return out

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.epoch != self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def owner_epoch(self, topic: TopicId, partition: int) -> int:
        return self.owners.get((topic, partition), -1)

    def put(self, member: ConsumerMember) -> None:
        """Add or replace a member, keeping the ownership index and static ids."""
        self.drop(member.member_id)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static[member.instance_id] = member.member_id
        for assignment in (member.assigned, member.revoking):
            for topic, parts in assignment.items():
                for p in parts:
                    self.owners[(topic, p)] = member.epoch

    def drop(self, member_id: str) -> ConsumerMember | None:
        """Remove a member (its target stays until the caller drops it too)."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.instance_id is not None and self.static.get(member.instance_id) == member_id:
            del self.static[member.instance_id]
        for assignment in (member.assigned, member.revoking):
            for topic, parts in assignment.items():
                for p in parts:
                    self.owners.pop((topic, p), None)
        return member

    def remove(self, member_id: str) -> ConsumerMember | None:
        """A member gone for good: its target too."""
        self.targets.pop(member_id, None)
        return self.drop(member_id)

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self.static.get(instance_id)
        return self.members.get(member_id) if member_id is not None else None

    def preferred_assignor(self, default: str) -> str:
        """The assignor most members ask for (Kafka's rule), else the default."""
        asked = Counter(m.assignor for m in self.members.values() if m.assignor)
        return asked.most_common(1)[0][0] if asked else default
