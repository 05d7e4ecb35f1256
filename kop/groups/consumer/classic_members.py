"""Members that speak the classic protocol inside a KIP-848 group (Kafka's online
upgrade: GroupMetadataManager.classicGroupJoinToConsumerGroup and its Sync, Heartbeat
and Leave siblings), as pure rules over a working copy of the group.

A classic member's JoinGroup is its heartbeat: its subscription (the consumer
protocol's bytes) restates its topics and what it owns, the group's server-side
assignor computes the target, and the member moves towards it as a KIP-848 member
would. Its generation is its member epoch. It is never the leader: SyncGroup hands it
the partitions the coordinator assigned, in its own protocol version. Its Heartbeat
answers REBALANCE_IN_PROGRESS when it must rejoin to move on: the group epoch passed
it, it must revoke partitions, or partitions it waits for are free now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from kop.groups.consumer.group import ConsumerGroup, TopicMeta
from kop.groups.consumer.heartbeat import Rules, advance, check_room, fence, restated
from kop.groups.consumer.member import (
    JOIN_EPOCH,
    Assignment,
    ClassicMeta,
    ConsumerMember,
    MemberState,
    TopicId,
)
from kop.groups.consumer.requests import Heartbeat, Resolved
from kop.groups.consumer_protocol import encode_assignment, protocol_version, subscription
from kop.groups.joins import JoinRequest
from kop.groups.rebalance import JoinResult, SyncResult
from kop.protocol.errors import ErrorCode, KafkaError

CONSUMER_PROTOCOL_TYPE = "consumer"
MAX_SUBSCRIBED_TOPICS = 10_000  # as a ConsumerGroupHeartbeat may name


@dataclass(frozen=True, slots=True)
class ClassicJoined:
    """A classic JoinGroup applied: its answer, and the member it speaks for."""

    result: JoinResult
    member_id: str


def subscribed(r: JoinRequest) -> tuple[str, ...]:
    """The topics a classic JoinGroup subscribes to (to resolve before `join`);
    INCONSISTENT_GROUP_PROTOCOL when it is not the consumer protocol or unreadable."""
    sub = subscription(r.protocols[0][1]) if r.protocols else None
    if r.protocol_type != CONSUMER_PROTOCOL_TYPE or sub is None:
        raise KafkaError(
            ErrorCode.inconsistent_group_protocol,
            f"Member {r.member_id}'s protocols are not supported.",
        )
    if len(sub.topics) > MAX_SUBSCRIBED_TOPICS:
        raise KafkaError(
            ErrorCode.inconsistent_group_protocol,
            f"at most {MAX_SUBSCRIBED_TOPICS} subscribed topics",
        )
    return sub.topics


def join(
    g: ConsumerGroup, r: JoinRequest, member_id: str, resolved: Resolved | None, rules: Rules
) -> ClassicJoined:
    """A classic member joins or rejoins `g` (a working copy) under `member_id` (one the
    coordinator chose for a member that had none)."""
    _check_protocols(g, r, member_id)
    check_room(g, member_id, rules)
    sub = subscription(r.protocols[0][1])
    assert sub is not None  # `subscribed` read it before
    member, joined = _member_of(g, member_id, r.instance_id, unknown=not r.member_id)
    topics = resolved.topics if resolved is not None else {t.name: t for t in g.topics.values()}
    hb = Heartbeat(
        g.group_id, member_id, JOIN_EPOCH, r.instance_id, sub.rack, r.rebalance_timeout_ms,
        sub.topics, None, None, _ids(sub.owned, topics), r.client_id, r.client_host,
    )  # fmt: skip
    classic = ClassicMeta(r.session_timeout_ms, r.protocols)
    updated = replace(restated(member, hb), classic=classic)
    answer = advance(g, member, updated, joined, hb, resolved, rules)
    result = JoinResult(
        ErrorCode.none, member_id, answer.member_epoch, CONSUMER_PROTOCOL_TYPE, classic.protocol
    )
    return ClassicJoined(result, member_id)


def sync(
    g: ConsumerGroup,
    member_id: str,
    instance_id: str | None,
    generation: int,
    protocol: tuple[str | None, str | None],
) -> SyncResult:
    """SyncGroup: the member's assigned partitions, once it is at the group's epoch."""
    m = _classic_member(g, member_id, instance_id, generation)
    assert m.classic is not None
    kind, name = protocol
    if (kind is not None and kind != CONSUMER_PROTOCOL_TYPE) or (
        name is not None and name != m.classic.protocol
    ):
        raise KafkaError(
            ErrorCode.inconsistent_group_protocol,
            f"The protocol name {name} from member {member_id} request is not equal to the "
            f"protocol name {m.classic.protocol} returned in the join response.",
        )
    if g.epoch > m.epoch and m.state is not MemberState.UNREVOKED_PARTITIONS:
        raise KafkaError(
            ErrorCode.rebalance_in_progress,
            f"A new rebalance is triggered in group {g.group_id} and member {member_id} "
            "should rejoin to catch up.",
        )
    names = {t.topic_id: t.name for t in g.topics.values()}
    parts = {names[t]: ps for t, ps in m.assigned.items() if t in names and ps}
    version = protocol_version(m.classic.protocols[0][1])
    return SyncResult(ErrorCode.none, kind, name, encode_assignment(version, parts))


def must_rejoin(g: ConsumerGroup, member_id: str, instance_id: str | None, generation: int) -> bool:
    """Heartbeat: whether the member must rejoin (REBALANCE_IN_PROGRESS): the group
    epoch passed it, it must revoke partitions, or what it waits for is free now."""
    m = _classic_member(g, member_id, instance_id, generation)
    if m.epoch < g.epoch or m.state is MemberState.UNREVOKED_PARTITIONS:
        return True
    return m.state is MemberState.UNRELEASED_PARTITIONS and not _waiting(g, m)


def leave(g: ConsumerGroup, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
    """LeaveGroup of classic members (a static one may be named by instance id alone)."""
    codes = []
    for member_id, instance_id in members:
        m = g.static_member(instance_id) if instance_id is not None else g.members.get(member_id)
        if m is None or m.classic is None:
            codes.append(ErrorCode.unknown_member_id)
        elif instance_id is not None and member_id and member_id != m.member_id:
            codes.append(ErrorCode.fenced_instance_id)
        else:
            fence(g, m.member_id)
            codes.append(ErrorCode.none)
    return codes


def _check_protocols(g: ConsumerGroup, r: JoinRequest, member_id: str) -> None:
    """Kafka's supportsClassicProtocols: a protocol name every classic member has."""
    names = {n for n, _ in r.protocols}
    for m in g.members.values():
        if m.classic is not None and m.member_id != member_id:
            names &= {n for n, _ in m.classic.protocols}
    if not names:
        raise KafkaError(
            ErrorCode.inconsistent_group_protocol,
            f"Member {member_id}'s protocols are not supported.",
        )


