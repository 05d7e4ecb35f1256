"""KIP-345 and KIP-814 as Kafka's coordinator applies them: a restarted static member
takes its old place without a rebalance as long as the group's selected protocol
stays the same, and a restarted static leader is kept from running the assignor."""

from __future__ import annotations

import dataclasses

from kop.groups.coordinator import PARKED, JoinRequest
from kop.groups.rebalance import JoinResult, SyncResult
from kop.groups.types import GroupState
from kop.protocol.errors import ErrorCode
from tests.unit.test_coordinator_rules import Driver, _join

BOTH = (("range", b"sub"), ("roundrobin", b"sub"))


def _static(instance: str, protocols: tuple[tuple[str, bytes], ...] = BOTH) -> JoinRequest:
    return _join(instance_id=instance, protocols=protocols)


def _stable_static_pair(d: Driver) -> tuple[JoinResult, JoinResult]:
    """Static members host-a (the leader) and host-b, Stable, with an assignment each."""
    assert d.join(_static("host-a"), "a0") is PARKED
    assert d.join(_static("host-b"), "b0") is PARKED
    d.advance(3_001)
    d.advance(3_001)  # the initial delay, extended once as b joined
    a, b = d.joined("a0"), d.joined("b0")
    assert a.leader == a.member_id
    d.sync(b, "sb")
    d.sync(a, "sa", {a.member_id: b"for-a", b.member_id: b"for-b"})
    assert d.state() is GroupState.STABLE
    return a, b


def test_a_restarted_static_member_with_new_subscription_bytes_keeps_its_place() -> None:
    """Java and librdkafka put the owned partitions and the generation in their
    subscription, so it differs after every rebalance; only the selected protocol
    decides (Kafka's updateStaticMemberAndRebalance)."""
    d = Driver(delay_ms=3_000)
    a, b = _stable_static_pair(d)
    changed = (("range", b"sub+owned-partitions"), ("roundrobin", b"sub+owned"))
    again = d.join(_static("host-b", changed), "b1")
    assert isinstance(again, JoinResult) and again.error is ErrorCode.none
    assert (again.generation, again.leader, again.members) == (b.generation, a.member_id, ())
    assert d.state() is GroupState.STABLE
    got = d.c.sync("g", again.generation, again.member_id, "host-b", {}, "s1", d.now)
    assert got == SyncResult(ErrorCode.none, "consumer", "range", b"for-b")
    assert d.c.heartbeat("g", a.generation, a.member_id, "host-a", d.now) is ErrorCode.none


def test_a_restarted_static_member_that_changes_the_selected_protocol_rebalances() -> None:
    d = Driver(delay_ms=3_000)
    a, _b = _stable_static_pair(d)
    only = (("roundrobin", b"sub"),)  # range is no longer common to all
    assert d.join(_static("host-a", only), "a1") is PARKED
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert d.join(_static("host-b"), "b1") is PARKED  # b rejoins too
    assert d.joined("a1").protocol == "roundrobin"
    assert d.joined("a1").generation == a.generation + 1


def test_a_restarted_static_leader_is_told_to_skip_the_assignment_from_v9() -> None:
    """KIP-814: it still leads (it watches metadata), but runs no assignor; the group
    stays Stable and the SyncGroup it sends gets its old assignment."""
    d = Driver(delay_ms=3_000)
    a, b = _stable_static_pair(d)
    v9 = dataclasses.replace(_static("host-a"), supports_skip_assignment=True)
    again = d.join(v9, "a1")
    assert isinstance(again, JoinResult) and again.error is ErrorCode.none
    assert again.skip_assignment and again.leader == again.member_id != a.member_id
    assert {m for m, _, _ in again.members} == {again.member_id, b.member_id}
    assert (again.generation, d.state()) == (a.generation, GroupState.STABLE)
    got = d.c.sync("g", again.generation, again.member_id, "host-a", {}, "s1", d.now)
    assert got == SyncResult(ErrorCode.none, "consumer", "range", b"for-a")


def test_a_restarted_static_leader_before_v9_is_given_the_old_leader_id() -> None:
    """Before v9 there is no skip_assignment: the old leader id, which is not its own,
    and no member list keep it from running an assignor whose result would be lost."""
    d = Driver(delay_ms=3_000)
    a, b = _stable_static_pair(d)
    again = d.join(_static("host-a"), "a1")
    assert isinstance(again, JoinResult) and again.error is ErrorCode.none
    assert (again.leader, again.members, again.skip_assignment) == (a.member_id, (), False)
    assert d.c.groups["g"].leader == again.member_id  # it still leads the next rebalance
    assert d.state() is GroupState.STABLE
    assert d.c.heartbeat("g", b.generation, b.member_id, "host-b", d.now) is ErrorCode.none


def test_a_restarted_static_follower_is_not_told_to_skip_from_v9() -> None:
    d = Driver(delay_ms=3_000)
    a, _b = _stable_static_pair(d)
    v9 = dataclasses.replace(_static("host-b"), supports_skip_assignment=True)
    again = d.join(v9, "b1")
    assert isinstance(again, JoinResult) and again.error is ErrorCode.none
    assert (again.leader, again.members, again.skip_assignment) == (a.member_id, (), False)
