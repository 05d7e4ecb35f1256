"""How a member moves towards its target assignment (Kafka's CurrentAssignmentBuilder).

A partition changes hands in two steps, so no partition is ever owned by two members
at one time: the member losing it is asked to revoke it and keeps its epoch until its
heartbeat no longer reports it; only then may the member gaining it have it. Until
then the gainer holds the rest of its target at the new epoch and waits
(UNRELEASED_PARTITIONS). Pure: the caller supplies who owns what now.
"""

from __future__ import annotations

from collections.abc import Callable

from kop.groups.consumer.member import Assignment, ConsumerMember, MemberState, TopicId, owns_any

# (topic id, partition) -> the epoch of the member owning it now, or -1 when free
PartitionEpoch = Callable[[TopicId, int], int]


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    owner_epoch: PartitionEpoch,
    owned: Assignment | None,
) -> ConsumerMember:
    """The member after this heartbeat (`owned`: what the client reports it owns)."""
    if member.state is MemberState.STABLE:
        if member.epoch == target_epoch:
            return member
        return _next(member, member.epoch, target_epoch, target, owner_epoch, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.revoking):
            return member  # still revoking
        return _next(member, member.epoch + 1, target_epoch, target, owner_epoch, owned)
    return _next(member, member.epoch, target_epoch, target, owner_epoch, owned)


def _next(
    member: ConsumerMember,
    epoch: int,
    target_epoch: int,
    target: Assignment,
    owner_epoch: PartitionEpoch,
    owned: Assignment | None,
) -> ConsumerMember:
    kept: dict[TopicId, frozenset[int]] = {}
    revoke: dict[TopicId, frozenset[int]] = {}
    gain: dict[TopicId, frozenset[int]] = {}
    unreleased = False
    for topic in sorted({*target, *member.assigned}):
        wanted = target.get(topic, frozenset())
        current = member.assigned.get(topic, frozenset())
        keep = current & wanted
        new = wanted - keep
        free = frozenset(p for p in new if owner_epoch(topic, p) == -1)
        unreleased = unreleased or free != new
        for into, parts in ((kept, keep), (revoke, current - keep), (gain, free)):
            if parts:
                into[topic] = parts
    if revoke and owns_any(owned, revoke):
        return member.moved(epoch, MemberState.UNREVOKED_PARTITIONS, kept, revoke)
    for topic, parts in gain.items():
        kept[topic] = kept.get(topic, frozenset()) | parts
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.moved(target_epoch, state, kept, {})
