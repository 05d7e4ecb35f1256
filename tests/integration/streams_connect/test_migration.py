"""Moving a live workload from Kafka to kop with MirrorMaker 2 (Kafka 4.3.1's
connect-mirror, unmodified, in dedicated mode), as docs/migration.md walks it.

The reference Kafka holds a topic of three partitions and a consumer group that has
committed part of it. MirrorMaker copies the topic into kop (same name: the identity
replication policy) while a producer goes on writing to Kafka, and translates the
group's committed offsets into kop's (its checkpoints). The group's consumer, moved to
kop, then resumes where it stopped on Kafka: no record after its Kafka position is
skipped, and what it reads again lies within MirrorMaker's documented window (at most
`offset.lag.max` records where the group stopped at the partition's end, further back
where it stopped earlier: MirrorMaker translates a position by the nearest offset sync
it kept, and keeps fewer the older they are). Every partition on kop holds Kafka's
records in Kafka's order."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conftest import KopProcess
from tests.integration.streams_connect.conftest import reference_kafka
from tests.integration.streams_connect.jvm import JavaApp, wait_until

pytestmark = [pytest.mark.apps, pytest.mark.timeout(600)]

MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
PARTITIONS, BEFORE, DURING = 3, 300, 300
LAG_MAX = 10  # offset.lag.max: MirrorMaker's offset syncs this many records apart at most
# The group's position on Kafka when it moves: mid-partition, at the end, untouched.
COMMITTED = {0: 420, 1: BEFORE + DURING, 2: 0}


@pytest.fixture(scope="module")
def kafka() -> Iterator[str]:
    with reference_kafka() as bootstrap:
        yield bootstrap


def _produce(bootstrap: str, topic: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for p in range(PARTITIONS):
        for i in range(first, first + count):
            producer.produce(topic, key=f"k{p}-{i}", value=f"v{p}-{i}", partition=p)
    assert producer.flush(60) == 0


def _records(bootstrap: str, topic: str) -> dict[int, list[tuple[bytes, bytes]]]:
    """Each partition from offset 0 to its end: (key, value) in order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})  # fmt: skip
    out: dict[int, list[tuple[bytes, bytes]]] = {}
    try:
        for p in range(PARTITIONS):
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            consumer.assign([TopicPartition(topic, p, 0)])
            got: list[tuple[bytes, bytes]] = []
            while len(got) < high:
                msg = consumer.poll(10)
                assert msg is not None and not msg.error(), (p, len(got), high, msg)
                got.append((msg.key(), msg.value()))
            out[p] = got
    finally:
        consumer.close()
    return out


def _ends(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ends"})
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None or len(meta.partitions) < PARTITIONS:
            return 0
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        )
    finally:
        consumer.close()


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        asked = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {tp.partition: tp.offset for tp in consumer.committed(asked, timeout=10)}
    finally:
        consumer.close()


def _commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """The group's position, as its consumers commit it (a commit of a member-less group)."""
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
        )
    finally:
        committer.close()


def _mirror_maker(classpath: str, kafka: str, kop: str, topic: str, group: str, work: Path
                  ) -> JavaApp:  # fmt: skip
    flow = "kafka->kop"
    settings = {
        "clusters": "kafka, kop",
        "kafka.bootstrap.servers": kafka,
        "kop.bootstrap.servers": kop,
        f"{flow}.enabled": "true",
        "kop->kafka.enabled": "false",
        f"{flow}.topics": topic,
        f"{flow}.groups": group,
        # the topic keeps its name on kop: the group's consumers subscribe to the same one
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        f"{flow}.sync.group.offsets.enabled": "true",
        f"{flow}.sync.group.offsets.interval.seconds": "1",
        f"{flow}.emit.checkpoints.interval.seconds": "1",
        f"{flow}.refresh.topics.interval.seconds": "2",
        f"{flow}.refresh.groups.interval.seconds": "2",
        f"{flow}.emit.heartbeats.enabled": "false",
        "offset.lag.max": str(LAG_MAX),
        # Pulsar keeps kop's data; the configs and ACLs stay as the platform team set them
        "sync.topic.configs.enabled": "false",
        "sync.topic.acls.enabled": "false",
        **{f"{k}.replication.factor": "1" for k in (
            "replication", "checkpoints.topic", "heartbeats.topic", "offset-syncs.topic",
            "offset.storage", "status.storage", "config.storage")},
    }  # fmt: skip
    settings["replication.factor"] = settings.pop("replication.replication.factor")
    properties = work / "mm2.properties"
    properties.write_text("".join(f"{k} = {v}\n" for k, v in settings.items()))
    fatal = r"^.*(Stopping due to error|Uncaught exception in herder work thread).*"
    return JavaApp("mirror-maker", classpath, MAIN, [str(properties)], work, fatal)


