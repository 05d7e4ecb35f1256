"""The offsets topic over the in-memory log: what a commit acknowledged, a restarted
kop finds again; what failed is never acknowledged; deletions are forgotten; a
record no one can read does not stop a load."""

from __future__ import annotations

import asyncio

import pytest

from kop.groups.offsets_store import OffsetsStore
from kop.groups.types import CommittedOffset, GroupMetadata, MemberMetadata, TopicPartition
from kop.storage import batch_layout
from kop.storage.types import OutgoingEntry, OutgoingMessage, StorageError, WriterFenced
from tests.sim.clock import SimLoop
from tests.sim.memory_log import MemoryLog

OFFSETS = "persistent://public/__kop/__consumer_offsets"
GROUP = "billing|eu"  # '|' is the key separator: names holding it must still work
ORDERS = TopicPartition("orders", 0)
ORDERS_1 = TopicPartition("orders", 1)
AUDIT = TopicPartition("audit|log", 7)
MEMBER = MemberMetadata(
    "m-1", "instance-1", "client", "/10.0.0.1", 45_000, 300_000, (("range", b"\x00sub"),), b"\x01"
)
META = GroupMetadata(GROUP, "consumer", 3, "range", "m-1", 1_700_000_000_000, (MEMBER,))


def _store(log: MemoryLog, partitions: int = 4) -> OffsetsStore:
    return OffsetsStore(log, OFFSETS, partitions)


def _taken(loop: SimLoop, log: MemoryLog, partitions: int = 4) -> OffsetsStore:
    """A store that took every partition, as a coordinator does before writing."""
    store = _store(log, partitions)
    for p in range(partitions):
        loop.run(store.load(p), within=10)
    return store


def _topic_of(store: OffsetsStore, group: str) -> str:
    return store.partition_topic(store.partition_for(group))


def _offsets(loop: SimLoop, log: MemoryLog, group: str) -> dict[TopicPartition, CommittedOffset]:
    """What the offsets topic holds for `group` now."""
    store = _store(log)
    loaded = loop.run(store.read(store.partition_for(group)), within=10)
    return loaded.offsets.get(group, {})


def test_a_restarted_kop_finds_committed_offsets_and_group_metadata(loop: SimLoop) -> None:
    log = MemoryLog()
    store = _taken(loop, log)
    offsets = {
        ORDERS: CommittedOffset(42, leader_epoch=5, metadata="batch 7", commit_ms=1000),
        AUDIT: CommittedOffset(9, metadata=None, commit_ms=1001, expire_ms=99_000),
    }
    loop.run(store.commit(GROUP, offsets), within=10)
    loop.run(store.store_group(META), within=10)
    loop.run(store.close(), within=10)
    assert not any(t.startswith(OFFSETS) for t in log.writers)  # its writers are closed

    again = _store(log)
    loaded = loop.run(again.load(again.partition_for(GROUP)), within=10)
    assert loaded.offsets == {GROUP: offsets}
    assert loaded.groups == {GROUP: META}
    assert again.malformed == 0


def test_the_latest_commit_of_a_partition_wins(loop: SimLoop) -> None:
    log = MemoryLog()
    store = _taken(loop, log)
    loop.run(store.commit(GROUP, {ORDERS: CommittedOffset(5), ORDERS_1: CommittedOffset(1)}), 10)
    loop.run(store.commit(GROUP, {ORDERS: CommittedOffset(9, leader_epoch=2)}), within=10)
    newer = GroupMetadata(GROUP, "consumer", 4, "range", "m-1", 1_700_000_001_000, ())
    loop.run(store.store_group(META), within=10)
    loop.run(store.store_group(newer), within=10)
    assert _offsets(loop, log, GROUP) == {
        ORDERS: CommittedOffset(9, leader_epoch=2),
        ORDERS_1: CommittedOffset(1),
    }
    loaded = loop.run(store.load(store.partition_for(GROUP)), within=10)
    assert loaded.groups[GROUP] == newer


