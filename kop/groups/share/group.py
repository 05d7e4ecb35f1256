"""A share group as its coordinator keeps it: members, their subscriptions and
assignments, the group epoch; and how partitions are spread over members (KIP-932's
simple assignor: balance before stickiness, every partition to at least one member,
a partition to several members when there are more members than partitions)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kop.groups.consumer.group import TopicMeta
from kop.groups.consumer.member import Assignment, TopicId

SIMPLE = "simple"  # the assignor's name, as ShareGroupDescribe reports it


@dataclass(frozen=True, slots=True)
class ShareMember:
    member_id: str
    epoch: int
    topics: tuple[str, ...]
    rack: str | None
    client_id: str
    client_host: str
    assignment: Assignment
    deadline_ms: int  # the session ends here unless a heartbeat comes first


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    topics: dict[str, TopicMeta] = field(default_factory=dict)  # subscribed, resolved
    targets: dict[str, Assignment] = field(default_factory=dict)
    resolved_at_ms: int = -1  # when `topics` was last looked up
    # Topics whose start offsets were set (AlterShareGroupOffsets) and not deleted since:
    # listed with the subscribed ones when all the group's offsets are described.
    offset_topics: set[str] = field(default_factory=set)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def subscribed(self) -> set[str]:
        return {name for m in self.members.values() for name in m.topics}


def simple_assignment(
    subscriptions: Mapping[str, tuple[str, ...]], topics: Mapping[str, TopicMeta]
) -> dict[str, Assignment]:
    """Per topic, its subscribers in member-id order: with no more subscribers than
    partitions, partition i goes to subscriber i mod n; with more, subscriber j gets
    partition j mod p. Deterministic, so every instance computes the same."""
    out: dict[str, dict[TopicId, set[int]]] = {m: {} for m in subscriptions}
    for name, meta in sorted(topics.items()):
        members = sorted(m for m, names in subscriptions.items() if name in names)
        if not members or meta.partitions <= 0:
            continue
        parts = meta.partitions
        if len(members) <= parts:
            for p in range(parts):
                out[members[p % len(members)]].setdefault(meta.topic_id, set()).add(p)
        else:
            for j, member in enumerate(members):
                out[member].setdefault(meta.topic_id, set()).add(j % parts)
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in out.items()}
