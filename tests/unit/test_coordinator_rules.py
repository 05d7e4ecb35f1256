"""Kafka's group rules, one at a time, on the pure coordinator: the cases the
state machine test reaches only by chance, and the rejections clients rely on."""

from __future__ import annotations

import dataclasses

from kop.groups.coordinator import PARKED, Coordinator, JoinRequest, Limits
from kop.groups.rebalance import Answer, JoinResult, Store, SyncResult
from kop.groups.types import GroupMetadata, GroupState, MemberMetadata
from kop.protocol.errors import ErrorCode

RANGE = (("range", b"sub"),)


def _join(
    member_id: str = "",
    instance_id: str | None = None,
    protocols: tuple[tuple[str, bytes], ...] = RANGE,
    protocol_type: str = "consumer",
    v4: bool = True,
    session_ms: int = 10_000,
) -> JoinRequest:
    return JoinRequest(
        "g", member_id, instance_id, protocol_type, protocols, session_ms, 30_000,
        "client", "10.0.0.1", v4,
    )  # fmt: skip


class Driver:
    """Runs the coordinator as the service does: stores succeed, answers collect."""

    def __init__(self, delay_ms: int = 0, **limits: int) -> None:
        self.c = Coordinator(Limits(initial_rebalance_delay_ms=delay_ms, **limits))
        self.now = 0
        self.answers: dict[object, JoinResult | SyncResult] = {}
        self.stored = 0

    def drain(self) -> None:
        while effects := self.c.take_effects():
            for e in effects:
                if isinstance(e, Store):
                    self.stored += 1
                    self.c.stored(e.metadata, True, self.now)
                elif isinstance(e, Answer):
                    self.answers[e.token] = e.result

    def join(self, request: JoinRequest, token: str) -> JoinResult | None:
        result = self.c.join(request, token, self.now)
        self.drain()
        return result

    def sync(self, r: JoinResult, token: str, assignments: dict[str, bytes] | None = None) -> None:
        got = self.c.sync("g", r.generation, r.member_id, None, assignments or {}, token, self.now)
        if got is not PARKED:
            self.answers[token] = got
        self.drain()

    def advance(self, ms: int) -> None:
        self.now += ms
        self.c.tick(self.now)
        self.drain()

    def joined(self, token: str) -> JoinResult:
        result = self.answers[token]
        assert isinstance(result, JoinResult) and result.error is ErrorCode.none, result
        return result

    def state(self) -> GroupState:
        return self.c.groups["g"].state


def _stable_pair(d: Driver) -> tuple[JoinResult, JoinResult]:
    """Two members, a and b, in a Stable generation with an assignment each."""
    ids = []
    for name in ("a", "b"):
        required = d.join(_join(), f"{name}0")
        assert required is not None and required.error is ErrorCode.member_id_required
        ids.append(required.member_id)
    assert d.join(_join(ids[0]), "a1") is PARKED
    assert d.join(_join(ids[1]), "b1") is PARKED
    a, b = d.joined("a1"), d.joined("b1")
    leader, follower = (a, b) if a.member_id == a.leader else (b, a)
    d.sync(follower, "sf")
    d.sync(leader, "sl", {a.member_id: b"for-a", b.member_id: b"for-b"})
    assert d.state() is GroupState.STABLE
    return a, b


def test_first_join_needs_a_member_id_then_joins_with_it() -> None:
    d = Driver()
    first = d.join(_join(), "t0")
    assert first is not None and first.error is ErrorCode.member_id_required
    assert first.member_id.startswith("client-")
    assert d.join(_join(first.member_id), "t1") is PARKED
    result = d.joined("t1")
    assert (result.member_id, result.generation, result.protocol) == (first.member_id, 1, "range")
    assert result.leader == first.member_id and [m[0] for m in result.members] == [result.member_id]


def test_member_id_handed_out_but_never_used_expires() -> None:
    d = Driver()
    first = d.join(_join(session_ms=10_000), "t0")
    assert first is not None
    d.advance(10_001)
    late = d.join(_join(first.member_id), "t1")
    assert late is not None and late.error is ErrorCode.unknown_member_id


def test_initial_rebalance_delay_waits_for_more_members() -> None:
    d = Driver(delay_ms=3_000)
    assert d.join(_join(v4=False), "a") is PARKED
    d.advance(2_000)
    assert d.join(_join(v4=False), "b") is PARKED  # so the delay is extended by 3 s
    d.advance(1_500)
    assert not d.answers, "answered when the first delay ran out, though b had joined"
    d.advance(2_600)
    a, b = d.joined("a"), d.joined("b")
    assert a.generation == b.generation == 1
    leader = a if a.member_id == a.leader else b
    assert {m for m, _, _ in leader.members} == {a.member_id, b.member_id}


def test_a_join_with_another_protocol_type_is_refused() -> None:
    d = Driver()
    _stable_pair(d)
    refused = d.join(_join(protocol_type="connect"), "x")
    assert refused is not None and refused.error is ErrorCode.inconsistent_group_protocol
    no_common = d.join(_join(protocols=(("sticky", b""),)), "y")
    assert no_common is not None and no_common.error is ErrorCode.inconsistent_group_protocol


