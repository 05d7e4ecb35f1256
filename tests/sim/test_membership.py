"""Membership over the in-memory storage on simulated time: who is alive, as every
instance sees it, through joins, leaves, kills and an instance cut off from the
storage; and rendezvous ownership moving only what it must."""

from __future__ import annotations

import asyncio
import uuid

from hypothesis import given
from hypothesis import strategies as st

from kop.cluster.member import MalformedBeat, Member, State
from kop.cluster.membership import Membership
from kop.cluster.rendezvous import owner
from kop.storage.types import OutgoingEntry, OutgoingMessage
from tests.sim.clock import SimLoop
from tests.sim.memory_log import MemoryLog

TOPIC = "persistent://public/__kop/kop-members"
TTL = 4.0


def _member(node: int) -> Member:
    return Member(node, f"kop-{node}", 9092 + node, uuid.uuid4().hex)


def _join(loop: SimLoop, storage: MemoryLog, node: int) -> Membership:
    m = Membership(storage, TOPIC, _member(node), interval_s=1.0, ttl_s=TTL)
    loop.run(m.join(), within=5)
    return m


def _nodes(m: Membership) -> list[int]:
    return [x.node_id for x in m.live()]


def _wait(loop: SimLoop, seconds: float) -> None:
    loop.run(asyncio.sleep(seconds), within=seconds + 1)


def test_a_lone_instance_is_live_at_once(loop: SimLoop) -> None:
    a = _join(loop, MemoryLog(), 0)
    assert _nodes(a) == [0]


def test_a_joiner_sees_the_others_at_once_and_they_see_it_within_a_beat(loop: SimLoop) -> None:
    store = MemoryLog()
    a = _join(loop, store, 0)
    b = _join(loop, store.instance(), 1)
    assert _nodes(b) == [0, 1]
    _wait(loop, 1.1)
    assert _nodes(a) == [0, 1]
    assert [m.port for m in a.live()] == [9092, 9093]


def test_a_leaver_is_gone_at_once_a_killed_one_after_the_ttl(loop: SimLoop) -> None:
    store = MemoryLog()
    a, b, c = (_join(loop, store.instance(), n) for n in range(3))
    _wait(loop, 1.1)
    assert _nodes(a) == [0, 1, 2]
    loop.run(b.leave(), within=5)
    _wait(loop, 0.1)
    assert _nodes(a) == [0, 2] and _nodes(c) == [0, 2]
    loop.run(c.halt(), within=5)  # kill -9: no word
    _wait(loop, TTL - 1.5)
    assert _nodes(a) == [0, 2]  # not yet: its last beat is younger than the TTL
    _wait(loop, 1.6)
    assert _nodes(a) == [0]


def test_a_restarted_node_joins_within_the_ttl_of_its_killed_self(loop: SimLoop) -> None:
    store = MemoryLog()
    a = _join(loop, store.instance(), 0)
    b = _join(loop, store.instance(), 1)
    loop.run(b.halt(), within=5)
    b2 = _join(loop, store.instance(), 1)
    assert _nodes(b2) == [0, 1]
    assert b2.me.instance != b.me.instance
    _wait(loop, 1.1)
    assert [m.instance for m in a.live() if m.node_id == 1] == [b2.me.instance]
    _wait(loop, TTL * 2)
    assert _nodes(a) == [0, 1]  # the restarted node keeps it alive


def test_a_joiner_counts_silent_members_by_the_age_of_their_last_beat(loop: SimLoop) -> None:
    """Beats older than the TTL (publish times on the storage's clock) are not life."""
    store = MemoryLog()
    a = _join(loop, store.instance(), 0)
    loop.run(a.halt(), within=5)
    _wait(loop, TTL + 1)
    b = _join(loop, store.instance(), 1)
    assert _nodes(b) == [1]


def _views(loop: SimLoop, m: Membership) -> list[list[int]]:
    """Every view `m` goes through from now on, as its listeners see them."""
    seen: list[list[int]] = []

    async def watch() -> None:
        version = m.version
        while True:
            version = await m.changed(version)
            seen.append(_nodes(m))

    loop.create_task(watch())
    return seen


