"""The KIP-848 heartbeat rules (kop/groups/consumer/), driven without I/O: what a
consumer of `group.protocol=consumer` sees from kop's coordinator, step by step, with
Kafka's error codes."""

from __future__ import annotations

import uuid

import pytest

from kop.groups.consumer.coordinator import ConsumerCoordinator, ConsumerSettings
from kop.groups.consumer.group import ConsumerGroupState, TopicMeta
from kop.groups.consumer.member import Assignment, MemberState
from kop.groups.consumer.offset_checks import commit_allowed, fetch_allowed
from kop.groups.consumer.requests import Answer, Heartbeat, Resolved
from kop.groups.types import TopicPartition
from kop.protocol.errors import ErrorCode, KafkaError

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
TOPICS = {"t1": TopicMeta(T1, "t1", 3), "t2": TopicMeta(T2, "t2", 2)}
RESOLVED = Resolved(TOPICS, {"t.*": ("t1", "t2")})


def coordinator(**kw: object) -> ConsumerCoordinator:
    return ConsumerCoordinator(ConsumerSettings(**kw))  # type: ignore[arg-type]


def beat(c: ConsumerCoordinator, hb: Heartbeat, now: int = 0) -> Answer:
    g, answer = c.heartbeat(hb, RESOLVED, now)
    c.install(g, now, None if hb.member_epoch < 0 else answer.member_id)
    return answer


def join(member: str, topics: tuple[str, ...] = ("t1",), **kw: object) -> Heartbeat:
    return Heartbeat("g", member, 0, rebalance_timeout_ms=30_000, topics=topics, owned={}, **kw)  # type: ignore[arg-type]


def again(member: str, epoch: int, owned: Assignment | None = None, **kw: object) -> Heartbeat:
    return Heartbeat("g", member, epoch, owned=owned, **kw)  # type: ignore[arg-type]


def owners(c: ConsumerCoordinator) -> dict[tuple[uuid.UUID, int], str]:
    """Who holds each partition (assigned or still revoking); fails on a partition held
    twice."""
    out: dict[tuple[uuid.UUID, int], str] = {}
    for m in c.groups["g"].members.values():
        for a in (m.assigned, m.revoking):
            for t, parts in a.items():
                for p in parts:
                    assert (t, p) not in out, f"{(t, p)} held by {out[(t, p)]} and {m.member_id}"
                    out[(t, p)] = m.member_id
    return out


def test_the_first_member_gets_every_partition_at_epoch_one() -> None:
    c = coordinator()
    a = beat(c, join("a"))
    assert (a.member_id, a.member_epoch) == ("a", 1)
    assert a.assignment == {T1: frozenset({0, 1, 2})}
    assert c.groups["g"].state is ConsumerGroupState.STABLE


def test_a_partition_moves_only_after_its_owner_revoked_it() -> None:
    c = coordinator()
    beat(c, join("a"))
    b = beat(c, join("b"))
    # b's share is still a's: b is at the new epoch with nothing yet
    assert b.member_epoch == 2 and b.assignment == {}
    assert c.groups["g"].members["b"].state is MemberState.UNRELEASED_PARTITIONS
    a = beat(c, again("a", 1, {T1: frozenset({0, 1, 2})}))
    assert a.member_epoch == 1  # revoking first, at its epoch
    kept = a.assignment
    assert kept is not None and len(kept[T1]) == 2
    owners(c)
    # a still reports the partition: nothing moves
    assert beat(c, again("b", 2)).assignment is None
    a = beat(c, again("a", 1, kept))
    assert a.member_epoch == 2
    b = beat(c, again("b", 2))
    assert b.assignment == {T1: frozenset({0, 1, 2}) - kept[T1]}
    assert c.groups["g"].state is ConsumerGroupState.STABLE
    assert len(owners(c)) == 3


def test_a_leaving_member_frees_its_partitions_at_once() -> None:
    c = coordinator()
    beat(c, join("a"))
    beat(c, join("b"))
    assert beat(c, again("a", -1)).member_epoch == -1
    assert "a" not in c.groups["g"].members
    b = beat(c, again("b", 2))
    assert b.member_epoch == 3 and b.assignment == {T1: frozenset({0, 1, 2})}