def test_rejections_of_unknown_members_and_stale_generations() -> None:
    d = Driver()
    a, _b = _stable_pair(d)
    assert d.c.heartbeat("g", a.generation, "nobody", None, d.now) is ErrorCode.unknown_member_id
    assert d.c.heartbeat("g", a.generation - 1, a.member_id, None, d.now) is (
        ErrorCode.illegal_generation
    )
    assert d.c.commit_allowed("g", a.generation - 1, a.member_id, None, d.now) is (
        ErrorCode.illegal_generation
    )
    assert d.c.commit_allowed("g", a.generation, a.member_id, None, d.now) is ErrorCode.none
    assert d.c.commit_allowed("g", -1, "", None, d.now) is ErrorCode.unknown_member_id


def test_standalone_consumers_commit_to_an_empty_or_new_group() -> None:
    d = Driver()
    assert d.c.commit_allowed("solo", -1, "", None, d.now) is ErrorCode.none
    assert d.c.groups["solo"].state is GroupState.EMPTY
    assert d.c.commit_allowed("other", 3, "", None, d.now) is ErrorCode.illegal_generation


def test_a_member_that_stops_heartbeating_is_removed_and_the_group_rebalances() -> None:
    d = Driver()
    a, b = _stable_pair(d)
    for _ in range(4):  # a keeps heartbeating, b does not
        d.advance(3_000)
        assert d.c.heartbeat("g", a.generation, a.member_id, None, d.now) in (
            ErrorCode.none,
            ErrorCode.rebalance_in_progress,
        )
    assert b.member_id not in d.c.groups["g"].members
    assert d.c.heartbeat("g", a.generation, a.member_id, None, d.now) is (
        ErrorCode.rebalance_in_progress
    )
    assert d.join(_join(a.member_id), "a2") is PARKED
    assert d.joined("a2").generation == a.generation + 1


def test_a_leader_that_never_syncs_is_dropped_after_the_rebalance_timeout() -> None:
    d = Driver()
    a, b = _stable_pair(d)
    assert d.join(_join(a.member_id), "a2") is PARKED  # a rejoins: a rebalance
    assert d.join(_join(b.member_id), "b2") is PARKED
    a2, b2 = d.joined("a2"), d.joined("b2")
    leader, follower = (a2, b2) if a2.member_id == a2.leader else (b2, a2)
    d.sync(follower, "sf2")  # waits for the leader's assignment, which never comes
    for _ in range(5):  # the leader is alive (it heartbeats) but does not sync
        d.advance(5_000)
        assert d.c.heartbeat("g", leader.generation, leader.member_id, None, d.now) is (
            ErrorCode.none
        )
    assert "sf2" not in d.answers and d.state() is GroupState.COMPLETING_REBALANCE
    d.advance(5_001)  # past the 30 s rebalance timeout
    assert d.answers["sf2"] == SyncResult(ErrorCode.rebalance_in_progress, "consumer", "range")
    assert leader.member_id not in d.c.groups["g"].members
    assert d.join(_join(follower.member_id), "f3") is PARKED
    assert d.joined("f3").leader == follower.member_id


def test_a_restarted_static_member_gets_its_assignment_back_without_a_rebalance() -> None:
    d = Driver()
    first = d.join(_join(instance_id="host-1"), "s0")
    assert first is PARKED  # static members need no second join
    s = d.joined("s0")
    d.sync(s, "sync0", {s.member_id: b"partitions-of-host-1"})
    generation = s.generation
    again = d.join(_join(instance_id="host-1"), "s1")  # restarted: no member id
    assert isinstance(again, JoinResult) and again.error is ErrorCode.none
    assert again.generation == generation and again.member_id != s.member_id
    assert d.state() is GroupState.STABLE
    got = d.c.sync("g", generation, again.member_id, "host-1", {}, "sync1", d.now)
    assert isinstance(got, SyncResult) and got.assignment == b"partitions-of-host-1"
    fenced = d.c.heartbeat("g", generation, s.member_id, "host-1", d.now)
    assert fenced is ErrorCode.fenced_instance_id


def test_batched_leave_answers_each_member_and_an_emptied_group_is_empty() -> None:
    d = Driver()
    a, b = _stable_pair(d)
    codes = d.c.leave("g", [(a.member_id, None), ("ghost", None), (b.member_id, None)], d.now)
    d.drain()
    assert codes == [ErrorCode.none, ErrorCode.unknown_member_id, ErrorCode.none]
    assert d.state() is GroupState.EMPTY
    assert d.c.delete("g") is ErrorCode.none
    assert d.c.delete("g") is ErrorCode.group_id_not_found


def test_a_group_with_members_cannot_be_deleted() -> None:
    d = Driver()
    _stable_pair(d)
    assert d.c.delete("g") is ErrorCode.non_empty_group


