"""The share group coordinator's rules (KIP-932's ShareGroupHeartbeat, as Kafka's
GroupMetadataManager applies them), pure: members join at epoch 0, heartbeat at the
epoch they were given, leave at -1 or when their session ends; a change of members,
subscriptions or subscribed topics moves the group epoch and the assignment with it.
Unlike the consumer protocol nothing is revoked first: a partition may be shared, so
a member takes its new assignment at its next heartbeat."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from kop.groups.consumer.group import TopicMeta
from kop.groups.consumer.member import Assignment
from kop.groups.share.group import ShareGroup, ShareMember, simple_assignment
from kop.groups.tenant_keys import TenantKeyed
from kop.protocol.errors import ErrorCode, KafkaError

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
RESOLVE_EVERY_MS = 10_000  # how stale a group's view of its topics may get


@dataclass(frozen=True, slots=True)
class ShareSettings:
    session_timeout_ms: int = 45_000  # group.share.session.timeout.ms
    heartbeat_interval_ms: int = 5_000  # group.share.heartbeat.interval.ms
    max_size: int = 200  # group.share.max.size
    record_lock_duration_ms: int = 30_000  # group.share.record.lock.duration.ms
    delivery_count_limit: int = 5  # group.share.delivery.count.limit
    partition_max_record_locks: int = 2_000  # group.share.partition.max.record.locks
    max_share_sessions: int = 2_000  # group.share.max.share.sessions
    auto_offset_reset_earliest: bool = False  # share.auto.offset.reset (latest)
    default_tenant: str = ""  # whose the unscoped group ids are (counted per tenant)


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    topics: tuple[str, ...] | None = None  # None: unchanged
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ShareAnswer:
    member_id: str
    member_epoch: int
    assignment: Assignment | None  # None: unchanged since the member's last answer


def validate(hb: ShareHeartbeat) -> None:
    """Kafka's checks of the request itself (INVALID_REQUEST, its messages)."""
    if not hb.group_id:
        raise KafkaError(ErrorCode.invalid_request, "GroupId can't be empty.")
    if not hb.member_id:
        raise KafkaError(ErrorCode.invalid_request, "MemberId can't be empty.")
    if hb.rack_id is not None and not hb.rack_id:
        raise KafkaError(ErrorCode.invalid_request, "RackId can't be empty.")
    if hb.member_epoch == JOIN_EPOCH and not hb.topics:
        raise KafkaError(
            ErrorCode.invalid_request, "SubscribedTopicNames must be set in first request."
        )
    if hb.member_epoch < LEAVE_EPOCH:
        raise KafkaError(ErrorCode.invalid_request, f"MemberEpoch {hb.member_epoch} is invalid.")


