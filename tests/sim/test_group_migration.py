"""Kafka's online migration between the group protocols, over the in-memory offsets
topic through the group service: a classic group with members becomes a KIP-848 group
when a member of the consumer protocol joins (its classic members stay, rejoining
through JoinGroup and SyncGroup as the group's assignor moves partitions), and becomes
a classic group again when that member leaves. No partition is ever held by two
members; a restarted kop finds the classic members as they were."""

from __future__ import annotations

import asyncio
import struct
import uuid

from kop.groups.consumer.coordinator import ConsumerSettings
from kop.groups.consumer.group import TopicMeta
from kop.groups.consumer.member import MemberState
from kop.groups.consumer.requests import Heartbeat, Resolved
from kop.groups.consumer_protocol import assigned_partitions, encode_assignment
from kop.groups.coordinator import JoinRequest, Limits
from kop.groups.offsets_store import OffsetsStore
from kop.groups.service import GroupService
from kop.groups.types import CommittedOffset, GroupState, TopicPartition
from kop.protocol.errors import ErrorCode, KafkaError
from tests.sim.memory_log import MemoryLog

OFFSETS = "persistent://public/__kop/consumer-offsets"
T1 = uuid.UUID(int=1)


async def _resolve(names: set[str], regexes: set[str]) -> Resolved:
    return Resolved({"t1": TopicMeta(T1, "t1", 4)}, {r: ("t1",) for r in regexes})


async def _started(log: MemoryLog, policy: str = "bidirectional") -> GroupService:
    groups = GroupService(
        OffsetsStore(log, OFFSETS, 2), Limits(initial_rebalance_delay_ms=0),
        consumer=ConsumerSettings(migration_policy=policy),
    )  # fmt: skip
    await groups.start()
    async with asyncio.timeout(5):
        while not groups.loaded:
            await asyncio.sleep(0.001)
    return groups


def _subscription(owned: dict[str, list[int]] | None = None, version: int = 1) -> bytes:
    """A ConsumerProtocolSubscription of topic t1 (v1: with what the member owns)."""
    out = struct.pack(">hi", version, 1) + struct.pack(">h", 2) + b"t1" + struct.pack(">i", -1)
    if version >= 1:
        items = sorted((owned or {}).items())
        out += struct.pack(">i", len(items))
        for topic, parts in items:
            out += struct.pack(">h", len(topic)) + topic.encode()
            out += struct.pack(f">i{len(parts)}i", len(parts), *parts)
    return out


def _classic_join(member: str, owned: dict[str, list[int]] | None = None) -> JoinRequest:
    protocols = (("range", _subscription(owned)),)
    return JoinRequest("g", member, None, "consumer", protocols, 10_000, 30_000, "c", "/h", False)


async def _classic_group_of_one(groups: GroupService) -> str:
    """A classic group whose one member `a` leads generation 1 holding all of t1."""
    joined = await groups.classic.join(_classic_join(""), _resolve)
    assert joined.error is ErrorCode.none and joined.generation == 1
    a = joined.member_id
    all_of_t1 = encode_assignment(1, {"t1": [0, 1, 2, 3]})
    synced = await groups.classic.sync("g", 1, a, None, {a: all_of_t1})
    assert synced.error is ErrorCode.none
    return a


def _consumer_join(member: str) -> Heartbeat:
    return Heartbeat("g", member, 0, None, None, 30_000, ("t1",), None, None, {})


def _owned_once(groups: GroupService) -> None:
    g = groups.consumer.get("g")
    assert g is not None
    held = [(t, p) for m in g.members.values() for a in (m.assigned, m.revoking)
            for t, ps in a.items() for p in ps]  # fmt: skip
    assert len(held) == len(set(held)), held


