"""A share group's share-partition (kop/groups/share/partition.py) over the in-memory
log and its Shared subscription (tests/sim/memory_shared.py): entries delivered by the
dispatcher are counted into offsets by the partition log and split into records for
Kafka members; what they finish is acknowledged to the subscription, what they release
whole goes back to it, and a Kafka batch of many records (the `kafka` format) is held
until every record of it is finished, by whichever members."""

from __future__ import annotations

import asyncio

from kop.entries.formats import EntryFormat
from kop.groups.share.partition import SharePartition
from kop.groups.share.records import AckBatch, AckType, ShareLimits
from kop.log.partition_log import LogSettings
from kop.protocol.records import iter_records
from tests.sim.clock import SimLoop
from tests.sim.harness import TOPIC, Node, batch
from tests.sim.memory_log import MemoryLog
from tests.sim.memory_shared import MemoryShared

LIMITS = ShareLimits(lock_ms=1_000, delivery_limit=3, max_locks=100)


def _share(loop: SimLoop, log: MemoryLog, node: Node) -> tuple[SharePartition, MemoryShared]:
    sub = loop.run(log.shared(TOPIC, "kafka-share-g", earliest=True), within=10)
    plog = node.partition()

    async def made() -> SharePartition:  # its pump is a task of the running loop
        return SharePartition(plog, sub, LIMITS, lambda: int(loop.time() * 1000))

    return loop.run(made(), within=10), sub


def _acquired(loop: SimLoop, sp: SharePartition, member: str, want: int):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        for _ in range(100):  # the pump takes deliveries as the loop runs
            got, data = sp.acquire(member, want, 1 << 20)
            if got:
                return got, data
            await _tick()
        return [], b""

    return loop.run(go(), within=30)


async def _tick() -> None:
    await asyncio.sleep(0.01)


def test_a_kafka_batch_is_acknowledged_once_every_record_is_finished(loop: SimLoop) -> None:
    log = MemoryLog()
    node = Node(loop, log, LogSettings())
    node.start()
    node.produce(batch([f"v{i}".encode() for i in range(4)]), EntryFormat.KAFKA)
    sp, sub = _share(loop, log, node)
    got, data = _acquired(loop, sp, "a", 10)
    assert [(a.first, a.last, a.delivery_count) for a in got] == [(0, 3, 1)]
    assert [r.offset for r in iter_records(data)] == [0, 1, 2, 3]
    types = (AckType.ACCEPT, AckType.RELEASE, AckType.ACCEPT, AckType.REJECT)
    loop.run(sp.acknowledge("a", [AckBatch(0, 3, types)]), within=10)
    assert sub.sub.backlog(), "acknowledged with a record still open"
    again, _ = _acquired(loop, sp, "b", 10)  # the released record, to another member
    assert [(a.first, a.last, a.delivery_count) for a in again] == [(1, 1, 2)]
    loop.run(sp.acknowledge("b", [AckBatch(1, 1, (AckType.ACCEPT,))]), within=10)
    assert sub.sub.backlog() == []  # every record finished: the entry is acknowledged
    loop.run(sp.close(), within=10)


def test_records_released_whole_go_back_to_the_subscription_counted(loop: SimLoop) -> None:
    log = MemoryLog()
    node = Node(loop, log, LogSettings())
    node.start()
    for i in range(3):
        node.produce(batch([f"r{i}".encode()]), EntryFormat.PULSAR)
    sp, sub = _share(loop, log, node)
    got, _ = _acquired(loop, sp, "a", 1)
    assert [(a.first, a.delivery_count) for a in got] == [(0, 1)]
    loop.run(sp.acknowledge("a", [AckBatch(0, 0, (AckType.RELEASE,))]), within=10)
    assert sub.sub.redeliveries[next(iter(sub.sub.redeliveries))] == 1
    seen = []
    for _ in range(3):
        more, _ = _acquired(loop, sp, "b", 1)
        seen += [(a.first, a.delivery_count) for a in more]
        for a in more:
            loop.run(sp.acknowledge("b", [AckBatch(a.first, a.last, (1,))]), within=10)
    assert sorted(seen) == [(0, 2), (1, 1), (2, 1)]  # offset 0 delivered a second time
    assert sub.sub.backlog() == []
    loop.run(sp.close(), within=10)


def test_an_expired_lock_and_a_closed_consumer_give_records_back(loop: SimLoop) -> None:
    log = MemoryLog()
    node = Node(loop, log, LogSettings())
    node.start()
    node.produce(batch([b"x"]), EntryFormat.PULSAR)
    sp, sub = _share(loop, log, node)
    _acquired(loop, sp, "a", 1)
    loop.run(_after(1.5), within=10)
    loop.run(sp.expire(), within=10)  # the lock lapsed: released, back to Pulsar
    got, _ = _acquired(loop, sp, "b", 1)
    assert [a.delivery_count for a in got] == [2]
    loop.run(sp.close(), within=10)  # kop's consumer leaves holding it: Pulsar takes it back
    assert not sub.sub.out and sub.sub.backlog()


async def _after(seconds: float) -> None:
    await asyncio.sleep(seconds)