def test_deleted_offsets_are_forgotten(loop: SimLoop) -> None:
    log = MemoryLog()
    store = _taken(loop, log)
    loop.run(store.commit(GROUP, {ORDERS: CommittedOffset(5), AUDIT: CommittedOffset(6)}), 10)
    loop.run(store.delete_offsets(GROUP, [ORDERS]), within=10)
    assert _offsets(loop, log, GROUP) == {AUDIT: CommittedOffset(6)}
    loop.run(store.commit(GROUP, {ORDERS: CommittedOffset(1)}), within=10)  # and may come back
    assert _offsets(loop, log, GROUP) == {AUDIT: CommittedOffset(6), ORDERS: CommittedOffset(1)}


def test_a_deleted_group_is_forgotten_and_other_groups_are_not(loop: SimLoop) -> None:
    log = MemoryLog()
    store = _taken(loop, log, partitions=1)  # both groups share the partition
    other = GroupMetadata("other", "consumer", 1, "range", None, 0, ())
    loop.run(store.store_group(META), within=10)
    loop.run(store.store_group(other), within=10)
    loop.run(store.commit(GROUP, {ORDERS: CommittedOffset(5), AUDIT: CommittedOffset(6)}), 10)
    loop.run(store.commit("other", {ORDERS: CommittedOffset(8)}), within=10)
    loop.run(store.delete_group(GROUP, [ORDERS, AUDIT]), within=10)
    loaded = loop.run(_store(log, partitions=1).load(0), within=10)
    assert loaded.groups == {"other": other}
    assert loaded.offsets == {"other": {ORDERS: CommittedOffset(8)}}


def test_a_partition_loads_exactly_the_groups_that_hash_to_it(loop: SimLoop) -> None:
    log = MemoryLog()
    store = _taken(loop, log)
    groups = [f"group-{i}" for i in range(40)]
    for i, group in enumerate(groups):
        loop.run(store.commit(group, {ORDERS: CommittedOffset(i)}), within=10)
    found: dict[str, int] = {}
    for p in range(4):
        loaded = loop.run(_store(log).load(p), within=10)
        assert all(store.partition_for(g) == p for g in loaded.offsets)
        found |= {g: offs[ORDERS].offset for g, offs in loaded.offsets.items()}
    assert found == {g: i for i, g in enumerate(groups)}
    assert len({store.partition_for(g) for g in groups}) == 4  # spread, not all in one
    # Every kop process, of any version, must agree on where a group lives (CRC-32,
    # not Python's per-process hash): pinned, as changing it would lose every group.
    assert [store.partition_for(g) for g in ("billing", "", "a|b", "é")] == [2, 0, 3, 2]


def test_a_commit_during_an_outage_fails_in_time_and_is_never_stored(loop: SimLoop) -> None:
    log = MemoryLog()
    store = _taken(loop, log)
    loop.run(store.commit(GROUP, {ORDERS: CommittedOffset(5)}), within=10)
    log.set_down(True)
    started = loop.time()
    with pytest.raises(StorageError):
        loop.run(store.commit(GROUP, {ORDERS: CommittedOffset(6)}), within=10)
    assert loop.time() - started <= 5.0 + 0.01  # before the client's request times out
    with pytest.raises(StorageError):  # a partition it has no writer for yet
        loop.run(store.commit("other", {ORDERS: CommittedOffset(1)}), within=10)
    log.set_down(False)
    loop.settle(60)  # long past Pulsar's send timeout: nothing lands late
    assert _offsets(loop, log, GROUP) == {ORDERS: CommittedOffset(5)}
    assert _offsets(loop, log, "other") == {}
    loop.run(store.commit(GROUP, {ORDERS: CommittedOffset(7)}), within=10)  # and it recovers
    assert _offsets(loop, log, GROUP) == {ORDERS: CommittedOffset(7)}


