"""KIP-932's ShareGroupHeartbeat rules (kop/groups/share/coordinator.py), the simple
assignor, and share sessions (kop/api/share_sessions.py), with Kafka's error codes."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kop.api.fetch_session import Owner
from kop.api.share_sessions import ShareSessions
from kop.groups.consumer.group import TopicMeta
from kop.groups.share.coordinator import ShareCoordinator, ShareHeartbeat, ShareSettings
from kop.groups.share.group import simple_assignment
from kop.protocol.errors import ErrorCode, KafkaError

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"t1": TopicMeta(T1, "t1", 4), "t2": TopicMeta(T2, "t2", 1)}


def _beat(c: ShareCoordinator, member: str, epoch: int, topics: tuple[str, ...] | None = None,
          now: int = 0):  # type: ignore[no-untyped-def]  # fmt: skip
    hb = ShareHeartbeat("g", member, epoch, topics=topics)
    names = c.wants(hb, now)
    resolved = None if names is None else {n: TOPICS[n] for n in names if n in TOPICS}
    return c.heartbeat(hb, resolved, now)


def _code(call: object) -> ErrorCode:
    with pytest.raises(KafkaError) as err:
        call()  # type: ignore[operator]
    return err.value.code


def test_a_join_gets_every_partition_and_a_second_member_takes_half() -> None:
    c = ShareCoordinator()
    a = _beat(c, "a", 0, ("t1",))
    assert a.member_epoch == 1 and a.assignment == {T1: frozenset({0, 1, 2, 3})}
    b = _beat(c, "b", 0, ("t1",))
    assert b.member_epoch == 2 and b.assignment == {T1: frozenset({1, 3})}
    again = _beat(c, "a", 1)  # a takes the new assignment at once: nothing is revoked first
    assert again.member_epoch == 2 and again.assignment == {T1: frozenset({0, 2})}
    assert _beat(c, "a", 2).assignment is None  # unchanged: not sent again


def test_more_members_than_partitions_share_a_partition() -> None:
    c = ShareCoordinator()
    for m in ("a", "b", "c"):
        _beat(c, m, 0, ("t2",))
    g = c.groups["g"]
    assert all(g.targets[m] == {T2: frozenset({0})} for m in ("a", "b", "c"))


def test_the_requests_own_checks() -> None:
    c = ShareCoordinator()
    assert _code(lambda: _beat(c, "", 0, ("t1",))) is ErrorCode.invalid_request
    assert _code(lambda: _beat(c, "a", 0)) is ErrorCode.invalid_request  # no topics
    assert _code(lambda: _beat(c, "a", -2)) is ErrorCode.invalid_request


def test_epochs_unknown_members_and_leaving() -> None:
    c = ShareCoordinator()
    _beat(c, "a", 0, ("t1",))
    assert _code(lambda: _beat(c, "a", 7)) is ErrorCode.fenced_member_epoch
    assert _code(lambda: _beat(c, "x", 1)) is ErrorCode.unknown_member_id
    assert _code(lambda: _beat(c, "x", -1)) is ErrorCode.unknown_member_id
    assert _beat(c, "a", -1).member_epoch == -1
    assert c.groups["g"].state == "Empty"


def test_a_full_group_refuses_a_new_member() -> None:
    c = ShareCoordinator(ShareSettings(max_size=1))
    _beat(c, "a", 0, ("t1",))
    assert _code(lambda: _beat(c, "b", 0, ("t1",))) is ErrorCode.group_max_size_reached
    assert _beat(c, "a", 0, ("t1",)).member_epoch > 0  # a rejoin is no new member


def test_a_silent_member_leaves_and_the_others_take_its_partitions() -> None:
    c = ShareCoordinator(ShareSettings(session_timeout_ms=100))
    _beat(c, "a", 0, ("t1",), now=0)
    _beat(c, "b", 0, ("t1",), now=50)
    assert c.expire(120) == [("g", "a")]
    assert _beat(c, "b", 2, now=130).assignment == {T1: frozenset({0, 1, 2, 3})}


@given(
    st.dictionaries(
        st.text("abcdef", min_size=1, max_size=3),
        st.sets(st.sampled_from(["t1", "t2"]), min_size=1).map(lambda s: tuple(sorted(s))),
        min_size=1, max_size=8,
    )
)  # fmt: skip
def test_the_simple_assignor_covers_every_partition_and_every_member(
    subs: dict[str, tuple[str, ...]],
) -> None:
    got = simple_assignment(subs, TOPICS)
    for name, meta in TOPICS.items():
        members = [m for m, names in subs.items() if name in names]
        if not members:
            continue
        held = [p for m in members for p in got[m].get(meta.topic_id, ())]
        assert set(held) == set(range(meta.partitions))  # every partition, once at least
        per = [len(got[m].get(meta.topic_id, ())) for m in members]
        assert min(per) >= 1 and max(per) - min(per) <= 1  # balanced, nobody idle


OWNER, OTHER = Owner("PLAIN", "User:alice", "t/ns"), Owner("PLAIN", "User:eve", "t/ns")


def test_share_session_epochs() -> None:
    s = ShareSessions()
    assert s.begin(OWNER, "g", "m", 0).session.epoch == 1
    assert s.begin(OWNER, "g", "m", 1).session.epoch == 2
    assert _code(lambda: s.begin(OWNER, "g", "m", 1)) is ErrorCode.invalid_share_session_epoch
    assert _code(lambda: s.begin(OTHER, "g", "m", 2)) is ErrorCode.share_session_not_found
    assert s.begin(OWNER, "g", "m", -1).closing
    assert _code(lambda: s.begin(OWNER, "g", "m", 2)) is ErrorCode.share_session_not_found


def test_a_reopened_session_replaces_the_old_and_sessions_are_bounded() -> None:
    s = ShareSessions(capacity=3, per_principal=2)
    s.begin(OWNER, "g", "m", 0)
    assert s.begin(OWNER, "g", "m", 0).replaced is not None
    s.begin(OWNER, "g", "n", 0)
    assert _code(lambda: s.begin(OWNER, "g", "o", 0)) is ErrorCode.share_session_limit_reached
    s.begin(OTHER, "g", "p", 0)
    assert _code(lambda: s.begin(OTHER, "g", "q", 0)) is ErrorCode.share_session_limit_reached
    assert len(s) == 3
