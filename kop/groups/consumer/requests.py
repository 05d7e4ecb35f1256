"""ConsumerGroupHeartbeat as the rules read it, what they answer, and the request's
own consistency checked before any group is looked at (Kafka's
throwIfConsumerGroupHeartbeatRequestIsInvalid)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kop.groups.consumer.group import TopicMeta
from kop.groups.consumer.member import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, Assignment
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