async def test_a_consumer_member_upgrades_a_live_classic_group_and_partitions_move_once() -> None:
    groups = await _started(MemoryLog())
    a = await _classic_group_of_one(groups)

    c = await groups.consumer.heartbeat(_consumer_join("c"), _resolve)
    assert "g" not in groups.coordinator.groups  # no classic group of that id any more
    g = groups.consumer.get("g")
    assert g is not None and set(g.members) == {a, "c"}
    assert g.members[a].classic is not None and g.members[a].assigned == {T1: frozenset(range(4))}
    assert c.member_epoch == 2 and not c.assignment  # a still holds everything
    _owned_once(groups)

    # a learns it must rejoin; an eager member rejoins owning nothing, keeps its half
    assert await groups.classic.heartbeat("g", 1, a, None) is ErrorCode.rebalance_in_progress
    rejoined = await groups.classic.join(_classic_join(a), _resolve)
    assert (rejoined.error, rejoined.generation, rejoined.leader) == (ErrorCode.none, 2, "")
    assert (rejoined.protocol_type, rejoined.protocol) == ("consumer", "range")
    synced = await groups.classic.sync("g", 2, a, None, {}, ("consumer", "range"))
    mine = assigned_partitions(synced.assignment)
    assert synced.error is ErrorCode.none and mine is not None and len(mine["t1"]) == 2
    assert await groups.classic.heartbeat("g", 2, a, None) is ErrorCode.none
    _owned_once(groups)

    # c is given the other half now that a gave it up
    c = await groups.consumer.heartbeat(Heartbeat("g", "c", 2, owned={}), _resolve)
    assert c.assignment is not None and c.assignment[T1] == frozenset(range(4)) - set(mine["t1"])
    _owned_once(groups)

    # a classic member commits at its generation, as in the classic protocol
    offset = {TopicPartition("t1", mine["t1"][0]): CommittedOffset(7)}
    assert await groups.commits.commit("g", 1, a, None, offset) is ErrorCode.illegal_generation
    assert await groups.commits.commit("g", 2, a, None, offset) is ErrorCode.none
    await groups.close()


async def test_a_restarted_kop_finds_the_classic_members_of_an_upgraded_group() -> None:
    log = MemoryLog()
    first = await _started(log)
    a = await _classic_group_of_one(first)
    await first.consumer.heartbeat(_consumer_join("c"), _resolve)
    before = first.consumer.get("g")
    await first.close()

    again = await _started(log)
    after = again.consumer.get("g")
    assert after is not None and before is not None
    assert after.members == before.members and "g" not in again.coordinator.groups
    assert await again.classic.heartbeat("g", 1, a, None) is ErrorCode.rebalance_in_progress
    await again.close()


async def test_the_last_consumer_member_leaving_makes_it_a_classic_group_again() -> None:
    log = MemoryLog()
    groups = await _started(log)
    a = await _classic_group_of_one(groups)
    await groups.consumer.heartbeat(_consumer_join("c"), _resolve)
    await groups.consumer.heartbeat(Heartbeat("g", "c", -1), _resolve)

    assert groups.consumer.get("g") is None
    classic = groups.coordinator.groups.get("g")
    assert classic is not None and classic.state is GroupState.PREPARING_REBALANCE
    assert set(classic.members) == {a}
    # a rejoins through the classic protocol, leads and assigns again
    assert await groups.classic.heartbeat("g", 2, a, None) is ErrorCode.rebalance_in_progress
    joined = await groups.classic.join(_classic_join(a), _resolve)
    assert joined.error is ErrorCode.none and joined.leader == a
    await groups.close()

    again = await _started(log)  # the downgrade is what a restarted kop finds
    assert again.consumer.get("g") is None and "g" in again.coordinator.groups
    await again.close()


async def test_a_group_of_another_protocol_type_is_not_upgraded_and_stays_as_it_was() -> None:
    groups = await _started(MemoryLog())
    join = JoinRequest("g", "", None, "connect", (("v1", b"x"),), 10_000, 30_000, "c", "/h", False)
    joined = await groups.classic.join(join, _resolve)
    assert joined.error is ErrorCode.none
    try:
        await groups.consumer.heartbeat(_consumer_join("c"), _resolve)
        raise AssertionError("upgraded")
    except KafkaError as exc:
        assert exc.code is ErrorCode.group_id_not_found
    g = groups.coordinator.groups.get("g")
    assert g is not None and set(g.members) == {joined.member_id}
    assert groups.consumer.get("g") is None
    await groups.close()


