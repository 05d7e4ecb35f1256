"""The offsets APIs' checks of a KIP-848 member (Kafka's ConsumerGroup.validateOffsetCommit
and validateOffsetFetch): the member epoch stands where the classic protocol has the
generation, and a commit's partitions carry the epochs they were assigned at."""

from __future__ import annotations

from collections.abc import Iterable

from kop.groups.consumer.group import ConsumerGroup
from kop.groups.types import TopicPartition
from kop.protocol.errors import ErrorCode


def commit_allowed(
    g: ConsumerGroup | None, member_id: str, epoch: int, partitions: Iterable[TopicPartition]
) -> ErrorCode | None:
    """Whether an OffsetCommit to a consumer group may be stored (None: not a consumer
    group). An admin or standalone commit (epoch < 0) only to an empty group. A member's
    at its current epoch; at an older one only if it still holds every partition of the
    commit and was given each at that epoch or before (KIP-1251, Kafka 4.3: the commit
    a client sends while the answer that moved its epoch is on its way is its own, not
    a zombie's). One refused partition refuses the whole commit, as in Kafka. A classic
    member (online upgrade) commits at its generation, its member epoch, or is refused
    ILLEGAL_GENERATION as the classic protocol refuses it."""
    if g is None:
        return None
    if epoch < 0 and not g.members:
        return ErrorCode.none
    m = g.members.get(member_id)
    if m is None:
        return ErrorCode.unknown_member_id
    if epoch == m.epoch:
        return ErrorCode.none
    if m.classic is not None:
        return ErrorCode.illegal_generation  # a classic member commits at its generation
    if epoch > m.epoch:
        return ErrorCode.stale_member_epoch
    for tp in partitions:
        meta = g.topics.get(tp.topic)
        at = m.assignment_epoch(meta.topic_id, tp.partition) if meta is not None else None
        if at is None or at > epoch:
            return ErrorCode.stale_member_epoch
    return ErrorCode.none


def fetch_allowed(g: ConsumerGroup | None, member_id: str | None, epoch: int) -> ErrorCode:
    """OffsetFetch v9+ names a member and its epoch: checked as Kafka does (no member
    named: an admin's fetch, always allowed)."""
    if g is None or (epoch < 0 and not member_id):
        return ErrorCode.none
    return _member_at(g, member_id or "", epoch)


def _member_at(g: ConsumerGroup, member_id: str, epoch: int) -> ErrorCode:
    m = g.members.get(member_id)
    if m is None:
        return ErrorCode.unknown_member_id
    return ErrorCode.none if epoch == m.epoch else ErrorCode.stale_member_epoch
