"""The KIP-848 server-side assignors, `uniform` and `range`.

Worked examples (Kafka's documented ones where there are some), then
properties over generated groups: every partition owned once and by a
subscriber, balance, the fewest moves (homogeneous uniform), balance no
subscription could improve on (checked by brute force), range's contiguity
and co-partitioning, and results that depend only on the content of the
input.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import TypeVar

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kop.groups.consumer.assignors import (
    ASSIGNORS,
    DEFAULT_ASSIGNOR,
    RANGE,
    UNIFORM,
    Assignment,
    MemberSpec,
    TopicId,
)

T1, T2, T3, T4 = (uuid.UUID(int=k) for k in (11, 22, 33, 44))
PROPERTY = settings(max_examples=60, deadline=None)

_T = TypeVar("_T", str, int, uuid.UUID)
Group = tuple[dict[str, MemberSpec], dict[TopicId, int]]
Result = dict[str, Assignment]


def spec(
    member_id: str,
    topics: set[TopicId],
    current: Mapping[TopicId, set[int]] | None = None,
    instance_id: str | None = None,
) -> MemberSpec:
    held = {t: frozenset(ps) for t, ps in (current or {}).items()}
    return MemberSpec(member_id, instance_id, None, frozenset(topics), held)


def group(*members: MemberSpec) -> dict[str, MemberSpec]:
    return {m.member_id: m for m in members}


def plain(result: Result) -> dict[str, dict[TopicId, list[int]]]:
    return {m: {t: sorted(ps) for t, ps in a.items()} for m, a in result.items()}


def owners(result: Result) -> dict[tuple[TopicId, int], list[str]]:
    found: dict[tuple[TopicId, int], list[str]] = {}
    for member_id, assignment in result.items():
        for topic, ps in assignment.items():
            for p in ps:
                found.setdefault((topic, p), []).append(member_id)
    return found


def load(result: Result, member_id: str) -> int:
    return sum(len(ps) for ps in result[member_id].values())


def revoked(members: Mapping[str, MemberSpec], result: Result) -> int:
    """Partitions taken from a member that still is in the group: the moves
    that cost a member a revocation."""
    owner = {tp: ms[0] for tp, ms in owners(result).items()}
    return sum(
        1
        for member_id, m in members.items()
        for topic, ps in m.current.items()
        for p in ps
        if owner.get((topic, p)) != member_id
    )


def fed_back(members: Mapping[str, MemberSpec], result: Result) -> dict[str, MemberSpec]:
    """The group as the next assignment sees it: ``result`` as the current one."""
    return {
        m: MemberSpec(s.member_id, s.instance_id, s.rack_id, s.topics, result[m])
        for m, s in members.items()
    }


# -- the registry ------------------------------------------------------------


def test_both_assignors_under_kafkas_names_uniform_first() -> None:
    assert list(ASSIGNORS) == ["uniform", "range"]
    assert next(iter(ASSIGNORS)) == DEFAULT_ASSIGNOR
    assert ASSIGNORS["uniform"] is UNIFORM and UNIFORM.name == "uniform"
    assert ASSIGNORS["range"] is RANGE and RANGE.name == "range"


def test_an_empty_group_gets_an_empty_assignment() -> None:
    assert UNIFORM.assign({}, {T1: 3}) == {}
    assert RANGE.assign({}, {T1: 3}) == {}


# -- range: worked examples --------------------------------------------------


def test_range_kafkas_example_two_members_two_topics_of_three() -> None:
    # RangeAssignor's javadoc: M0: [T1P0, T1P1, T2P0, T2P1], M1: [T1P2, T2P2]
    members = group(spec("M0", {T1, T2}), spec("M1", {T1, T2}))
    assert plain(RANGE.assign(members, {T1: 3, T2: 3})) == {
        "M0": {T1: [0, 1], T2: [0, 1]},
        "M1": {T1: [2], T2: [2]},
    }


def test_range_orders_static_members_by_instance_id_before_dynamic_ones() -> None:
    # The javadoc's rolling bounce: M0 and M1 come back as M3 and M2; with
    # instance ids I0 and I1 the ranges follow the instance ids, not the new
    # member ids. A dynamic member ("A", first by member id) comes last.
    members = group(
        spec("M3", {T1, T2}, instance_id="I0"),
        spec("M2", {T1, T2}, instance_id="I1"),
        spec("A", {T1, T2}),
    )
    assert plain(RANGE.assign(members, {T1: 4, T2: 4})) == {
        "A": {T1: [3], T2: [3]},
        "M2": {T1: [2], T2: [2]},
        "M3": {T1: [0, 1], T2: [0, 1]},
    }


def test_range_splits_each_topic_over_its_own_subscribers() -> None:
    members = group(spec("a", {T1, T2}), spec("b", {T2}), spec("c", {T1, T2, T3}))
    assert plain(RANGE.assign(members, {T1: 5, T2: 7, T3: 2})) == {
        "a": {T1: [0, 1, 2], T2: [0, 1, 2]},
        "b": {T2: [3, 4]},
        "c": {T1: [3, 4], T2: [5, 6], T3: [0, 1]},
    }


def test_range_more_subscribers_than_partitions_leaves_the_last_without() -> None:
    members = group(spec("a", {T1}), spec("b", {T1}), spec("c", {T1}))
    assert plain(RANGE.assign(members, {T1: 2})) == {"a": {T1: [0]}, "b": {T1: [1]}, "c": {}}


def test_range_ignores_the_previous_assignment() -> None:
    # Kafka's range is not sticky since KAFKA-16944: the ranges are a
    # function of the subscribers alone.
    members = group(spec("a", {T1}, {T1: {3, 4, 5}}), spec("b", {T1}, {T1: {0, 1, 2}}))
    assert plain(RANGE.assign(members, {T1: 6})) == {"a": {T1: [0, 1, 2]}, "b": {T1: [3, 4, 5]}}


# -- uniform: worked examples ------------------------------------------------


def test_uniform_fresh_group_gets_contiguous_runs() -> None:
    members = group(spec("a", {T1, T2}), spec("b", {T1, T2}), spec("c", {T1, T2}))
    assert plain(UNIFORM.assign(members, {T1: 4, T2: 3})) == {
        "a": {T1: [0, 1, 2]},
        "b": {T1: [3], T2: [0]},
        "c": {T2: [1, 2]},
    }


def test_uniform_keeps_a_balanced_assignment_whoever_holds_the_extra() -> None:
    # KAFKA-18688: before it, the first members in order got the extra
    # partitions, and "a" would have taken one of "b"'s here.
    members = group(spec("a", {T1}, {T1: {0}}), spec("b", {T1}, {T1: {1, 2}}))
    assert plain(UNIFORM.assign(members, {T1: 3})) == {"a": {T1: [0]}, "b": {T1: [1, 2]}}


def test_uniform_a_joining_member_takes_one_from_each() -> None:
    members = group(
        spec("a", {T1}, {T1: {0, 1, 2}}), spec("b", {T1}, {T1: {3, 4, 5}}), spec("c", {T1})
    )
    result = UNIFORM.assign(members, {T1: 6})
    assert plain(result) == {"a": {T1: [0, 1]}, "b": {T1: [3, 4]}, "c": {T1: [2, 5]}}
    assert revoked(members, result) == 2


def test_uniform_a_leaving_members_partitions_go_to_the_rest_and_nothing_else_moves() -> None:
    members = group(spec("a", {T1}, {T1: {0, 1}}), spec("b", {T1}, {T1: {2, 3}}))
    result = UNIFORM.assign(members, {T1: 6})  # "c" held 4 and 5, and left
    assert plain(result) == {"a": {T1: [0, 1, 4]}, "b": {T1: [2, 3, 5]}}
    assert revoked(members, result) == 0


def test_uniform_drops_what_a_member_may_no_longer_hold() -> None:
    members = group(
        # T3 is gone, T2 is no longer subscribed, T1 has 4 partitions now
        spec("a", {T1}, {T1: {0, 7, -1}, T2: {0}, T3: {0}}),
        spec("b", {T1, T2}, {T1: {1}}),
    )
    result = UNIFORM.assign(members, {T1: 4, T2: 2})
    assert owners(result).keys() == {(T1, 0), (T1, 1), (T1, 2), (T1, 3), (T2, 0), (T2, 1)}
    assert all(len(ms) == 1 for ms in owners(result).values())
    assert T2 not in result["a"]
    assert 0 in result["a"][T1] and 1 in result["b"][T1]


def test_uniform_a_partition_claimed_twice_stays_with_the_first_member() -> None:
    members = group(spec("b", {T1}, {T1: {0, 1}}), spec("a", {T1}, {T1: {1}}))
    assert plain(UNIFORM.assign(members, {T1: 2})) == {"a": {T1: [1]}, "b": {T1: [0]}}


def test_uniform_heterogeneous_sole_subscriber_takes_its_topic() -> None:
    # "a" can only take T1, so balance puts all of T2 on "b" and T1 on "a".
    members = group(spec("a", {T1}), spec("b", {T1, T2}))
    assert plain(UNIFORM.assign(members, {T1: 3, T2: 3})) == {
        "a": {T1: [0, 1, 2]},
        "b": {T2: [0, 1, 2]},
    }


def test_uniform_heterogeneous_fresh_partitions_go_to_the_lightest_subscriber() -> None:
    # Kafka's order: T1 first (2 partitions per subscriber, against T2's 1),
    # dealt alternately to a and b; then T2 to c, the lightest of its two.
    members = group(spec("a", {T1, T2}), spec("b", {T1}), spec("c", {T2}))
    assert plain(UNIFORM.assign(members, {T1: 4, T2: 2})) == {
        "a": {T1: [0, 2]},
        "b": {T1: [1, 3]},
        "c": {T2: [0, 1]},
    }


def test_uniform_heterogeneous_a_joining_member_takes_one_from_its_topic() -> None:
    members = group(
        spec("a", {T1, T2}, {T1: {0, 2}}),
        spec("b", {T1}, {T1: {1, 3}}),
        spec("c", {T2}, {T2: {0, 1}}),
        spec("d", {T1}),
    )
    result = UNIFORM.assign(members, {T1: 4, T2: 2})
    assert plain(result) == {
        "a": {T1: [0]},
        "b": {T1: [1, 3]},
        "c": {T2: [0, 1]},
        "d": {T1: [2]},
    }
    assert revoked(members, result) == 1


def test_uniform_what_decides_homogeneous_is_the_topics_with_partitions() -> None:
    # a's subscription to the empty T4 (and the missing T3) leaves the group
    # homogeneous: contiguous runs, not partitions dealt alternately.
    members = group(spec("a", {T1, T3, T4}), spec("b", {T1}))
    assert plain(UNIFORM.assign(members, {T1: 4, T4: 0})) == {
        "a": {T1: [0, 1]},
        "b": {T1: [2, 3]},
    }


def test_uniform_heterogeneous_evens_out_along_a_chain() -> None:
    # Kafka's builder documents that it leaves 9, 10, 11 here: a and b share
    # T1, b and c share T2, and no single topic has subscribers two apart.
    # Two moves along the chain (c gives b a T2 partition, b gives a a T1
    # partition) make it 10, 10, 10.
    members = group(
        spec("a", {T1}, {T1: set(range(9))}),
        spec("b", {T1, T2}, {T1: set(range(9, 19))}),
        spec("c", {T2}, {T2: set(range(11))}),
    )
    result = UNIFORM.assign(members, {T1: 19, T2: 11})
    assert [load(result, m) for m in "abc"] == [10, 10, 10]
    assert revoked(members, result) == 2


def test_topics_that_do_not_exist_or_are_empty_are_nobodys() -> None:
    members = group(spec("a", {T1, T3}), spec("b", {T3, T4}))
    for assignor in (UNIFORM, RANGE):
        result = assignor.assign(members, {T1: 2, T4: 0, T2: 5})
        assert plain(result) == {"a": {T1: [0, 1]}, "b": {}}, assignor.name


# -- generated groups --------------------------------------------------------


COLLIDING = st.integers(0, 7).map(lambda k: uuid.UUID(int=5 + 64 * k))
"""Topic ids whose hashes fall in one slot of a small set, so that a set of
them iterates in the order its ids were added: what shows up an assignor
that follows the iteration order of a set."""


@st.composite
def groups(
    draw: st.DrawFn,
    homogeneous: bool = False,
    sound: bool = False,
    most_members: int = 7,
    most_partitions: int = 9,
) -> Group:
    """A group and its topics. Some subscribed topics do not exist; with
    ``sound`` the previous assignment holds each existing partition at most
    once and only with a subscriber, otherwise it may hold anything."""
    topics = draw(st.lists(st.one_of(st.uuids(), COLLIDING), min_size=1, max_size=4, unique=True))
    partitions = {
        t: draw(st.integers(0, most_partitions))
        for t in topics[: draw(st.integers(0, len(topics)))]
    }
    ids = draw(
        st.lists(
            st.text("abcdef", min_size=1, max_size=3),
            min_size=1,
            max_size=most_members,
            unique=True,
        )
    )
    common = frozenset(draw(st.lists(st.sampled_from(topics), max_size=4)))
    subscribed = {
        m: common if homogeneous else frozenset(draw(st.lists(st.sampled_from(topics), max_size=4)))
        for m in ids
    }
    current: dict[str, dict[TopicId, set[int]]] = {m: {} for m in ids}
    if sound:
        for topic, count in partitions.items():
            for p in range(count):
                holder = draw(st.sampled_from([None, *ids]))
                if holder is not None and topic in subscribed[holder]:
                    current[holder].setdefault(topic, set()).add(p)
    else:
        for m in ids:
            for topic in draw(st.lists(st.sampled_from(topics), max_size=3)):
                current[m][topic] = set(draw(st.lists(st.integers(-1, 11), max_size=5)))
    instance = st.one_of(st.none(), st.text("xyz", min_size=1, max_size=2))
    members = {
        m: MemberSpec(
            m,
            draw(instance),
            None,
            subscribed[m],
            {t: frozenset(ps) for t, ps in current[m].items()},
        )
        for m in ids
    }
    return members, partitions


def assert_valid(
    members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int], result: Result
) -> None:
    assert result.keys() == members.keys()
    expected = {
        (t, p)
        for t, count in partitions.items()
        if any(t in m.topics for m in members.values())
        for p in range(count)
    }
    found = owners(result)
    assert found.keys() == expected
    for (topic, _), holders in found.items():
        assert len(holders) == 1
        assert topic in members[holders[0]].topics
    assert all(ps for a in result.values() for ps in a.values())


@PROPERTY
@given(g=groups(), which=st.sampled_from(["uniform", "range"]))
def test_every_partition_goes_once_to_a_subscriber(g: Group, which: str) -> None:
    members, partitions = g
    assert_valid(members, partitions, ASSIGNORS[which].assign(members, partitions))


def rebuilt(g: Group, backwards: bool) -> Group:
    """The same content built anew: every mapping and set filled in sorted
    order or in reverse, with topic ids that are equal but other objects.
    Colliding ids then iterate in opposite orders (see COLLIDING)."""
    members, partitions = g

    def order(items: list[_T]) -> list[_T]:
        return sorted(items, reverse=backwards)

    def copy(t: TopicId) -> TopicId:
        return uuid.UUID(bytes=t.bytes)

    return (
        {
            m: MemberSpec(
                s.member_id,
                s.instance_id,
                s.rack_id,
                frozenset(copy(t) for t in order(list(s.topics))),
                {copy(t): frozenset(order(list(s.current[t]))) for t in order(list(s.current))},
            )
            for m, s in ((m, members[m]) for m in order(list(members)))
        },
        {copy(t): partitions[t] for t in order(list(partitions))},
    )


@PROPERTY
@given(g=groups(), which=st.sampled_from(["uniform", "range"]))
def test_the_result_depends_only_on_the_content_of_the_input(g: Group, which: str) -> None:
    assignor = ASSIGNORS[which]
    results = [assignor.assign(*variant) for variant in (g, rebuilt(g, False), rebuilt(g, True))]
    # the same, down to the order of the mappings
    first, *others = [[(m, list(a.items())) for m, a in r.items()] for r in results]
    assert all(other == first for other in others)


def test_topic_ids_in_one_hash_slot_do_not_change_the_result() -> None:
    """The property above, on a case that always exercises it: three topic
    ids that collide, so the sets built forwards and backwards iterate in
    different orders."""
    c0, c1, c2 = (uuid.UUID(int=5 + 64 * k) for k in range(3))
    members = group(
        spec("a", {c0, c1, c2}, {c2: {0, 1}}),
        spec("b", {c0, c1, c2}, {c0: {1}}),
        spec("c", {c1, c2}),
    )
    g = (members, {c0: 2, c1: 1, c2: 3})
    for assignor in (UNIFORM, RANGE):
        forwards, backwards = (assignor.assign(*rebuilt(g, way)) for way in (False, True))
        assert [(m, list(a.items())) for m, a in forwards.items()] == [
            (m, list(a.items())) for m, a in backwards.items()
        ], assignor.name
        assert list(forwards) == ["a", "b", "c"]
        assert all(list(a) == sorted(a) for a in forwards.values()), assignor.name


# -- uniform: balance and stickiness -----------------------------------------


def least_revoked(members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]) -> int:
    """The fewest revocations any balanced assignment of a homogeneous group
    needs: the largest holdings paired with the larger quotas keep most."""
    topics = next(iter(members.values())).topics
    total = sum(n for t, n in partitions.items() if t in topics)
    base, extra = divmod(total, len(members))
    quotas = [base + 1] * extra + [base] * (len(members) - extra)
    holdings = sorted(
        (sum(len(ps) for ps in m.current.values()) for m in members.values()), reverse=True
    )
    return sum(holdings) - sum(map(min, holdings, quotas))


@PROPERTY
@given(g=groups(homogeneous=True, sound=True))
def test_uniform_homogeneous_is_balanced_and_moves_the_fewest(g: Group) -> None:
    members, partitions = g
    result = UNIFORM.assign(members, partitions)
    assert_valid(members, partitions, result)
    loads = [load(result, m) for m in members]
    assert max(loads) - min(loads) <= 1
    assert revoked(members, result) == least_revoked(members, partitions)


@PROPERTY
@given(g=groups(homogeneous=True), joining=st.text("ghij", min_size=1, max_size=2), data=st.data())
def test_uniform_homogeneous_join_and_leave_move_the_fewest(
    g: Group, joining: str, data: st.DataObject
) -> None:
    members, partitions = g
    settled = fed_back(members, UNIFORM.assign(members, partitions))
    topics = next(iter(members.values())).topics

    joined = {**settled, joining: spec(joining, set(topics))}
    result = UNIFORM.assign(joined, partitions)
    assert revoked(joined, result) == least_revoked(joined, partitions)
    assert max(map(len, owners(result).values()), default=1) == 1

    if len(settled) > 1:
        leaving = data.draw(st.sampled_from(sorted(settled)))
        left = {m: s for m, s in settled.items() if m != leaving}
        result = UNIFORM.assign(left, partitions)
        assert revoked(left, result) == least_revoked(left, partitions)


@PROPERTY
@given(g=groups())
def test_uniform_gives_back_its_own_assignment_unchanged(g: Group) -> None:
    members, partitions = g
    settled = fed_back(members, UNIFORM.assign(members, partitions))
    assert UNIFORM.assign(settled, partitions) == {m: dict(s.current) for m, s in settled.items()}


def improving_chain(members: Mapping[str, MemberSpec], result: Result) -> list[str] | None:
    """A chain of members, each able to hand the next a partition of a topic
    both subscribe to, from one member to another holding two or more fewer:
    moving one partition along it would even the counts out."""
    loads = {m: load(result, m) for m in members}
    for start in sorted(members):
        paths = {start: [start]}
        frontier = [start]
        while frontier:
            following = []
            for giver in frontier:
                for topic in result[giver]:
                    for taker in sorted(members):
                        if taker in paths or topic not in members[taker].topics:
                            continue
                        paths[taker] = [*paths[giver], taker]
                        if loads[taker] <= loads[start] - 2:
                            return paths[taker]
                        following.append(taker)
            frontier = following
    return None


@PROPERTY
@given(g=groups(sound=True))
def test_uniform_leaves_no_chain_of_moves_that_would_even_out_counts(g: Group) -> None:
    members, partitions = g
    result = UNIFORM.assign(members, partitions)
    assert_valid(members, partitions, result)
    assert improving_chain(members, result) is None


@settings(max_examples=40, deadline=None)
@given(g=groups(most_members=3, most_partitions=2))
def test_uniform_is_as_balanced_as_any_assignment_could_be(g: Group) -> None:
    """Against every assignment of a small group (up to 3**8 of them): none
    has a smaller sum of squared counts, which is also the smallest largest
    count."""
    members, partitions = g
    result = UNIFORM.assign(members, partitions)
    ids = sorted(members)
    choices = [
        [i for i, m in enumerate(ids) if t in members[m].topics]
        for t, n in partitions.items()
        for _ in range(n)
    ]
    best = min(
        sum(v * v for v in map(pick.count, range(len(ids))))
        for pick in itertools.product(*(c for c in choices if c))
    )
    assert sum(load(result, m) ** 2 for m in ids) == best


# -- range: contiguity and co-partitioning -----------------------------------


def rank(s: MemberSpec) -> tuple[int, str, str]:
    return (0, s.instance_id, s.member_id) if s.instance_id is not None else (1, s.member_id, "")


@PROPERTY
@given(g=groups())
def test_range_gives_contiguous_runs_in_member_order_larger_first(g: Group) -> None:
    members, partitions = g
    result = RANGE.assign(members, partitions)
    for topic, count in partitions.items():
        subscribers = sorted((s for s in members.values() if topic in s.topics), key=rank)
        runs = [sorted(result[s.member_id].get(topic, ())) for s in subscribers]
        assert [p for run in runs for p in run] == list(range(count if subscribers else 0))
        sizes = [len(run) for run in runs]
        assert sizes == sorted(sizes, reverse=True)
        assert not sizes or sizes[0] - sizes[-1] <= 1


@PROPERTY
@given(g=groups(), count=st.integers(1, 9), data=st.data())
def test_range_co_partitions_topics_with_the_same_subscribers_and_count(
    g: Group, count: int, data: st.DataObject
) -> None:
    members, partitions = g
    subscribed = sorted({t for s in members.values() for t in s.topics})
    assume(subscribed)
    topic = data.draw(st.sampled_from(subscribed))
    twin = uuid.UUID(int=2**128 - 1)  # a second topic with topic's subscribers and count
    assume(twin not in subscribed)
    partitions = {**partitions, topic: count, twin: count}
    members = {
        m: replace(s, topics=s.topics | {twin}) if topic in s.topics else s
        for m, s in members.items()
    }
    result = RANGE.assign(members, partitions)
    for m in members:
        assert result[m].get(topic) == result[m].get(twin)

    alike: dict[tuple[frozenset[str], int], list[TopicId]] = {}
    for t, n in partitions.items():
        alike.setdefault((frozenset(m for m, s in members.items() if t in s.topics), n), []).append(
            t
        )
    for same in alike.values():
        for m in members:
            assert len({result[m].get(t) for t in same}) == 1


@PROPERTY
@given(g=groups(sound=True))
def test_range_is_the_same_whatever_was_held_before(g: Group) -> None:
    members, partitions = g
    fresh = {
        m: MemberSpec(s.member_id, s.instance_id, s.rack_id, s.topics, {})
        for m, s in members.items()
    }
    assert RANGE.assign(members, partitions) == RANGE.assign(fresh, partitions)