@pytest.mark.parametrize(
    ("hb", "code"),
    [
        (
            Heartbeat("", "m", 0, rebalance_timeout_ms=1, topics=("t1",), owned={}),
            "invalid_request",
        ),
        (Heartbeat("g", "m", 0, topics=("t1",), owned={}), "invalid_request"),  # no timeout
        (Heartbeat("g", "m", 0, rebalance_timeout_ms=1, topics=("t1",)), "invalid_request"),
        (Heartbeat("g", "m", 0, rebalance_timeout_ms=1, owned={}), "invalid_request"),
        (Heartbeat("g", "m", -2), "invalid_request"),  # a static leave names its instance
        (Heartbeat("g", "m", -3), "invalid_request"),
        (Heartbeat("g", "", 1), "invalid_request"),
        (
            Heartbeat("g", "m", 0, "", rebalance_timeout_ms=1, topics=("t1",), owned={}),
            "invalid_request",
        ),
        (join("m", assignor="sticky"), "unsupported_assignor"),
        (Heartbeat("g", "m", 3), "group_id_not_found"),
    ],
)
def test_requests_kafka_refuses_are_refused_with_its_codes(hb: Heartbeat, code: str) -> None:
    with pytest.raises(KafkaError) as caught:
        coordinator().heartbeat(hb, RESOLVED, 0)
    assert caught.value.code is getattr(ErrorCode, code)


def test_member_epochs_are_fenced_as_kafka_fences_them() -> None:
    c = coordinator()
    beat(c, join("a"))
    with pytest.raises(KafkaError) as ahead:
        c.heartbeat(again("a", 7), RESOLVED, 0)
    assert ahead.value.code is ErrorCode.fenced_member_epoch
    with pytest.raises(KafkaError) as unknown:
        c.heartbeat(again("x", 1), RESOLVED, 0)
    assert unknown.value.code is ErrorCode.unknown_member_id
    beat(c, join("b"))
    beat(c, again("a", 1, {T1: frozenset({0, 1, 2})}))
    kept = c.groups["g"].members["a"].assigned
    beat(c, again("a", 1, dict(kept)))  # now at epoch 2, previous 1
    # the answer moving it to 2 was lost: epoch 1 with a subset of its partitions is fine
    assert beat(c, again("a", 1, dict(kept))).member_epoch == 2
    with pytest.raises(KafkaError) as behind:  # but not while reporting more
        c.heartbeat(again("a", 1, {T1: frozenset({0, 1, 2})}), RESOLVED, 0)
    assert behind.value.code is ErrorCode.fenced_member_epoch
    # a member fenced by the client's own account rejoins at epoch 0 (KAFKA-19233)
    assert beat(c, join("a")).member_epoch == 2


def test_a_static_member_comes_back_to_its_partitions() -> None:
    c = coordinator()
    beat(c, join("a", instance_id="i-a"))
    beat(c, join("b", instance_id="i-b"))
    beat(c, again("a", 1, {T1: frozenset({0, 1, 2})}, instance_id="i-a"))
    beat(c, again("a", 1, dict(c.groups["g"].members["a"].assigned), instance_id="i-a"))
    beat(c, again("b", 2, instance_id="i-b"))
    before = {m: dict(x.assigned) for m, x in c.groups["g"].members.items()}
    gone = beat(c, again("a", -2, instance_id="i-a"))
    assert gone.member_epoch == -2
    assert c.groups["g"].epoch == 2  # no rebalance: its partitions wait for it
    with pytest.raises(KafkaError) as taken:  # the id is still a's while it is away? no:
        c.heartbeat(join("c", instance_id="i-b"), RESOLVED, 0)
    assert taken.value.code is ErrorCode.unreleased_instance_id
    back = beat(c, join("a2", instance_id="i-a"))
    assert back.assignment == before["a"] and back.member_epoch == 2
    assert "a" not in c.groups["g"].members
    # held from epoch 0, as Kafka resets them: its commits before its first answer go in
    kept = [TopicPartition("t1", p) for p in before["a"][T1]]
    assert commit_allowed(c.groups["g"], "a2", 0, kept) is ErrorCode.none
    with pytest.raises(KafkaError) as old:
        c.heartbeat(again("a", 2, instance_id="i-a"), RESOLVED, 0)
    assert old.value.code is ErrorCode.fenced_instance_id


def test_sessions_and_revocations_time_out() -> None:
    c = coordinator(session_timeout_ms=10_000)
    beat(c, join("a"), now=0)
    beat(c, join("b"), now=0)
    assert c.next_deadline() == 10_000
    beat(c, again("a", 1, {T1: frozenset({0, 1, 2})}), now=1_000)  # a: revoking, 30 s to do it
    assert [d.member_id for d in c.due(10_000)] == ["b"]  # a heartbeat at 1 s: alive
    g = c.fenced(c.due(10_000)[0])
    assert g is not None and set(g.members) == {"a"} and g.epoch == 3
    c.install(g, 10_000)
    # a must still give up what it was revoking (Kafka's rule), and then has it all back
    kept = dict(c.groups["g"].members["a"].assigned)
    assert beat(c, again("a", 1, {T1: frozenset({0, 1, 2})}), now=10_500).member_epoch == 1
    a = beat(c, again("a", 1, kept), now=10_600)
    assert (a.member_epoch, a.assignment) == (3, {T1: frozenset({0, 1, 2})})