def test_a_commit_is_stored_all_or_nothing(loop: SimLoop) -> None:
    """A commit of several partitions is one entry: a failed write stores none of
    them (and is not acknowledged), the client's retry stores all."""
    log = MemoryLog()
    store = _taken(loop, log)
    offsets = {ORDERS: CommittedOffset(1), ORDERS_1: CommittedOffset(2), AUDIT: CommittedOffset(3)}
    log.topic(_topic_of(store, GROUP)).persist_next = 0
    with pytest.raises(StorageError):
        loop.run(store.commit(GROUP, offsets), within=10)
    assert _offsets(loop, log, GROUP) == {}
    loop.run(store.commit(GROUP, offsets), within=10)
    assert _offsets(loop, log, GROUP) == offsets


def test_a_commit_whose_receipt_is_lost_is_not_acknowledged(loop: SimLoop) -> None:
    log = MemoryLog()
    store = _taken(loop, log)
    log.topic(_topic_of(store, GROUP)).lose_next_receipt = True
    with pytest.raises(StorageError):
        loop.run(store.commit(GROUP, {ORDERS: CommittedOffset(4)}), within=10)
    loop.run(store.commit(GROUP, {ORDERS: CommittedOffset(4)}), within=10)  # the retry
    assert _offsets(loop, log, GROUP) == {ORDERS: CommittedOffset(4)}


def test_an_unreadable_record_is_skipped_and_counted(loop: SimLoop) -> None:
    log = MemoryLog()
    store = _taken(loop, log)
    topic = log.topic(_topic_of(store, GROUP))
    loop.run(store.commit(GROUP, {ORDERS: CommittedOffset(5)}), within=10)

    async def garbage() -> None:  # as if some other program wrote into the topic
        messages = [
            OutgoingMessage(b"\xff not json", {}, "o|billing%7Ceu|orders|0", None),
            OutgoingMessage(b'{"v": 1}', {}, "g|billing%7Ceu", None),
            OutgoingMessage(b"{}", {}, "not a key", None),
        ]
        topic.append([batch_layout.entry(messages[:2]), OutgoingEntry.of(messages[2])], "x", 0)

    loop.run(garbage(), within=10)
    loop.run(store.commit(GROUP, {AUDIT: CommittedOffset(6)}), within=10)
    loop.run(store.store_group(META), within=10)
    again = _store(log)
    loaded = loop.run(again.load(again.partition_for(GROUP)), within=10)
    assert loaded.offsets == {GROUP: {ORDERS: CommittedOffset(5), AUDIT: CommittedOffset(6)}}
    assert loaded.groups == {GROUP: META}
    assert again.malformed == 3


def test_a_new_holder_fences_the_old_one_and_loads_its_last_write_in_flight(
    loop: SimLoop,
) -> None:
    """Ownership of an offsets partition moves: the new coordinator takes it with a
    fencing writer and reads up to its own barrier, so a commit the old one had handed
    to the storage (stored late, its receipt lost) is in what it loads, and the old
    one can write nothing more."""
    log = MemoryLog()
    old = _taken(loop, log, partitions=1)
    loop.run(old.commit(GROUP, {ORDERS: CommittedOffset(5)}), within=10)
    log.topic(old.partition_topic(0)).hold_next = True

    async def hand_over() -> object:
        return asyncio.ensure_future(old.commit(GROUP, {ORDERS: CommittedOffset(6)}))

    in_flight = loop.run(hand_over(), within=1)
    loop.settle(0.1)
    new = _store(log.instance(), partitions=1)
    loaded = loop.run(new.load(0), within=10)
    assert loaded.offsets[GROUP] == {ORDERS: CommittedOffset(6)}
    with pytest.raises(StorageError):  # its receipt never came
        loop.run(in_flight, within=60)  # type: ignore[arg-type]
    with pytest.raises(WriterFenced):
        loop.run(old.commit(GROUP, {ORDERS: CommittedOffset(7)}), within=10)
    loop.run(new.commit(GROUP, {ORDERS: CommittedOffset(8)}), within=10)
    assert _offsets(loop, log, GROUP) == {ORDERS: CommittedOffset(8)}
