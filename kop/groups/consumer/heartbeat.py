"""ConsumerGroupHeartbeat's rules (Kafka's GroupMetadataManager.consumerGroupHeartbeat),
applied to a working copy of one group: validate, find or add the member, update its
subscription, bump the group epoch when membership or subscriptions changed, compute
the target assignment for a new group epoch, and move the member towards it.

Pure: the caller resolved the group's topics beforehand (`Resolved`), persists the
copy if it changed, and only then installs it and answers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kop.groups.consumer.assignors import ASSIGNORS, MemberSpec
from kop.groups.consumer.group import ConsumerGroup, TopicMeta
from kop.groups.consumer.identity import (
    fenced_instance,
    member_of,
    unknown_instance,
    unknown_member,
)
from kop.groups.consumer.member import (
    STATIC_LEAVE_EPOCH,
    ConsumerMember,
    TopicId,
)
from kop.groups.consumer.reconcile import PartitionEpoch, reconcile
from kop.groups.consumer.requests import Answer, Heartbeat, Resolved
from kop.protocol.errors import ErrorCode, KafkaError


@dataclass(frozen=True, slots=True)
class Rules:
    max_size: int
    assignors: tuple[str, ...]  # those members may ask for; the first is the default


def beat(g: ConsumerGroup, hb: Heartbeat, resolved: Resolved | None, rules: Rules) -> Answer:
    """A heartbeat that is not a leave, applied to `g` (a working copy)."""
    check_room(g, hb.member_id, rules)
    member, joined = member_of(g, hb)
    return advance(g, member, restated(member, hb), joined, hb, resolved, rules)


def check_room(g: ConsumerGroup, member_id: str, rules: Rules) -> None:
    if len(g.members) >= rules.max_size and member_id not in g.members:
        raise KafkaError(
            ErrorCode.group_max_size_reached,
            f"The consumer group has reached its maximum capacity of {rules.max_size} members.",
        )


def advance(
    g: ConsumerGroup,
    member: ConsumerMember,
    updated: ConsumerMember,
    joined: bool,
    hb: Heartbeat,
    resolved: Resolved | None,
    rules: Rules,
) -> Answer:
    """The member as `updated` restates it (its subscription, a classic member's
    protocols) in `g`: the group epoch bumped when membership or subscriptions changed,
    a new target for a new epoch, and the member moved towards its target."""
    bump = joined or _subscription(member) != _subscription(updated)
    g.put(updated)
    if resolved is not None:
        g.matches = {r: resolved.matches.get(r, ()) for r in _regexes(g)}
        topics = metadata(g, resolved)
        if topics != g.topics:
            g.topics, bump = topics, True
    if bump:
        g.epoch += 1
    if g.epoch > g.assignment_epoch:
        assign(g, rules.assignors[0])
    target = g.targets.get(updated.member_id, {})
    moved = reconcile(updated, g.assignment_epoch, target, _others(g, updated), hb.owned)
    g.put(moved)
    changed = joined or moved.assigned != member.assigned
    return Answer(moved.member_id, moved.epoch, moved.assigned if hb.full or changed else None)


def restated(m: ConsumerMember, hb: Heartbeat) -> ConsumerMember:
    """The member with what the heartbeat restated (a None field keeps its value)."""
    timeout = hb.rebalance_timeout_ms
    return replace(
        m,
        instance_id=hb.instance_id if hb.instance_id is not None else m.instance_id,
        rack_id=hb.rack_id if hb.rack_id is not None else m.rack_id,
        rebalance_timeout_ms=timeout if timeout != -1 else m.rebalance_timeout_ms,
        assignor=hb.assignor if hb.assignor is not None else m.assignor,
        topics=tuple(sorted(set(hb.topics))) if hb.topics is not None else m.topics,
        regex=(hb.regex or None) if hb.regex is not None else m.regex,
        client_id=hb.client_id,
        client_host=hb.client_host,
    )


def _others(g: ConsumerGroup, member: ConsumerMember) -> PartitionEpoch:
    """Who owns a partition, not counting the member itself (what it reports no longer
    owning it may have back at once)."""

    def owner(topic: TopicId, partition: int) -> int:
        mine = member.assigned.get(topic, frozenset()) | member.revoking.get(topic, frozenset())
        return -1 if partition in mine else g.owner_epoch(topic, partition)

    return owner


def _subscription(m: ConsumerMember) -> tuple[object, ...]:
    return (m.topics, m.regex, m.assignor, m.rack_id)


def _regexes(g: ConsumerGroup) -> set[str]:
    return {m.regex for m in g.members.values() if m.regex}


def metadata(g: ConsumerGroup, resolved: Resolved) -> dict[str, TopicMeta]:
    """The subscribed topics that exist, as the assignor will see them."""
    names: set[str] = set()
    for m in g.members.values():
        names |= m.subscribes(g.matches)
    return {n: resolved.topics[n] for n in sorted(names) if n in resolved.topics}


def assign(g: ConsumerGroup, default: str) -> None:
    """A new target assignment for the group epoch (regexes as last resolved)."""
    matches = g.matches
    ids = {name: t.topic_id for name, t in g.topics.items()}
    specs = {
        m.member_id: MemberSpec(
            m.member_id,
            m.instance_id,
            m.rack_id,
            frozenset(ids[n] for n in m.subscribes(matches) if n in ids),
            g.targets.get(m.member_id, {}),
        )
        for m in g.members.values()
    }
    partitions = {t.topic_id: t.partitions for t in g.topics.values()}
    assignor = ASSIGNORS[g.preferred_assignor(default)]
    g.targets = dict(assignor.assign(specs, partitions))
    g.assignment_epoch = g.epoch


def leave(g: ConsumerGroup, hb: Heartbeat) -> Answer:
    """Epoch -1 (for good) or -2 (a static member, back within its session)."""
    if hb.instance_id is None:
        member = g.members.get(hb.member_id)
        if member is None:
            raise unknown_member(hb)
    else:
        found = g.static_member(hb.instance_id)
        if found is None:
            raise unknown_instance(hb)
        if found.member_id != hb.member_id:
            raise fenced_instance(hb, found)
        member = found
        if hb.member_epoch == STATIC_LEAVE_EPOCH:
            g.put(member.released())
            return Answer(member.member_id, STATIC_LEAVE_EPOCH, None)
    fence(g, member.member_id)
    return Answer(hb.member_id, hb.member_epoch, None)


def fence(g: ConsumerGroup, member_id: str) -> None:
    """A member removed (left, session expired, or too slow to revoke): the group
    epoch moves so the others are reassigned its partitions. The subscription
    metadata is recomputed from the topics already known."""
    if g.remove(member_id) is None:
        return
    g.matches = {r: found for r, found in g.matches.items() if r in _regexes(g)}
    names: set[str] = set()
    for m in g.members.values():
        names |= m.subscribes(g.matches)
    g.topics = {n: t for n, t in g.topics.items() if n in names}
    g.epoch += 1