class ShareCoordinator:
    def __init__(
        self, settings: ShareSettings | None = None, session_ms: Callable[[str], int] | None = None
    ) -> None:
        self.settings = settings or ShareSettings()
        # a group's session timeout: its share.session.timeout.ms, or the broker's
        self.session_ms = session_ms or (lambda _group: self.settings.session_timeout_ms)
        self.groups: TenantKeyed[ShareGroup] = TenantKeyed(self.settings.default_tenant)

    def wants(self, hb: ShareHeartbeat, now_ms: int) -> set[str] | None:
        """The topic names to look up before this heartbeat, or None if the group's
        view of its topics is fresh and the heartbeat changes no subscription."""
        if hb.member_epoch == LEAVE_EPOCH:
            return None
        g = self.groups.get(hb.group_id)
        if g is None:
            return set(hb.topics or ())
        mine = g.members.get(hb.member_id)
        own = hb.topics if hb.topics is not None else (mine.topics if mine else ())
        fresh = now_ms - g.resolved_at_ms < RESOLVE_EVERY_MS
        if fresh and mine is not None and own == mine.topics:
            return None
        others = (m.topics for m in g.members.values() if m.member_id != hb.member_id)
        return set(own).union(*others)

    def heartbeat(
        self, hb: ShareHeartbeat, resolved: Mapping[str, TopicMeta] | None, now_ms: int
    ) -> ShareAnswer:
        validate(hb)
        g = self.groups.get(hb.group_id)
        if hb.member_epoch == LEAVE_EPOCH:
            if g is None or hb.member_id not in g.members:
                raise KafkaError(ErrorCode.unknown_member_id, f"member {hb.member_id} unknown")
            del g.members[hb.member_id]
            self._rebalance(g)
            return ShareAnswer(hb.member_id, LEAVE_EPOCH, None)
        if g is None:
            if hb.member_epoch != JOIN_EPOCH:
                raise KafkaError(ErrorCode.unknown_member_id, f"member {hb.member_id} unknown")
            g = self.groups[hb.group_id] = ShareGroup(hb.group_id)
        member = self._member(g, hb, now_ms)
        moved = member is None or (hb.topics is not None and member.topics != hb.topics)
        if member is None:
            member = ShareMember(
                hb.member_id, 0, hb.topics or (), hb.rack_id, hb.client_id, hb.client_host,
                {}, 0,
            )  # fmt: skip
        elif hb.topics is not None:
            member = replace(member, topics=hb.topics)
        g.members[hb.member_id] = replace(
            member, deadline_ms=now_ms + self.session_ms(hb.group_id),
            rack=hb.rack_id if hb.rack_id is not None else member.rack,
        )  # fmt: skip
        if resolved is not None:
            g.resolved_at_ms = now_ms
            wanted = g.subscribed()
            topics = {n: t for n, t in resolved.items() if n in wanted}
            moved = moved or topics != g.topics
            g.topics = topics
        if moved:
            self._rebalance(g)
        return self._answer(g, hb)

    def _member(self, g: ShareGroup, hb: ShareHeartbeat, now_ms: int) -> ShareMember | None:
        member = g.members.get(hb.member_id)
        if hb.member_epoch == JOIN_EPOCH:
            if member is None and len(g.members) >= self.settings.max_size:
                raise KafkaError(
                    ErrorCode.group_max_size_reached,
                    f"The share group has reached its maximum capacity of "
                    f"{self.settings.max_size} members.",
                )
            return None  # a join (or a rejoin under the same id) starts afresh
        if member is None:
            raise KafkaError(ErrorCode.unknown_member_id, f"member {hb.member_id} unknown")
        if hb.member_epoch != member.epoch:
            raise KafkaError(
                ErrorCode.fenced_member_epoch,
                f"The share group member has a epoch {hb.member_epoch} which is not the "
                f"current one ({member.epoch}).",
            )
        return member

    def _rebalance(self, g: ShareGroup) -> None:
        g.epoch += 1
        subscriptions = {m.member_id: m.topics for m in g.members.values()}
        g.targets = simple_assignment(subscriptions, g.topics)
        g.assignment_epoch = g.epoch

    def _answer(self, g: ShareGroup, hb: ShareHeartbeat) -> ShareAnswer:
        member = g.members[hb.member_id]
        if member.epoch == g.assignment_epoch and hb.member_epoch != JOIN_EPOCH:
            return ShareAnswer(member.member_id, member.epoch, None)
        target = g.targets.get(member.member_id, {})
        g.members[member.member_id] = replace(member, epoch=g.assignment_epoch, assignment=target)
        return ShareAnswer(member.member_id, g.assignment_epoch, target)

    def expire(self, now_ms: int) -> list[tuple[str, str]]:
        """Members whose session ended, gone from their groups: (group, member)."""
        return [(g, m) for g in list(self.groups) for m in self.expire_group(g, now_ms)]

    def expire_group(self, group_id: str, now_ms: int) -> list[str]:
        """The group's members whose session ended, gone from it."""
        g = self.groups.get(group_id)
        if g is None:
            return []
        late = [m.member_id for m in g.members.values() if m.deadline_ms <= now_ms]
        for member_id in late:
            del g.members[member_id]
        if late:
            self._rebalance(g)
        return late

    def forget(self, group_id: str) -> None:
        self.groups.pop(group_id, None)
