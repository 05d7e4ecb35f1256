"""ConsumerGroupHeartbeat's rules (Kafka's GroupMetadataManager.consumerGroupHeartbeat),
applied to a working copy of one group: validate, find or add the member, update its
subscription, bump the group epoch when membership or subscriptions changed, compute
the target assignment for a new group epoch, and move the member towards it.

Pure: the caller resolved the group's topics beforehand (`Resolved`), persists the
copy if it changed, and only then installs it and answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from kop.groups.consumer.assignors import ASSIGNORS, MemberSpec
from kop.groups.consumer.group import ConsumerGroup, TopicMeta
from kop.groups.consumer.member import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ConsumerMember,
    TopicId,
    is_subset,
)
from kop.groups.consumer.reconcile import PartitionEpoch, reconcile
from kop.protocol.errors import ErrorCode, KafkaError


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One ConsumerGroupHeartbeat as the rules read it (None: unchanged since the
    member's last heartbeat)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topics: tuple[str, ...] | None = None
    regex: str | None = None
    assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""

    @property
    def full(self) -> bool:
        """A join, or a heartbeat that restates everything (after an error): its answer
        carries the whole assignment."""
        return self.member_epoch == JOIN_EPOCH or (
            self.rebalance_timeout_ms != -1 and self.topics is not None and self.owned is not None
        )


@dataclass(frozen=True, slots=True)
class Resolved:
    """The group's subscriptions resolved against the topics that exist now."""

    topics: Mapping[str, TopicMeta]  # name -> topic, for every subscribed name that exists
    matches: Mapping[str, tuple[str, ...]]  # regex -> the names it matches


@dataclass(frozen=True, slots=True)
class Answer:
    member_id: str
    member_epoch: int
    assignment: Assignment | None  # None: unchanged, not sent


def validate(hb: Heartbeat, assignors: tuple[str, ...]) -> None:
    """The request's own consistency (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR)."""
    bad = _invalid(hb)
    if bad is not None:
        raise KafkaError(ErrorCode.invalid_request, bad)
    if hb.assignor is not None and hb.assignor not in assignors:
        known = ", ".join(assignors)
        raise KafkaError(
            ErrorCode.unsupported_assignor,
            f"ServerAssignor {hb.assignor} is not supported. Supported assignors: {known}.",
        )


def _invalid(hb: Heartbeat) -> str | None:
    if not hb.group_id:
        return "GroupId can't be empty."
    if hb.instance_id == "":
        return "InstanceId can't be empty."
    if hb.rack_id == "":
        return "RackId can't be empty."
    if hb.member_epoch > 0 or hb.member_epoch == LEAVE_EPOCH:
        return "MemberId can't be empty." if not hb.member_id else None
    if hb.member_epoch == JOIN_EPOCH:
        if hb.rebalance_timeout_ms == -1:
            return "RebalanceTimeoutMs must be provided in first request."
        if hb.owned is None or any(hb.owned.values()):
            return "TopicPartitions must be empty when (re-)joining."
        if hb.topics is None and hb.regex is None:
            return "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
        return None
    if hb.member_epoch == STATIC_LEAVE_EPOCH:
        if not hb.member_id:
            return "MemberId can't be empty."
        return "InstanceId can't be null." if hb.instance_id is None else None
    return "MemberEpoch is invalid."


@dataclass(frozen=True, slots=True)
class Rules:
    max_size: int
    assignors: tuple[str, ...]  # those members may ask for; the first is the default


def beat(g: ConsumerGroup, hb: Heartbeat, resolved: Resolved | None, rules: Rules) -> Answer:
    """A heartbeat that is not a leave, applied to `g` (a working copy)."""
    if len(g.members) >= rules.max_size and hb.member_id not in g.members:
        raise KafkaError(
            ErrorCode.group_max_size_reached,
            f"The consumer group has reached its maximum capacity of {rules.max_size} members.",
        )
    member, joined = _member(g, hb)
    updated = _updated(member, hb)
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


def _updated(m: ConsumerMember, hb: Heartbeat) -> ConsumerMember:
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


def _member(g: ConsumerGroup, hb: Heartbeat) -> tuple[ConsumerMember, bool]:
    """The member the heartbeat speaks for, and whether it is new to the group (a
    static member back under a new member id takes its old place: not new), after
    Kafka's identity and epoch checks."""
    if hb.instance_id is None:
        member = g.members.get(hb.member_id)
        if member is None:
            if hb.member_epoch != JOIN_EPOCH:
                raise _unknown_member(hb)
            return ConsumerMember(hb.member_id), True
        _check_epoch(member, hb)
        return member, False
    existing = g.static_member(hb.instance_id)
    if hb.member_epoch == JOIN_EPOCH:
        if existing is None:
            known = g.members.get(hb.member_id)
            return (known, False) if known is not None else (ConsumerMember(hb.member_id), True)
        if existing.member_id == hb.member_id:
            return existing, False
        if existing.epoch != STATIC_LEAVE_EPOCH:
            raise KafkaError(
                ErrorCode.unreleased_instance_id,
                f"Static member {hb.member_id} with instance id {hb.instance_id} cannot join the "
                f"group because the instance id is owned by {existing.member_id} member.",
            )
        # the static member is back under a new member id: it takes the old one's place
        target = g.targets.pop(existing.member_id, {})
        g.drop(existing.member_id)
        g.targets[hb.member_id] = target
        return replace(existing, member_id=hb.member_id, epoch=0, previous_epoch=0), False
    if existing is None:
        raise _unknown_instance(hb)
    if existing.member_id != hb.member_id:
        raise _fenced_instance(hb, existing)
    _check_epoch(existing, hb)
    return existing, False


def _check_epoch(member: ConsumerMember, hb: Heartbeat) -> None:
    """A member ahead of the coordinator, or behind it other than by one lost answer,
    must give up its partitions and rejoin (FENCED_MEMBER_EPOCH). Epoch 0 is a member
    rejoining after being fenced (KAFKA-19233)."""
    received = hb.member_epoch
    if received == JOIN_EPOCH:
        return
    if received > member.epoch or (
        received < member.epoch
        and (received != member.previous_epoch or not is_subset(hb.owned, member.assigned))
    ):
        which = "greater" if received > member.epoch else "smaller"
        raise KafkaError(
            ErrorCode.fenced_member_epoch,
            f"The consumer group member has a {which} member epoch ({received}) than the one "
            f"known by the group coordinator ({member.epoch}). The member must abandon all its "
            "partitions and rejoin.",
        )


def _unknown_member(hb: Heartbeat) -> KafkaError:
    return KafkaError(
        ErrorCode.unknown_member_id, f"Member {hb.member_id} is not a member of the group."
    )


def _unknown_instance(hb: Heartbeat) -> KafkaError:
    return KafkaError(ErrorCode.unknown_member_id, f"Instance id {hb.instance_id} is unknown.")


def _fenced_instance(hb: Heartbeat, owner: ConsumerMember) -> KafkaError:
    return KafkaError(
        ErrorCode.fenced_instance_id,
        f"Static member {hb.member_id} with instance id {hb.instance_id} was fenced by "
        f"member {owner.member_id}.",
    )


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
            raise _unknown_member(hb)
    else:
        found = g.static_member(hb.instance_id)
        if found is None:
            raise _unknown_instance(hb)
        if found.member_id != hb.member_id:
            raise _fenced_instance(hb, found)
        member = found
        if hb.member_epoch == STATIC_LEAVE_EPOCH:
            g.put(replace(member, epoch=STATIC_LEAVE_EPOCH, revoking={}))
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