async def test_a_classic_member_that_does_not_rejoin_in_time_is_fenced() -> None:
    now = [1_000_000]
    groups = GroupService(
        OffsetsStore(MemoryLog(), OFFSETS, 2), Limits(initial_rebalance_delay_ms=0),
        clock=lambda: now[0],
    )  # fmt: skip
    await groups.start()
    async with asyncio.timeout(5):
        while not groups.loaded:
            await asyncio.sleep(0.001)
    a = await _classic_group_of_one(groups)
    await groups.consumer.heartbeat(_consumer_join("c"), _resolve)
    # it heartbeats within its 10 s session but never rejoins: fenced once its 30 s
    # rebalance timeout since it was first told to rejoin is over, not before
    for _ in range(3):
        assert await groups.classic.heartbeat("g", 1, a, None) is ErrorCode.rebalance_in_progress
        now[0] += 9_000
    g = groups.consumer.get("g")
    assert g is not None and a in g.members
    assert await groups.classic.heartbeat("g", 1, a, None) is ErrorCode.rebalance_in_progress
    now[0] += 3_001
    async with asyncio.timeout(5):
        while a in getattr(groups.consumer.get("g"), "members", {}):
            await asyncio.sleep(0.01)
    g = groups.consumer.get("g")
    assert g is not None and set(g.members) == {"c"}
    assert g.members["c"].state in (MemberState.STABLE, MemberState.UNRELEASED_PARTITIONS)
    await groups.close()


async def test_a_classic_join_a_consumer_group_cannot_read_is_refused_and_changes_nothing() -> None:
    """What a client puts in a JoinGroup is read with every length checked: another
    protocol type, bytes that are no subscription, a count past the bytes, more topics
    than a member may subscribe to."""
    groups = await _started(MemoryLog())
    await groups.consumer.heartbeat(_consumer_join("c"), _resolve)
    before = groups.consumer.get("g")
    too_many = struct.pack(">hi", 0, 10_001) + (struct.pack(">h", 1) + b"t") * 10_001
    bad = {
        "connect": ("connect", b"x"),
        "garbage": ("consumer", b"\x00"),
        "count past the bytes": ("consumer", struct.pack(">hi", 0, 1 << 30)),
        "too many topics": ("consumer", too_many + struct.pack(">i", -1)),
    }
    for why, (kind, metadata) in bad.items():
        join = JoinRequest("g", "", None, kind, (("range", metadata),), 10_000, 30_000, "c", "/h",
                           False)  # fmt: skip
        try:
            result = await groups.classic.join(join, _resolve)
            raise AssertionError(f"{why}: {result}")
        except KafkaError as exc:
            assert exc.code is ErrorCode.inconsistent_group_protocol, why
    assert groups.consumer.get("g") is before  # nothing installed
    await groups.close()


async def test_a_static_classic_member_restarting_takes_its_own_place() -> None:
    groups = await _started(MemoryLog())
    await groups.consumer.heartbeat(_consumer_join("c"), _resolve)
    protocols = (("range", _subscription()),)
    join = JoinRequest("g", "", "i-1", "consumer", protocols, 10_000, 30_000, "c", "/h", True)
    first = await groups.classic.join(join, _resolve)
    again = await groups.classic.join(join, _resolve)  # restarted: no member id
    g = groups.consumer.get("g")
    assert g is not None and first.member_id != again.member_id
    assert set(g.members) == {"c", again.member_id} and g.static == {"i-1": again.member_id}
    old = await groups.classic.heartbeat("g", first.generation, first.member_id, "i-1")
    assert old is ErrorCode.fenced_instance_id
    await groups.close()


async def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades() -> None:
    """Kafka's third trigger: the last member of the consumer protocol is static and a
    classic member restarts under its instance id. The group is a classic group at once,
    Stable, the newcomer holding what the member it replaced was given."""
    groups = await _started(MemoryLog())
    a = await _classic_group_of_one(groups)
    static_join = Heartbeat("g", "c", 0, "i-c", None, 30_000, ("t1",), None, None, {})
    await groups.consumer.heartbeat(static_join, _resolve)
    target_c = groups.consumer.get("g").targets["c"]  # type: ignore[union-attr]
    protocols = (("range", _subscription()),)
    join = JoinRequest("g", "", "i-c", "consumer", protocols, 10_000, 30_000, "c", "/h", True)
    joined = await groups.classic.join(join, _resolve)
    assert joined.error is ErrorCode.none
    assert groups.consumer.get("g") is None
    classic = groups.coordinator.groups.get("g")
    assert classic is not None and classic.state is GroupState.STABLE
    assert set(classic.members) == {a, joined.member_id}
    held = assigned_partitions(classic.members[joined.member_id].assignment)
    assert held is not None and {T1: frozenset(held.get("t1", []))} == {T1: target_c[T1]}
    await groups.close()