def test_an_instance_cut_off_is_dropped_and_lets_go_of_everything_when_it_is_back(
    loop: SimLoop,
) -> None:
    """The others drop it and take over its share. It cannot tell its own cut from a
    dead topic, so it keeps its view meanwhile (Pulsar's fences refuse its writes);
    back, it learns the others beat through its silence: it leaves its own view for
    a beat, so that everything it held is let go and loaded afresh."""
    store = MemoryLog()
    a = _join(loop, store.instance(), 0)
    cut_view = store.instance()
    b = _join(loop, cut_view, 1)
    _wait(loop, 1.1)
    views = _views(loop, b)
    cut_view.cut_off(True)
    _wait(loop, TTL + 1.1)
    assert _nodes(a) == [0]
    assert _nodes(b) == [0, 1] and views == []  # frozen, not emptied
    cut_view.cut_off(False)
    _wait(loop, 2.1)
    assert _nodes(a) == [0, 1] and _nodes(b) == [0, 1]
    assert views == [[0], [0, 1]]  # without itself once: all it held was let go


def test_a_dead_members_topic_freezes_every_view_and_costs_nothing_when_it_is_back(
    loop: SimLoop,
) -> None:
    """The broker that holds the members topic is killed: until Pulsar moves the topic
    nobody's beats get through. Nobody judges anybody meanwhile, and since nobody beat
    through the outage, nobody lets go of anything afterwards either."""
    store = MemoryLog()
    members = [_join(loop, store.instance(), n) for n in range(3)]
    _wait(loop, 1.1)
    views = [_views(loop, m) for m in members]
    store.set_down(True)
    _wait(loop, 3 * TTL)
    store.set_down(False)
    _wait(loop, TTL + 1)
    assert [_nodes(m) for m in members] == [[0, 1, 2]] * 3
    assert views == [[], [], []]  # not one change of any view


def test_a_member_killed_while_the_topic_was_dead_is_dropped_a_ttl_after_it_is_back(
    loop: SimLoop,
) -> None:
    store = MemoryLog()
    a, b = _join(loop, store.instance(), 0), _join(loop, store.instance(), 1)
    _wait(loop, 1.1)
    store.set_down(True)
    loop.run(b.halt(), within=5)
    _wait(loop, 2 * TTL)
    assert _nodes(a) == [0, 1]
    store.set_down(False)
    _wait(loop, 2.0)
    assert _nodes(a) == [0, 1]  # its deadline starts again once a hears itself
    _wait(loop, 2 * TTL)  # a beat that was under way when it died may take a TTL first
    assert _nodes(a) == [0]


def test_a_message_that_is_not_a_heartbeat_is_skipped_and_counted(loop: SimLoop) -> None:
    store = MemoryLog()
    junk = OutgoingEntry.of(OutgoingMessage(b"{not json", {}, "0", None))

    async def write() -> None:
        store.topic(TOPIC).append([junk], "someone", 0)

    loop.run(write(), within=1)
    a = _join(loop, store, 0)
    assert _nodes(a) == [0] and a.beats.malformed == 1


def test_changed_wakes_on_a_change_of_the_view(loop: SimLoop) -> None:
    store = MemoryLog()
    a = _join(loop, store.instance(), 0)
    seen = a.version

    async def watch() -> int:
        return await a.changed(seen)

    waiter = loop.create_task(watch())
    _join(loop, store.instance(), 1)
    assert loop.run(waiter, within=2) > seen


def test_beats_round_trip_and_refuse_what_is_not_one() -> None:
    m = Member(7, "h", 1, "i", State.LEAVING)
    assert Member.decode(m.encode()) == m
    for bad in (b"[]", b'{"node_id": "7"}', b'{"node_id": true, "host": "h", "port": 1}'):
        try:
            Member.decode(bad)
        except MalformedBeat:
            continue
        raise AssertionError(f"{bad!r} decoded")


@given(
    nodes=st.sets(st.integers(0, 50), min_size=2, max_size=8),
    keys=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=50, unique=True),
)
def test_rendezvous_moves_only_the_keys_of_the_node_that_left(
    nodes: set[int], keys: list[str]
) -> None:
    gone = min(nodes)
    before = {k: owner(k, nodes) for k in keys}
    after = {k: owner(k, nodes - {gone}) for k in keys}
    for k in keys:
        assert after[k] in nodes - {gone}
        if before[k] != gone:
            assert after[k] == before[k]
