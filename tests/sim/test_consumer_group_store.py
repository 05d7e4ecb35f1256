"""KIP-848 consumer groups over the in-memory offsets topic, through the group service:
what a heartbeat's answer reported, a restarted kop finds again (members, epochs, target
assignment, what a regex matched); an empty classic group that became a consumer group
stays one; a deleted group stays deleted."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, cast

from kop.groups.consumer.group import TopicMeta
from kop.groups.consumer.requests import Heartbeat, Resolved
from kop.groups.consumer.service import IDLE_CHECK_MS
from kop.groups.coordinator import Limits
from kop.groups.offsets_store import OffsetsStore
from kop.groups.report import describe
from kop.groups.service import GroupService
from kop.groups.types import CommittedOffset, TopicPartition
from tests.sim.memory_log import MemoryLog

OFFSETS = "persistent://public/__kop/consumer-offsets"
T1 = uuid.UUID(int=1)


async def _resolve(names: set[str], regexes: set[str]) -> Resolved:
    return Resolved({"t1": TopicMeta(T1, "t1", 4)}, {r: ("t1",) for r in regexes})


async def _started(log: MemoryLog) -> GroupService:
    groups = GroupService(OffsetsStore(log, OFFSETS, 2), Limits(initial_rebalance_delay_ms=0))
    await groups.start()
    async with asyncio.timeout(5):
        while not groups.loaded:
            await asyncio.sleep(0.001)
    return groups


def _join(group: str, member: str, regex: str | None = None) -> Heartbeat:
    topics = None if regex else ("t1",)
    return Heartbeat(group, member, 0, None, None, 30_000, topics, regex, None, {})


async def test_a_restarted_kop_finds_its_consumer_groups_as_it_answered_them() -> None:
    log = MemoryLog()
    first = await _started(log)
    a = await first.consumer.heartbeat(_join("g", "a", regex="t.*"), _resolve)
    b = await first.consumer.heartbeat(_join("g", "b"), _resolve)
    before = first.consumer.get("g")
    assert before is not None and (a.member_epoch, b.member_epoch) == (1, 2)
    await first.close()

    again = await _started(log)
    after = again.consumer.get("g")
    assert after is not None
    assert (after.epoch, after.assignment_epoch) == (before.epoch, before.assignment_epoch)
    assert after.members == before.members
    assert after.targets == before.targets
    assert after.matches == {"t.*": ("t1",)}
    # what `kop groups describe` and the admin HTTP show of it
    shown = await describe(again, cast(Any, None), cast(Any, None), "g")
    assert shown is not None and (shown["type"], shown["members"]) == ("consumer", 2)
    assert {m["member_id"]: m["member_epoch"] for m in shown["member_details"]} == {
        m.member_id: m.epoch for m in after.members.values()
    }
    held = sorted(p for m in shown["member_details"] for p in m["assignment"].get("t1", []))
    assert held == sorted(p for m in after.members.values() for p in m.assigned.get(T1, ()))
    # a's next heartbeat at the epoch it was told is accepted: nothing to rejoin
    owned = dict(before.members["a"].assigned)
    answer = await again.consumer.heartbeat(Heartbeat("g", "a", 1, owned=owned), _resolve)
    assert answer.member_epoch in (1, 2)
    await again.close()


async def test_an_empty_classic_group_becomes_a_consumer_group_for_good() -> None:
    log = MemoryLog()
    first = await _started(log)
    offset = CommittedOffset(5, -1, "", 0, None)
    committed = await first.commits.commit("g", -1, "", None, {TopicPartition("t1", 0): offset})
    assert committed.value == 0
    assert "g" in first.coordinator.groups  # a standalone (classic, Empty) group
    await first.consumer.heartbeat(_join("g", "a"), _resolve)
    assert "g" not in first.coordinator.groups
    await first.close()

    again = await _started(log)
    assert "g" not in again.coordinator.groups and again.consumer.get("g") is not None
    kept = again.offsets.of("g")  # the offsets stay
    assert {tp: o.offset for tp, o in kept.items()} == {TopicPartition("t1", 0): 5}
    await again.close()


async def test_a_deleted_consumer_group_stays_deleted() -> None:
    log = MemoryLog()
    first = await _started(log)
    await first.consumer.heartbeat(_join("g", "a"), _resolve)
    assert (await first.delete("g")).name == "non_empty_group"
    await first.consumer.heartbeat(Heartbeat("g", "a", -1), _resolve)
    assert (await first.delete("g")).name == "none"
    await first.close()

    again = await _started(log)
    assert again.consumer.get("g") is None and "g" not in again.coordinator.groups
    await again.close()


async def test_an_empty_consumer_group_without_offsets_goes_after_a_check_interval() -> None:
    """As Kafka deletes an empty group whose offsets expired: left behind, it would hold
    its tenant's share of max_groups for ever. One with offsets stays (they expire by
    offsets.retention.minutes, as a standalone group's)."""
    now = [0]
    groups = GroupService(
        OffsetsStore(MemoryLog(), OFFSETS, 2), Limits(initial_rebalance_delay_ms=0),
        clock=lambda: now[0],
    )  # fmt: skip
    await groups.start()
    async with asyncio.timeout(5):
        while not groups.loaded:
            await asyncio.sleep(0.001)
    for group in ("idle", "kept"):
        await groups.consumer.heartbeat(_join(group, "a"), _resolve)
    offset = CommittedOffset(5, -1, "", 0, None)
    committed = await groups.commits.commit("kept", 1, "a", None, {TopicPartition("t1", 0): offset})
    assert committed.value == 0
    for group in ("idle", "kept"):
        await groups.consumer.heartbeat(Heartbeat(group, "a", -1), _resolve)
    now[0] = IDLE_CHECK_MS + 1
    async with asyncio.timeout(5):  # the timer task looks at least every second
        while groups.consumer.get("idle") is not None:
            await asyncio.sleep(0.01)
    assert groups.consumer.get("kept") is not None
    await groups.close()