def test_a_group_everyone_left_during_the_initial_delay_is_empty_at_once() -> None:
    """Found by the state machine (seed 119): the last member and the last member
    id handed out leave while the initial delay runs; nothing is left to wait for,
    so the group is Empty then, not when the delay ends."""
    d = Driver(delay_ms=3_000)
    pending = d.join(_join(), "p")
    assert pending is not None and pending.error is ErrorCode.member_id_required
    assert d.join(_join(v4=False), "m") is PARKED
    member = d.c.groups["g"].members
    (member_id,) = list(member)
    assert d.c.leave("g", [(member_id, None)], d.now) == [ErrorCode.none]
    d.drain()
    assert d.state() is GroupState.PREPARING_REBALANCE  # the handed-out id may still join
    assert d.c.leave("g", [(pending.member_id, None)], d.now) == [ErrorCode.none]
    d.drain()
    assert d.state() is GroupState.EMPTY


def test_the_newest_member_of_a_full_group_gets_group_max_size_reached() -> None:
    """Kafka's group.max.size: the members in stay, the one that would pass it is
    refused (no member id handed out) and the group goes on undisturbed."""
    d = Driver(max_size=2)
    a, b = _stable_pair(d)
    refused = d.join(_join(), "c0")
    assert refused == JoinResult(ErrorCode.group_max_size_reached, "")
    static = d.join(_join(instance_id="host-3"), "s0")
    assert static == JoinResult(ErrorCode.group_max_size_reached, "")
    assert d.state() is GroupState.STABLE and set(d.c.groups["g"].members) == {
        a.member_id, b.member_id,
    }  # fmt: skip
    assert d.c.heartbeat("g", a.generation, a.member_id, None, d.now) is ErrorCode.none


def test_member_ids_handed_out_count_towards_the_group_size() -> None:
    """A member id given with MEMBER_ID_REQUIRED holds a place until it expires, so
    many clients starting at once cannot all get past the limit."""
    d = Driver(max_size=2)
    first = d.join(_join(), "a0")
    second = d.join(_join(), "b0")
    assert first is not None and first.error is ErrorCode.member_id_required
    assert second is not None and second.error is ErrorCode.member_id_required
    assert d.join(_join(), "c0") == JoinResult(ErrorCode.group_max_size_reached, "")
    assert d.join(_join(first.member_id), "a1") is PARKED
    assert d.join(_join(second.member_id), "b1") is PARKED
    assert {d.joined("a1").member_id, d.joined("b1").member_id} == {
        first.member_id, second.member_id,
    }  # fmt: skip


def test_a_group_reloaded_above_a_lowered_max_size_sheds_the_last_to_rejoin() -> None:
    """As Kafka on load: it rebalances at once; the first max_size members to rejoin
    make the next generation, a later one gets GROUP_MAX_SIZE_REACHED and is out."""
    members = tuple(
        MemberMetadata(m, None, "client", "h", 10_000, 30_000, (("range", b"sub"),), b"")
        for m in ("m1", "m2", "m3")
    )
    meta = GroupMetadata("g", "consumer", 4, "range", "m1", 0, members)
    d = Driver(max_size=2)
    d.c.restore(meta, d.now)
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert d.join(_join("m2"), "j2") is PARKED
    assert d.join(_join("m3"), "j3") is PARKED
    assert d.join(_join("m1"), "j1") == JoinResult(ErrorCode.group_max_size_reached, "")
    m2, m3 = d.joined("j2"), d.joined("j3")
    assert m2.generation == m3.generation == 5
    assert set(d.c.groups["g"].members) == {"m2", "m3"}
    assert d.c.heartbeat("g", 4, "m1", None, d.now) is ErrorCode.unknown_member_id


def test_a_new_group_is_refused_while_max_groups_are_held() -> None:
    """COORDINATOR_NOT_AVAILABLE: retriable, so its clients get in once room is made;
    the groups already held go on as before."""
    d = Driver(max_groups=2)
    a, _b = _stable_pair(d)
    assert d.c.commit_allowed("solo", -1, "", None, d.now) is ErrorCode.none
    refused = d.c.join(dataclasses.replace(_join(), group_id="late"), "l0", d.now)
    assert refused == JoinResult(ErrorCode.coordinator_not_available, "")
    assert d.c.commit_allowed("other", -1, "", None, d.now) is ErrorCode.coordinator_not_available
    assert set(d.c.groups) == {"g", "solo"}
    assert d.c.commit_allowed("solo", -1, "", None, d.now) is ErrorCode.none
    assert d.c.commit_allowed("g", a.generation, a.member_id, None, d.now) is ErrorCode.none
    d.c.forget("solo")  # deleted, or expired
    assert d.c.commit_allowed("other", -1, "", None, d.now) is ErrorCode.none


def test_a_group_known_only_by_its_offsets_counts_and_keeps_committing() -> None:
    """A standalone consumer's group, reloaded from its offsets alone, is Empty (as
    Kafka reloads it): it holds a place, and its consumers commit on when full."""
    d = Driver(max_groups=1)
    d.c.restore_offsets_only("solo", d.now)
    assert d.c.groups["solo"].state is GroupState.EMPTY
    assert d.c.commit_allowed("solo", -1, "", None, d.now) is ErrorCode.none
    assert d.c.commit_allowed("new", -1, "", None, d.now) is ErrorCode.coordinator_not_available
