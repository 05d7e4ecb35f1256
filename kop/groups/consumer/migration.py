"""Kafka's online migration between the two group protocols (KIP-848), as pure
conversions of a group's state:

- **Upgrade.** A ConsumerGroupHeartbeat names a classic group that has members: the
  group becomes a KIP-848 group in which those members go on speaking the classic
  protocol (kop/groups/consumer/classic_members.py). Each keeps the partitions of its
  last assignment at an epoch equal to the classic generation, so nothing moves until
  the new member's arrival bumps the group epoch and the assignor runs.
- **Downgrade.** The last member of the consumer protocol leaves a group whose other
  members all speak the classic protocol: the group becomes a classic group again at
  a generation equal to the group epoch, each member holding its target assignment,
  and a rebalance starts so the members rejoin through the classic protocol.

Kafka's `group.consumer.migration.policy` (kop's `group_consumer_migration_policy`)
allows both by default (`bidirectional`); `upgrade` or `downgrade` allows one, and
`disabled` neither and also keeps classic members out of consumer groups that have
members (INCONSISTENT_GROUP_PROTOCOL), as Kafka 4.3 does. With the downgrade off, a
consumer group whose members all speak the classic protocol stays a consumer group.
"""

from __future__ import annotations

from collections.abc import Mapping

from kop.groups.consumer.group import ConsumerGroup, TopicMeta
from kop.groups.consumer.member import ClassicMeta, ConsumerMember, MemberState, TopicId
from kop.groups.consumer_protocol import (
    assigned_partitions,
    encode_assignment,
    protocol_version,
    subscription,
)
from kop.groups.types import GroupMetadata, MemberMetadata
from kop.protocol.errors import ErrorCode, KafkaError

CONSUMER_PROTOCOL_TYPE = "consumer"


def not_a_consumer_group(group_id: str) -> KafkaError:
    return KafkaError(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")


def upgrade_topics(meta: GroupMetadata, max_size: int) -> set[str]:
    """The topics the classic members subscribe to (to be resolved before
    `from_classic`); refused as Kafka refuses an upgrade (GROUP_ID_NOT_FOUND): another
    protocol type than the consumer's, more members than a consumer group may have, or
    a subscription that cannot be read."""
    if meta.protocol_type != CONSUMER_PROTOCOL_TYPE or meta.protocol is None:
        raise not_a_consumer_group(meta.group_id)
    if len(meta.members) > max_size:
        raise not_a_consumer_group(meta.group_id)
    names: set[str] = set()
    for m in meta.members:
        sub = subscription(_metadata_for(m, meta.protocol))
        if sub is None:
            raise KafkaError(
                ErrorCode.group_id_not_found,
                f"Cannot upgrade the classic group {meta.group_id} to consumer group because "
                "the embedded consumer protocol is malformed.",
            )
        names.update(sub.topics)
        names.update((assigned_partitions(m.assignment) or {}).keys())
    return names


def from_classic(
    meta: GroupMetadata, topics: Mapping[str, TopicMeta], now_ms: int
) -> ConsumerGroup:
    """The consumer group the classic one becomes (Kafka's ConsumerGroup.fromClassicGroup):
    every member Stable at the generation with its last assignment as its target.
    `topics`: the subscribed topics that exist (a partition of one gone is dropped)."""
    protocol = meta.protocol or ""
    g = ConsumerGroup(meta.group_id, meta.generation, meta.generation, state_ms=now_ms)
    for m in meta.members:
        sub = subscription(_metadata_for(m, protocol))
        assigned = _ids(assigned_partitions(m.assignment) or {}, topics)
        g.put(
            ConsumerMember(
                m.member_id,
                instance_id=m.group_instance_id,
                rack_id=sub.rack if sub is not None else None,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                topics=tuple(sorted(set(sub.topics))) if sub is not None else (),
                epoch=meta.generation,
                previous_epoch=meta.generation,
                state=MemberState.STABLE,
                assigned=assigned,
                classic=ClassicMeta(m.session_timeout_ms, m.protocols),
            )
        )
        g.targets[m.member_id] = assigned
    wanted = {n for m in g.members.values() for n in m.topics}
    g.topics = {n: t for n, t in sorted(topics.items()) if n in wanted}
    return g


def downgradable(
    g: ConsumerGroup, leaving: str, classic_max_size: int, replaced: bool = False
) -> bool:
    """Whether `leaving` going makes the group a classic one again: it is the last
    member of the consumer protocol and they fit a classic group, others remain (or a
    classic static member takes its place: `replaced`)."""
    rest = [m for m in g.members.values() if m.member_id != leaving]
    if leaving not in g.members or g.members[leaving].classic is not None:
        return False
    if not rest and not replaced:
        return False
    size = len(rest) + (1 if replaced else 0)
    return all(m.classic is not None for m in rest) and size <= classic_max_size


def to_classic(g: ConsumerGroup, leaving: str | None, now_ms: int) -> GroupMetadata:
    """The classic group `g` becomes without `leaving` (Kafka's
    ClassicGroup.fromConsumerGroup): Stable at the group epoch, each member holding its
    target assignment written in its own protocol version. The caller starts a rebalance
    when a member left (not when a classic static member took the last one's place)."""
    names = {t.topic_id: t.name for t in g.topics.values()}
    members = [m for m in g.members.values() if m.member_id != leaving and m.classic is not None]
    protocol = _select_protocol(members)
    out = []
    for m in members:
        assert m.classic is not None
        version = protocol_version(dict(m.classic.protocols).get(protocol, b""))
        target = g.targets.get(m.member_id, {})
        parts = {names[t]: ps for t, ps in target.items() if t in names and ps}
        assignment = encode_assignment(version, parts)
        session, protocols = m.classic.session_timeout_ms, m.classic.protocols
        out.append(MemberMetadata(
            m.member_id, m.instance_id, m.client_id, m.client_host, session,
            m.rebalance_timeout_ms, protocols, assignment,
        ))  # fmt: skip
    leader = out[0].member_id if out else None
    return GroupMetadata(
        g.group_id, CONSUMER_PROTOCOL_TYPE, g.epoch, protocol, leader, now_ms, tuple(out)
    )


def _select_protocol(members: list[ConsumerMember]) -> str:
    """Kafka's selectProtocol: each member votes for its most preferred protocol that
    all support; the most votes wins."""
    common: set[str] | None = None
    for m in members:
        assert m.classic is not None
        names = {name for name, _ in m.classic.protocols}
        common = names if common is None else common & names
    votes: dict[str, int] = {}
    for m in members:
        assert m.classic is not None
        choice = next((n for n, _ in m.classic.protocols if n in (common or ())), None)
        if choice is not None:
            votes[choice] = votes.get(choice, 0) + 1
    if not votes:
        assert members[0].classic is not None
        return members[0].classic.protocol
    return max(votes, key=lambda n: votes[n])


def _metadata_for(m: MemberMetadata, protocol: str) -> bytes:
    return next((meta for name, meta in m.protocols if name == protocol), b"")


def _ids(
    parts: Mapping[str, list[int]], topics: Mapping[str, TopicMeta]
) -> dict[TopicId, frozenset[int]]:
    out: dict[TopicId, frozenset[int]] = {}
    for name, ps in parts.items():
        t = topics.get(name)
        if t is not None:
            kept = frozenset(p for p in ps if 0 <= p < t.partitions)
            if kept:
                out[t.topic_id] = kept
    return out