def test_a_regex_subscribes_to_what_it_matches() -> None:
    c = coordinator()
    a = beat(c, join("a", topics=None, regex="t.*"))  # type: ignore[arg-type]
    assert a.assignment == {T1: frozenset({0, 1, 2}), T2: frozenset({0, 1})}


def test_the_range_assignor_when_members_ask_for_it() -> None:
    c = coordinator()
    beat(c, join("a", topics=("t1", "t2"), assignor="range"))
    beat(c, join("b", topics=("t1", "t2"), assignor="range"))
    # contiguous ranges per topic in member order, the first member one more
    assert c.groups["g"].targets == {
        "a": {T1: frozenset({0, 1}), T2: frozenset({0})},
        "b": {T1: frozenset({2}), T2: frozenset({1})},
    }


def test_the_group_is_bounded() -> None:
    c = coordinator(max_size=1)
    beat(c, join("a"))
    with pytest.raises(KafkaError) as full:
        c.heartbeat(join("b"), RESOLVED, 0)
    assert full.value.code is ErrorCode.group_max_size_reached


def test_offsets_of_a_consumer_group_are_checked_by_member_epoch() -> None:
    c = coordinator()
    t1 = [TopicPartition("t1", 0)]
    assert commit_allowed(c.groups.get("g"), "", -1, t1) is None  # not a consumer group
    beat(c, join("a"))
    assert commit_allowed(c.groups.get("g"), "a", 1, t1) is ErrorCode.none
    assert commit_allowed(c.groups.get("g"), "a", 0, t1) is ErrorCode.stale_member_epoch
    assert commit_allowed(c.groups.get("g"), "a", 2, t1) is ErrorCode.stale_member_epoch
    assert commit_allowed(c.groups.get("g"), "x", 1, t1) is ErrorCode.unknown_member_id
    assert (
        commit_allowed(c.groups.get("g"), "", -1, t1) is ErrorCode.unknown_member_id
    )  # not while in use
    assert fetch_allowed(c.groups.get("g"), None, -1) is ErrorCode.none  # an admin's fetch
    assert fetch_allowed(c.groups.get("g"), "a", 3) is ErrorCode.stale_member_epoch
    beat(c, again("a", -1))
    assert commit_allowed(c.groups.get("g"), "", -1, t1) is ErrorCode.none  # empty: admins commit


def test_a_commit_at_the_epoch_before_is_the_members_own_for_what_it_still_holds() -> None:
    """KIP-1251 (Kafka 4.3): a member's commit sent while the heartbeat answer that
    moved its epoch is on its way carries the epoch before. It is taken for partitions
    the member held since that epoch or earlier, and refused for one it gave up or was
    given later (that commit could be a zombie's). Before, kop refused every commit
    not at the current epoch, and a Java consumer whose revocation callback committed
    in that window threw CommitFailedException and stopped."""
    c = coordinator()
    beat(c, join("a"))  # a: t1 0,1,2 at epoch 1
    beat(c, join("b"))  # epoch 2: one of a's partitions is b's
    moving = beat(c, again("a", 1, owned={T1: frozenset({0, 1, 2})}))
    assert moving.member_epoch == 1  # a keeps epoch 1 until it has revoked
    kept = sorted(moving.assignment[T1]) if moving.assignment else []
    (gone,) = {0, 1, 2} - set(kept)
    assert beat(c, again("a", 1, owned={T1: frozenset(kept)})).member_epoch == 2
    g = c.groups["g"]
    at = [TopicPartition("t1", p) for p in kept]
    assert commit_allowed(g, "a", 1, at) is ErrorCode.none  # the epoch before, what it kept
    assert commit_allowed(g, "a", 2, at) is ErrorCode.none
    assert commit_allowed(g, "a", 1, [*at, TopicPartition("t1", gone)]) is (
        ErrorCode.stale_member_epoch  # one partition it gave up refuses the commit
    )
    assert commit_allowed(g, "a", 1, [TopicPartition("t2", 0)]) is ErrorCode.stale_member_epoch
    assert commit_allowed(g, "a", 3, at) is ErrorCode.stale_member_epoch  # ahead of it
    beat(c, again("b", -1))  # b leaves: a is given `gone` back at a later epoch
    back = beat(c, again("a", 2, owned={T1: frozenset(kept)}))
    assert back.member_epoch > 2 and back.assignment == {T1: frozenset({0, 1, 2})}
    assert commit_allowed(g := c.groups["g"], "a", 2, at) is ErrorCode.none
    assert commit_allowed(g, "a", 2, [TopicPartition("t1", gone)]) is ErrorCode.stale_member_epoch
    assert commit_allowed(g, "a", back.member_epoch, [TopicPartition("t1", gone)]) is (
        ErrorCode.none
    )
