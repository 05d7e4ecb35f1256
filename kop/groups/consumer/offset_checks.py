"""The offsets APIs' checks of a KIP-848 member (Kafka's ConsumerGroup.validateOffsetCommit
and validateOffsetFetch): the member epoch stands where the classic protocol has the
generation."""

from __future__ import annotations

from kop.groups.consumer.group import ConsumerGroup
from kop.protocol.errors import ErrorCode


def commit_allowed(g: ConsumerGroup | None, member_id: str, epoch: int) -> ErrorCode | None:
    """Whether an OffsetCommit to a consumer group may be stored (None: not a consumer
    group). An admin or standalone commit (epoch < 0) only to an empty group; a member's
    only at its current epoch."""
    if g is None:
        return None
    if epoch < 0 and not g.members:
        return ErrorCode.none
    return _member_at(g, member_id, epoch)


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