def test_a_group_moved_from_kafka_resumes_on_kop_where_it_stopped(
    apps_classpath: str, kafka: str, kop: KopProcess, tmp_path: Path
) -> None:
    topic, group = f"orders-{uuid.uuid4().hex[:8]}", f"billing-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    _produce(kafka, topic, 0, BEFORE)
    _commit(kafka, group, topic, {0: 100, 1: 200})  # consuming on Kafka meanwhile

    mm2 = _mirror_maker(apps_classpath, kafka, kop.bootstrap, topic, group, tmp_path)
    started = time.monotonic()
    mm2.start()
    try:
        copied = wait_until(
            "the first records on kop", lambda: _ends(kop.bootstrap, topic) == PARTITIONS * BEFORE,
            240, lambda: f"{_ends(kop.bootstrap, topic)} on kop", [mm2],
        )  # fmt: skip
        _produce(kafka, topic, BEFORE, DURING)  # the applications still write to Kafka
        total = PARTITIONS * (BEFORE + DURING)
        wait_until("the rest on kop", lambda: _ends(kop.bootstrap, topic) == total, 120,
                   lambda: f"{_ends(kop.bootstrap, topic)} of {total}", [mm2])  # fmt: skip

        _commit(kafka, group, topic, COMMITTED)  # the consumers stop on Kafka here

        seen: list[dict[int, int]] = []

        def translated() -> bool:
            """The final position translated (the partition stopped at its end lands
            within one sync), and the same in the last few looks: MirrorMaker commits a
            group's partitions together, once a second."""
            seen.append(_committed(kop.bootstrap, group, topic))
            last = seen[-5:]
            reached = seen[-1].get(1, -1) >= COMMITTED[1] - LAG_MAX
            return reached and len(last) == 5 and all(x == last[0] for x in last)

        progress = lambda: str(_committed(kop.bootstrap, group, topic))  # noqa: E731
        synced = wait_until("the group's offsets on kop", translated, 120, progress, [mm2])
    finally:
        mm2.stop()
    took = time.monotonic() - started
    on_kop = _committed(kop.bootstrap, group, topic)
    source = _records(kafka, topic)
    mirrored = _records(kop.bootstrap, topic)
    assert mirrored == source  # every record, in Kafka's order, per partition

    # The group's consumer, moved to kop: it resumes at the translated offsets.
    consumer = Consumer({"bootstrap.servers": kop.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([topic])
    resumed: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    want = {p: len(source[p]) - on_kop.get(p, 0) for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    while any(len(resumed[p]) < want[p] for p in resumed) and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and not msg.error():
            resumed[msg.partition()].append(msg.value())
    consumer.close()
    again = {}
    for p in range(PARTITIONS):
        after_kafka = [v for _, v in source[p][COMMITTED[p] :]]
        tail = resumed[p][len(resumed[p]) - len(after_kafka) :]
        assert tail == after_kafka, p  # nothing after the Kafka position is skipped
        again[p] = len(resumed[p]) - len(after_kafka)
        assert 0 <= again[p] <= COMMITTED[p], (p, again, on_kop)  # read again, never skipped
        assert resumed[p] == [v for _, v in source[p][COMMITTED[p] - again[p] :]], p
    assert again[1] <= LAG_MAX, again  # stopped at the end: within one offset sync
    print(
        f"\n[migration] {PARTITIONS * (BEFORE + DURING)} records mirrored; first "
        f"{PARTITIONS * BEFORE} on kop {copied:.1f} s after MirrorMaker started, the group's "
        f"offsets translated {synced:.1f} s after the rest arrived (Kafka {COMMITTED}, "
        f"kop {on_kop}, records read again {again}); {took:.1f} s in all",
        flush=True,
    )
