"""aiokafka's test_max_poll_interval_ms, adapted: a member that stops polling for
longer than max.poll.interval.ms leaves the group, the other member takes its
partitions within about that interval, and the stuck one rejoins when it polls
again.

The test counts the stuck member's 3 s from its construction, and it does not poll
before the second member has joined. So it needs the group's first join to be quick:
aiokafka's CI runs Kafka with the shipped config/server.properties, which sets
group.initial.rebalance.delay.ms=0. With the 3 s default (Kafka's and kop's) the
first member has been idle for 3 s when the second joins, leaves instead of
rejoining, and the test waits for it forever, against Kafka 4.3.1 as against kop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka.structs import TopicPartition

from tests.integration.admin import create_topic
from tests.integration.conftest import KopProcess


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self) -> None:
        self.ready = asyncio.Event()

    async def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        self.ready.clear()

    async def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        self.ready.set()


async def _send(bootstrap: str, topic: str, partition: int, values: range) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for v in values:
            await producer.send_and_wait(topic, str(v).encode(), partition=partition)
    finally:
        await producer.stop()


async def _scenario(bootstrap: str, topic: str) -> None:
    await _send(bootstrap, topic, 0, range(10))
    await _send(bootstrap, topic, 1, range(10, 20))
    group = f"poll-{uuid.uuid4().hex[:8]}"
    common = {"bootstrap_servers": bootstrap, "group_id": group,
              "auto_offset_reset": "earliest", "heartbeat_interval_ms": 100}  # fmt: skip
    stuck = AIOKafkaConsumer(client_id="c1", max_poll_interval_ms=3000, **common)
    other = AIOKafkaConsumer(client_id="c2", **common)
    listeners = (_Listener(), _Listener())
    # Subscribed before start (aiokafka's own test subscribes again after start,
    # which races its fetcher against Kafka as against kop).
    stuck.subscribe([topic], listener=listeners[0])
    other.subscribe([topic], listener=listeners[1])
    await stuck.start()
    await other.start()
    try:
        for _ in range(5):
            await asyncio.wait_for(listeners[0].ready.wait(), 60)
            await asyncio.wait_for(listeners[1].ready.wait(), 60)
            if listeners[0].ready.is_set():
                break
        assert stuck.assignment() and other.assignment()
        started = asyncio.get_running_loop().time()
        seen = [int((await asyncio.wait_for(other.getone(), 30)).value) for _ in range(20)]
        took = asyncio.get_running_loop().time() - started
        assert set(seen) == set(range(20))
        assert 2 <= took <= 4.5, f"the stuck member's partitions moved after {took:.1f}s"
        await _send(bootstrap, topic, 0, range(20, 30))
        await _send(bootstrap, topic, 1, range(30, 40))
        for _ in range(10):
            assert int((await asyncio.wait_for(stuck.getone(), 30)).value) >= 20
    finally:
        await stuck.stop()
        await other.stop()


def test_a_member_past_max_poll_interval_leaves_and_rejoins(
    pulsar: str, tmp_path: Path, topic: str
) -> None:
    gateway = KopProcess(tmp_path, KOP_GROUP_INITIAL_REBALANCE_DELAY_MS="0")
    gateway.start()
    try:
        create_topic(gateway.bootstrap, topic, 2)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a loop of its own
            pool.submit(asyncio.run, _scenario(gateway.bootstrap, topic)).result(timeout=180)
    finally:
        gateway.stop()
