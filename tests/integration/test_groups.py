"""Consumer groups with unmodified clients on a real Pulsar: three client
libraries share one group, and committed offsets survive kop being killed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer as CfConsumer
from confluent_kafka import Producer as CfProducer
from confluent_kafka import TopicPartition as CfTP
from kafka import KafkaConsumer

from tests.integration.admin import create_topic
from tests.integration.conftest import KopProcess

PARTITIONS = 6


class Member(threading.Thread):
    """One group member polling in its own thread: what it was assigned and what
    it received, as (partition, offset, value)."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.assigned: frozenset[int] = frozenset()
        self.received: list[tuple[int, int, bytes]] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.consume()
        except BaseException as exc:  # reported by the test thread
            self.error = exc

    def consume(self) -> None:
        raise NotImplementedError


def _group_config(bootstrap: str, group: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}


class CfMember(Member):
    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__("confluent-kafka")
        self.c = CfConsumer(_group_config(bootstrap, group))
        self.topic = topic

    def consume(self) -> None:
        self.c.subscribe([self.topic])
        while not self.stop.is_set():
            m = self.c.poll(0.2)
            self.assigned = frozenset(tp.partition for tp in self.c.assignment())
            if m is not None and m.error() is None:
                self.received.append((m.partition(), m.offset(), m.value()))
        self.c.close()


class KpMember(Member):
    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__("kafka-python")
        self.c = KafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest"
        )

    def consume(self) -> None:
        while not self.stop.is_set():
            batches = self.c.poll(timeout_ms=200)
            self.assigned = frozenset(tp.partition for tp in self.c.assignment())
            for tp, records in batches.items():
                self.received += [(tp.partition, r.offset, r.value) for r in records]
        self.c.close()


class AioMember(Member):
    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__("aiokafka")
        self.args = (bootstrap, group, topic)

    def consume(self) -> None:
        asyncio.run(self._consume())

    async def _consume(self) -> None:
        bootstrap, group, topic = self.args
        c = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest"
        )
        await c.start()
        try:
            while not self.stop.is_set():
                batches = await c.getmany(timeout_ms=200)
                self.assigned = frozenset(tp.partition for tp in c.assignment())
                for tp, records in batches.items():
                    self.received += [(tp.partition, r.offset, r.value) for r in records]
        finally:
            await c.stop()


def _until(condition: Callable[[], bool], within: float, what: str, members: list[Member]) -> None:
    deadline = time.monotonic() + within
    while not condition():
        for m in members:
            assert m.error is None, f"{m.name} failed: {m.error!r}"
        assert time.monotonic() < deadline, f"{what} not reached in {within:.0f}s: " + ", ".join(
            f"{m.name}={sorted(m.assigned)}" for m in members
        )
        time.sleep(0.1)


def _partitioned_once(members: list[Member]) -> bool:
    """Every partition assigned to exactly one member, and every member has some."""
    sets = [m.assigned for m in members]
    return all(sets) and sum(len(s) for s in sets) == PARTITIONS == len(frozenset().union(*sets))


def test_three_clients_share_a_group_and_rebalance_when_one_leaves(
    kop: KopProcess, topic: str
) -> None:
    create_topic(kop.bootstrap, topic, PARTITIONS)
    group = f"g-{topic}"
    members: list[Member] = [
        CfMember(kop.bootstrap, group, topic),
        KpMember(kop.bootstrap, group, topic),
        AioMember(kop.bootstrap, group, topic),
    ]
    for m in members:
        m.start()
    try:
        _until(lambda: _partitioned_once(members), 90, "one assignment of all partitions", members)
        p = CfProducer({"bootstrap.servers": kop.bootstrap})
        for i in range(PARTITIONS * 10):
            p.produce(topic, f"r{i}".encode(), partition=i % PARTITIONS)
        assert p.flush(30) == 0
        _until(
            lambda: sum(len(m.received) for m in members) >= PARTITIONS * 10,
            60,
            "all records delivered",
            members,
        )
        delivered = sorted(v for m in members for _, _, v in m.received)
        assert delivered == sorted(f"r{i}".encode() for i in range(PARTITIONS * 10))
        for m in members:  # each record went to the member that owns its partition
            assert {part for part, _, _ in m.received} <= m.assigned, m.name

        leaving = members.pop(0)  # closes cleanly: LeaveGroup, then the others rebalance
        leaving.stop.set()
        leaving.join(30)
        assert leaving.error is None
        _until(lambda: _partitioned_once(members), 90, "a rebalance without the leaver", members)
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            m.join(30)


def test_committed_offsets_survive_kill9_and_consumers_resume_there(
    fresh_kop: KopProcess, topic: str
) -> None:
    create_topic(fresh_kop.bootstrap, topic)
    p = CfProducer({"bootstrap.servers": fresh_kop.bootstrap})
    for i in range(10):
        p.produce(topic, f"r{i}".encode(), partition=0)
    assert p.flush(30) == 0
    config = {**_group_config(fresh_kop.bootstrap, f"g-{topic}"), "enable.auto.commit": False}

    c = CfConsumer(config)
    c.subscribe([topic])
    seen = []
    deadline = time.monotonic() + 60
    while len(seen) < 4 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            seen.append(m.offset())
    assert seen[:4] == [0, 1, 2, 3]
    c.commit(offsets=[CfTP(topic, 0, 4)], asynchronous=False)
    c.close()

    fresh_kop.kill9()
    fresh_kop.start()
    c = CfConsumer(config)
    try:
        committed = c.committed([CfTP(topic, 0)], timeout=30)
        assert committed[0].offset == 4
        c.subscribe([topic])
        first = None
        deadline = time.monotonic() + 60
        while first is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                first = (m.offset(), m.value())
        assert first == (4, b"r4")
    finally:
        c.close()