async def test_a_classic_member_that_joins_and_never_syncs_is_fenced() -> None:
    now = [1_000_000]
    groups = GroupService(
        OffsetsStore(MemoryLog(), OFFSETS, 2), Limits(initial_rebalance_delay_ms=0),
        clock=lambda: now[0],
    )  # fmt: skip
    await groups.start()
    async with asyncio.timeout(5):
        while not groups.loaded:
            await asyncio.sleep(0.001)
    await groups.consumer.heartbeat(_consumer_join("c"), _resolve)
    protocols = (("range", _subscription()),)
    join = JoinRequest("g", "", None, "consumer", protocols, 60_000, 30_000, "c", "/h", False)
    joined = await groups.classic.join(join, _resolve)
    g = groups.consumer.get("g")
    assert g is not None and joined.member_id in g.members
    now[0] += 30_001  # its rebalance timeout, well within its 60 s session
    await groups.consumer.heartbeat(Heartbeat("g", "c", g.members["c"].epoch, owned={}), _resolve)
    async with asyncio.timeout(5):
        while joined.member_id in getattr(groups.consumer.get("g"), "members", {}):
            await asyncio.sleep(0.01)
    await groups.close()


async def test_no_upgrade_where_the_policy_allows_none() -> None:
    """group.consumer.migration.policy=downgrade or disabled: a member of the consumer
    protocol is refused a classic group with members, with Kafka's message, and the
    classic group goes on as it was."""
    for policy in ("downgrade", "disabled"):
        groups = await _started(MemoryLog(), policy)
        a = await _classic_group_of_one(groups)
        try:
            await groups.consumer.heartbeat(_consumer_join("c"), _resolve)
            raise AssertionError("upgraded")
        except KafkaError as exc:
            assert exc.code is ErrorCode.group_id_not_found
            assert exc.message == (
                "Cannot upgrade classic group g to consumer group because online upgrade is "
                "disabled."
            )
        assert groups.consumer.get("g") is None
        assert await groups.classic.heartbeat("g", 1, a, None) is ErrorCode.none
        await groups.close()


async def test_no_downgrade_where_the_policy_allows_only_upgrades() -> None:
    """policy=upgrade: the last consumer-protocol member leaves and the group stays a
    consumer group of its classic member, who rejoins through the classic protocol."""
    log = MemoryLog()
    groups = await _started(log, "upgrade")
    a = await _classic_group_of_one(groups)
    await groups.consumer.heartbeat(_consumer_join("c"), _resolve)
    await groups.consumer.heartbeat(Heartbeat("g", "c", -1), _resolve)

    g = groups.consumer.get("g")
    assert g is not None and set(g.members) == {a} and "g" not in groups.coordinator.groups
    rejoined = await groups.classic.join(_classic_join(a), _resolve)
    assert rejoined.error is ErrorCode.none and rejoined.protocol_type == "consumer"
    await groups.close()
    again = await _started(log, "upgrade")  # what a restarted kop finds
    assert again.consumer.get("g") is not None and "g" not in again.coordinator.groups
    await again.close()


async def test_a_classic_member_cannot_join_a_consumer_group_when_migration_is_disabled() -> None:
    groups = await _started(MemoryLog(), "disabled")
    await groups.consumer.heartbeat(_consumer_join("c"), _resolve)
    joined = await groups.classic.join(_classic_join(""), _resolve)
    assert joined.error is ErrorCode.inconsistent_group_protocol
    g = groups.consumer.get("g")
    assert g is not None and set(g.members) == {"c"}
    await groups.close()
