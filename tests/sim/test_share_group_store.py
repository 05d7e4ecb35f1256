"""KIP-932 share groups over the in-memory offsets topic, through the group service
(kop/groups/share/stored.py): a restarted kop, or the next coordinator, finds a share
group as its heartbeats' answers left it (members at their epochs, assignments, the
topics whose start offsets were set), so its members go on without joining again, and
an empty group is still there to list, describe and delete; a heartbeat that changes
nothing writes nothing; a write that fails leaves the group as it was."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import pytest

from kop.groups.consumer.group import TopicMeta
from kop.groups.share.coordinator import ShareHeartbeat
from kop.groups.share.service import ShareGroups
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.types import StorageError
from tests.sim.memory_log import MemoryLog
from tests.sim.test_consumer_group_store import _started

OFFSETS = "persistent://public/__kop/consumer-offsets"
T1 = uuid.UUID(int=1)


async def _resolve(names: set[str]) -> Mapping[str, TopicMeta]:
    return {"t1": TopicMeta(T1, "t1", 4)}


def _beat(member: str, epoch: int, topics: tuple[str, ...] | None = None) -> ShareHeartbeat:
    return ShareHeartbeat("g", member, epoch, topics=topics, client_id=f"c-{member}")


def _entries(log: MemoryLog) -> int:
    return sum(len(log.topic(f"{OFFSETS}-partition-{p}").entries()) for p in range(2))


async def test_a_restarted_kop_finds_its_share_groups_as_it_answered_them() -> None:
    log = MemoryLog()
    first = await _started(log)
    a = await first.share.heartbeat(_beat("a", 0, ("t1",)), _resolve)
    b = await first.share.heartbeat(_beat("b", 0, ("t1",)), _resolve)
    written = _entries(log)
    a = await first.share.heartbeat(_beat("a", a.member_epoch), _resolve)  # takes its half
    again_a = await first.share.heartbeat(_beat("a", a.member_epoch), _resolve)
    assert again_a.assignment is None and _entries(log) == written + 1  # a's new assignment
    before = first.share.get("g")
    assert before is not None
    await first.close()

    again = await _started(log)
    after = again.share.get("g")
    assert after is not None
    assert (after.epoch, after.assignment_epoch) == (before.epoch, before.assignment_epoch)
    assert {k: (m.epoch, m.assignment, m.client_id) for k, m in after.members.items()} == {
        k: (m.epoch, m.assignment, m.client_id) for k, m in before.members.items()
    }
    assert after.targets == before.targets
    # both go on at the epochs they were told: nothing to join again
    for member, answer in (("a", a), ("b", b)):
        on = await again.share.heartbeat(_beat(member, answer.member_epoch), _resolve)
        assert on.member_epoch == after.assignment_epoch
    await again.close()


async def test_an_empty_group_stays_listed_until_deleted_and_then_stays_deleted() -> None:
    log = MemoryLog()
    first = await _started(log)
    joined = await first.share.heartbeat(_beat("a", 0, ("t1",)), _resolve)
    await first.share.heartbeat(_beat("a", -1), _resolve)
    await first.close()

    again = await _started(log)
    g = again.share.get("g")
    assert g is not None and g.state == "Empty" and g.epoch > joined.member_epoch
    assert await again.share.delete("g") is ErrorCode.none
    await again.close()

    third = await _started(log)
    assert third.share.get("g") is None
    await third.close()


async def test_the_topics_whose_offsets_were_set_are_kept() -> None:
    log = MemoryLog()
    first = await _started(log)
    before = first.share.snapshot("g")
    first.share.hold("g")
    await first.share.offset_topics("g", before, added=["t1", "t2"])
    await first.share.offset_topics("g", first.share.snapshot("g"), removed=["t2"])
    await first.close()

    again = await _started(log)
    g = again.share.get("g")
    assert g is not None and g.offset_topics == {"t1"}
    await again.close()


async def test_ended_sessions_are_written() -> None:
    log = MemoryLog()
    first = await _started(log)
    now = [0]
    first.share._clock = lambda: now[0]  # type: ignore[method-assign]
    await first.share.heartbeat(_beat("a", 0, ("t1",)), _resolve)
    now[0] = 10 * 60_000  # past any session timeout
    await first.share.expire()
    await first.close()

    again = await _started(log)
    g = again.share.get("g")
    assert g is not None and not g.members
    await again.close()


class _Failing:
    async def store_share_group(self, group: str, records: object) -> None:
        raise StorageError("Pulsar is away")


async def test_a_heartbeat_whose_write_fails_leaves_the_group_as_it_was() -> None:
    groups = await _started(MemoryLog())
    share: ShareGroups = groups.share
    joined = await share.heartbeat(_beat("a", 0, ("t1",)), _resolve)
    share._writes._store = _Failing()  # type: ignore[assignment]
    with pytest.raises(KafkaError):
        await share.heartbeat(_beat("b", 0, ("t1",)), _resolve)
    g = share.get("g")
    assert g is not None and set(g.members) == {"a"} and g.epoch == joined.member_epoch
    with pytest.raises(KafkaError):  # a new group: not kept
        await share.heartbeat(ShareHeartbeat("h", "c", 0, topics=("t1",)), _resolve)
    assert share.get("h") is None
    await groups.close()
