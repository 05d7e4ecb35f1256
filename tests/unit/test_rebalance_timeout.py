"""A rebalance nobody rejoins in time, as Kafka's coordinator handles it
(onCompleteJoin): dynamic members that did not rejoin are removed; if no member
rejoined, completion is postponed by another rebalance timeout rather than a
generation started that nobody was told of; static members stay as long as their
sessions do, and the group goes Empty once none is left."""

from __future__ import annotations

from kop.groups.coordinator import PARKED
from kop.groups.rebalance import JoinResult
from kop.groups.types import GroupState
from kop.protocol.errors import ErrorCode
from tests.unit.test_coordinator_rules import Driver, _join
from tests.unit.test_static_members import _stable_static_pair


def _heartbeat(d: Driver, r: JoinResult, instance: str | None) -> ErrorCode:
    return d.c.heartbeat("g", r.generation, r.member_id, instance, d.now)


def _lose_b(d: Driver, a: JoinResult) -> None:
    """b stops heartbeating; its session ends and the group rebalances without it."""
    for _ in range(4):
        d.advance(3_000)
        _heartbeat(d, a, "host-a")
    assert d.state() is GroupState.PREPARING_REBALANCE


def test_completion_is_postponed_while_no_member_has_rejoined() -> None:
    d = Driver(delay_ms=3_000)
    a, _b = _stable_static_pair(d)
    _lose_b(d, a)
    for _ in range(25):  # 75 s, past two 30 s rebalance timeouts; a heartbeats
        d.advance(3_000)
        assert _heartbeat(d, a, "host-a") is ErrorCode.rebalance_in_progress
    assert (d.state(), d.c.groups["g"].generation) == (GroupState.PREPARING_REBALANCE, a.generation)
    assert d.join(_join(a.member_id, instance_id="host-a"), "a1") is PARKED
    rejoined = d.joined("a1")
    assert (rejoined.generation, rejoined.leader) == (a.generation + 1, a.member_id)
    assert d.state() is GroupState.COMPLETING_REBALANCE


def test_a_static_member_that_never_rejoins_leaves_when_its_session_ends() -> None:
    d = Driver(delay_ms=3_000)
    a, _b = _stable_static_pair(d)
    _lose_b(d, a)
    d.advance(9_000)  # a stops heartbeating too: 10 s session, 30 s rebalance timeout
    assert d.state() is GroupState.PREPARING_REBALANCE
    d.advance(2_000)
    assert d.state() is GroupState.EMPTY and not d.c.groups["g"].members


def test_dynamic_members_that_did_not_rejoin_are_removed_at_the_rebalance_timeout() -> None:
    d = Driver()
    first = d.join(_join(), "a0")
    assert first is not None
    assert d.join(_join(first.member_id), "a1") is PARKED
    a = d.joined("a1")
    second = d.join(_join(), "b0")
    assert second is not None
    assert d.join(_join(second.member_id), "b1") is PARKED  # a rebalance a never rejoins
    for _ in range(10):  # a heartbeats for 30 s, but never joins again
        d.advance(3_000)
        _heartbeat(d, a, None)
    d.advance(1)
    b = d.joined("b1")
    assert (b.generation, b.leader) == (a.generation + 1, second.member_id)
    assert set(d.c.groups["g"].members) == {second.member_id}
