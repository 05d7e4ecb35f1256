"""Who a heartbeat speaks for: the member by id, or a static member by instance id
(taking its old place under a new member id), after Kafka's identity and epoch checks
(FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID)."""

from __future__ import annotations

from dataclasses import replace

from kop.groups.consumer.group import ConsumerGroup
from kop.groups.consumer.member import JOIN_EPOCH, STATIC_LEAVE_EPOCH, ConsumerMember, is_subset
from kop.groups.consumer.requests import Heartbeat
from kop.protocol.errors import ErrorCode, KafkaError


def member_of(g: ConsumerGroup, hb: Heartbeat) -> tuple[ConsumerMember, bool]:
    """The member the heartbeat speaks for, and whether it is new to the group (a
    static member back under a new member id takes its old place: not new), after
    Kafka's identity and epoch checks."""
    if hb.instance_id is None:
        member = g.members.get(hb.member_id)
        if member is None:
            if hb.member_epoch != JOIN_EPOCH:
                raise unknown_member(hb)
            return ConsumerMember(hb.member_id), True
        check_epoch(member, hb)
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
        raise unknown_instance(hb)
    if existing.member_id != hb.member_id:
        raise fenced_instance(hb, existing)
    check_epoch(existing, hb)
    return existing, False


def check_epoch(member: ConsumerMember, hb: Heartbeat) -> None:
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


def unknown_member(hb: Heartbeat) -> KafkaError:
    return KafkaError(
        ErrorCode.unknown_member_id, f"Member {hb.member_id} is not a member of the group."
    )


def unknown_instance(hb: Heartbeat) -> KafkaError:
    return KafkaError(ErrorCode.unknown_member_id, f"Instance id {hb.instance_id} is unknown.")


def fenced_instance(hb: Heartbeat, owner: ConsumerMember) -> KafkaError:
    return KafkaError(
        ErrorCode.fenced_instance_id,
        f"Static member {hb.member_id} with instance id {hb.instance_id} was fenced by "
        f"member {owner.member_id}.",
    )
