"""Three kop instances on one Pulsar (issue 21): one bootstrap is enough, every
instance tells the same story of who leads what, a consumer group spans them, and
when one is killed with -9 the others serve its partitions within the failover
bound, with nothing acknowledged lost and offsets dense."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.admin import create_topic
from tests.integration.conftest import KopProcess, _drop_namespace

PARTITIONS = 6
FAILOVER_BOUND_S = 10.0


class Trio:
    def __init__(self, tmp_path: Path) -> None:
        suffix = uuid.uuid4().hex[:8]
        self.namespace = f"multi-{suffix}"
        self.system = f"public/__kop-multi-{suffix}"
        self.nodes = [
            KopProcess(
                tmp_path,
                KOP_NODE_ID=str(i),
                KOP_NAMESPACE=self.namespace,
                KOP_SYSTEM_NAMESPACE=self.system,
                KOP_OFFSETS_TOPIC_PARTITIONS="4",
                KOP_GROUP_INITIAL_REBALANCE_DELAY_MS="0",
            )
            for i in range(3)
        ]

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        self.until_live(3)

    def instances(self, node: KopProcess) -> list[int]:
        url = f"http://127.0.0.1:{node.admin_port}/v1/instances"
        with urllib.request.urlopen(url, timeout=5) as resp:
            return [i["node_id"] for i in json.loads(resp.read())["instances"]]

    def until_live(self, count: int, within: float = 30) -> None:
        deadline = time.monotonic() + within
        running = [n for n in self.nodes if n.proc is not None and n.proc.poll() is None]
        while time.monotonic() < deadline:
            if all(len(self.instances(n)) == count for n in running):
                return
            time.sleep(0.2)
        raise AssertionError(f"not {count} live instances: {[self.instances(n) for n in running]}")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        _drop_namespace(f"public/{self.namespace}")


@pytest.fixture
def trio(pulsar: str, tmp_path: Path) -> Iterator[Trio]:
    cluster = Trio(tmp_path)
    cluster.start()
    yield cluster
    cluster.stop()


def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=15)
    return {p: part.leader for p, part in md.topics[topic].partitions.items()}


def test_every_instance_names_the_same_leaders_and_lists_all_three(trio: Trio) -> None:
    first = trio.nodes[0].bootstrap
    create_topic(first, "spread", partitions=PARTITIONS)
    views = [_leaders(n.bootstrap, "spread") for n in trio.nodes]
    assert views[0] == views[1] == views[2]
    assert len(set(views[0].values())) > 1  # spread over more than one instance
    md = AdminClient({"bootstrap.servers": first}).list_topics(timeout=15)
    assert sorted(b.id for b in md.brokers.values()) == [0, 1, 2]
    assert {b.port for b in md.brokers.values()} == {n.port for n in trio.nodes}


def _produce(bootstrap: str, topic: str, n: int, start: int = 0) -> dict[tuple[int, int], bytes]:
    acked: dict[tuple[int, int], bytes] = {}
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})

    def done(err: Any, msg: Any) -> None:
        assert err is None, err
        acked[(msg.partition(), msg.offset())] = msg.value()

    for i in range(start, start + n):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, on_delivery=done)
        if i % 200 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return acked


def _consume_group(
    bootstrap: str, topic: str, group: str, want: int
) -> dict[tuple[int, int], bytes]:
    got: dict[tuple[int, int], bytes] = {}
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
         "enable.auto.commit": False}
    )  # fmt: skip
    consumer.subscribe([topic])
    deadline = time.monotonic() + 90
    try:
        while len(got) < want and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            got[(msg.partition(), msg.offset())] = msg.value()
        if got:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


def test_a_producer_and_a_group_through_any_instance(trio: Trio) -> None:
    topic = "through-any"
    create_topic(trio.nodes[0].bootstrap, topic, partitions=PARTITIONS)
    acked = _produce(trio.nodes[1].bootstrap, topic, 1200)
    assert len(acked) == 1200
    for p in range(PARTITIONS):
        offsets = sorted(o for (q, o) in acked if q == p)
        assert offsets == list(range(len(offsets)))  # dense on every partition
    got = _consume_group(trio.nodes[2].bootstrap, topic, "g-any", 1200)
    assert got == acked
    # The group's committed offsets are its coordinator's, whichever instance is asked.
    for node in trio.nodes:
        consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "g-any"})
        try:
            committed = consumer.committed(
                [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=15
            )
        finally:
            consumer.close()
        ends = {p: 1 + max(o for (q, o) in acked if q == p) for p in range(PARTITIONS)}
        assert {tp.partition: tp.offset for tp in committed} == ends


def test_kill9_moves_its_partitions_within_the_bound_losing_nothing(trio: Trio) -> None:
    topic = "failover"
    create_topic(trio.nodes[0].bootstrap, topic, partitions=PARTITIONS)
    before = _leaders(trio.nodes[0].bootstrap, topic)
    victim = trio.nodes[1]
    orphaned = [p for p, leader in before.items() if leader == 1]
    assert orphaned, before  # rendezvous gives node 1 some of six partitions
    acked: dict[tuple[int, int], bytes] = {}
    errors: list[str] = []
    served_again: dict[int, float] = {}
    stop = threading.Event()
    killed_at: list[float] = []

    def produce() -> None:
        producer = Producer(
            {"bootstrap.servers": trio.nodes[0].bootstrap, "enable.idempotence": True,
             "linger.ms": 5, "message.timeout.ms": 60000}
        )  # fmt: skip

        def done(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
                return
            acked[(msg.partition(), msg.offset())] = msg.value()
            if killed_at and msg.partition() in orphaned:
                served_again.setdefault(msg.partition(), time.monotonic() - killed_at[0])

        i = 0
        while not stop.is_set():
            producer.produce(topic, value=b"r%d" % i, partition=i % PARTITIONS, on_delivery=done)
            producer.poll(0.002)
            i += 1
        producer.flush(60)

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        time.sleep(3)
        victim.kill9()
        killed_at.append(time.monotonic())
        deadline = time.monotonic() + 30
        while len(served_again) < len(orphaned) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)
    finally:
        stop.set()
        writer.join(90)
    assert errors == []
    assert sorted(served_again) == sorted(orphaned), (served_again, orphaned)
    assert max(served_again.values()) < FAILOVER_BOUND_S, served_again
    after = _leaders(trio.nodes[0].bootstrap, topic)
    assert all(after[p] in (0, 2) for p in orphaned), after
    for p in range(PARTITIONS):  # dense: nothing acknowledged lost, nothing in between
        offsets = sorted(o for (q, o) in acked if q == p)
        assert offsets == list(range(len(offsets))), p
    got = _consume_group(trio.nodes[2].bootstrap, topic, "g-failover", len(acked))
    assert got == acked