def _member_of(
    g: ConsumerGroup, member_id: str, instance_id: str | None, unknown: bool
) -> tuple[ConsumerMember, bool]:
    """The member a classic join speaks for, and whether it is new. A static member
    joining without its member id takes the place of the one holding its instance id,
    whichever protocol that one speaks (Kafka's rule for classic joins)."""
    if instance_id is None:
        known = g.members.get(member_id)
        return (known, False) if known is not None else (ConsumerMember(member_id), True)
    existing = g.static_member(instance_id)
    if existing is None:
        if not unknown:
            raise KafkaError(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
        return ConsumerMember(member_id), True
    if not unknown:
        if existing.member_id != member_id:
            raise KafkaError(
                ErrorCode.fenced_instance_id,
                f"Static member {member_id} with instance id {instance_id} was fenced by "
                f"member {existing.member_id}.",
            )
        return existing, False
    target = g.targets.pop(existing.member_id, {})
    g.drop(existing.member_id)
    g.targets[member_id] = target
    return replace(existing, member_id=member_id, epoch=0, previous_epoch=0), False


def _classic_member(
    g: ConsumerGroup, member_id: str, instance_id: str | None, generation: int
) -> ConsumerMember:
    """The classic member a SyncGroup or Heartbeat names, at its generation."""
    if instance_id is not None:
        m = g.static_member(instance_id)
        if m is None:
            raise KafkaError(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
        if m.member_id != member_id:
            raise KafkaError(ErrorCode.fenced_instance_id, f"Member {member_id} was fenced.")
    else:
        found = g.members.get(member_id)
        if found is None:
            raise KafkaError(
                ErrorCode.unknown_member_id, f"Member {member_id} is not a member of the group."
            )
        m = found
    if m.classic is None:
        raise KafkaError(
            ErrorCode.unknown_member_id, f"Member {member_id} does not use the classic protocol."
        )
    if generation != m.epoch:
        raise KafkaError(
            ErrorCode.illegal_generation,
            f"The request generation id {generation} is not equal to the member epoch "
            f"{m.epoch} of member {member_id}.",
        )
    return m


def _waiting(g: ConsumerGroup, m: ConsumerMember) -> bool:
    """Whether a partition of its target that it lacks is still owned by another."""
    for topic, parts in g.targets.get(m.member_id, {}).items():
        mine = m.assigned.get(topic, frozenset())
        if any(g.owner_epoch(topic, p) != -1 for p in parts - mine):
            return True
    return False


def _ids(owned: dict[str, list[int]], topics: Mapping[str, TopicMeta]) -> Assignment:
    """What the member reports owning, by topic id (names not known are left out)."""
    out: dict[TopicId, frozenset[int]] = {}
    for name, parts in owned.items():
        t = topics.get(name)
        if t is not None and parts:
            out[t.topic_id] = frozenset(parts)
    return out
