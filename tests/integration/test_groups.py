"""Consumer groups with unmodified clients on a real Pulsar: three client
libraries share one group, and committed offsets survive kop being killed."""

from __future__ import annotations

import asyncio
import datetime
import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer as CfConsumer
from confluent_kafka import KafkaError
from confluent_kafka import Producer as CfProducer
from confluent_kafka import TopicPartition as CfTP
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kio.schema.errors import ErrorCode
from kio.schema.join_group.v5.request import JoinGroupRequestProtocol
from kio.schema.offset_commit.v7.request import (
    GroupId,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    TopicName,
)
from kio.schema.sync_group.v3.request import SyncGroupRequestAssignment

from conformance.clients.raw import RawClient
from tests.integration.admin import create_topic
from tests.integration.conftest import PULSAR_HTTP, KopProcess

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


def _partitioned_once(members: list[Member], partitions: int = PARTITIONS) -> bool:
    """Every partition assigned to exactly one member, and every member has some."""
    sets = [m.assigned for m in members]
    return all(sets) and sum(len(s) for s in sets) == partitions == len(frozenset().union(*sets))


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


def _join_fields(member_id: str, protocol_type: str = "consumer") -> dict[str, Any]:
    return {
        "group_id": GroupId("rejections"),
        "session_timeout": datetime.timedelta(seconds=10),
        "rebalance_timeout": datetime.timedelta(seconds=10),
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": protocol_type,
        "protocols": (JoinGroupRequestProtocol(name="range", metadata=b""),),
    }


def _commit_fields(topic: str, generation: int, member_id: str) -> dict[str, Any]:
    part = OffsetCommitRequestPartition(
        partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata=""
    )
    return {
        "group_id": GroupId("rejections"),
        "generation_id_or_member_epoch": generation,
        "member_id": member_id,
        "group_instance_id": None,
        "topics": (OffsetCommitRequestTopic(name=TopicName(topic), partitions=(part,)),),
    }


def test_rejections_carry_kafka_error_codes(kop: KopProcess, topic: str) -> None:
    """On the wire, as a client meets them: a first join is told its member id
    (KIP-394); a join with another protocol type, a heartbeat from an unknown
    member and a commit from a stale generation are refused with Kafka's codes."""
    create_topic(kop.bootstrap, topic)
    client, other = RawClient(kop.port), RawClient(kop.port)
    try:
        deadline = time.monotonic() + 60  # as clients do: ask until the coordinator loaded
        while client.request(10, 3, key="rejections", key_type=0).error_code != ErrorCode.none:
            assert time.monotonic() < deadline, "the group coordinator did not load in 60 s"
            time.sleep(0.2)
        first = client.request(11, 5, **_join_fields(""))
        assert first.error_code == ErrorCode.member_id_required and first.member_id
        joined = client.request(11, 5, **_join_fields(first.member_id))
        assert joined.error_code == ErrorCode.none and joined.leader == first.member_id
        generation = joined.generation_id
        synced = client.request(
            14, 3, group_id=GroupId("rejections"), generation_id=generation,
            member_id=first.member_id, group_instance_id=None,
            assignments=(SyncGroupRequestAssignment(member_id=first.member_id, assignment=b"a"),),
        )  # fmt: skip
        assert synced.error_code == ErrorCode.none and synced.assignment == b"a"
        wrong_type = other.request(11, 5, **_join_fields("", protocol_type="connect"))
        assert wrong_type.error_code == ErrorCode.inconsistent_group_protocol
        beat = other.request(
            12, 3, group_id=GroupId("rejections"), generation_id=generation,
            member_id="nobody", group_instance_id=None,
        )  # fmt: skip
        assert beat.error_code == ErrorCode.unknown_member_id
        stale = client.request(8, 7, **_commit_fields(topic, generation - 1, first.member_id))
        assert stale.topics[0].partitions[0].error_code == ErrorCode.illegal_generation
        current = client.request(8, 7, **_commit_fields(topic, generation, first.member_id))
        assert current.topics[0].partitions[0].error_code == ErrorCode.none
    finally:
        client.close()
        other.close()


class StaticMember(Member):
    """A confluent-kafka member with a group.instance.id, noting every revocation."""

    def __init__(self, bootstrap: str, group: str, topic: str, instance: str) -> None:
        super().__init__(f"static-{instance}")
        config = {**_group_config(bootstrap, group), "group.instance.id": instance,
                  "session.timeout.ms": 30000}  # fmt: skip
        self.c = CfConsumer(config)
        self.topic = topic
        self.revocations: list[frozenset[int]] = []

    def consume(self) -> None:
        def revoked(_c: Any, parts: list[CfTP]) -> None:
            self.revocations.append(frozenset(tp.partition for tp in parts))

        self.c.subscribe([self.topic], on_revoke=revoked)
        while not self.stop.is_set():
            self.c.poll(0.2)
            self.assigned = frozenset(tp.partition for tp in self.c.assignment())
        self.c.close()  # a static member leaves no LeaveGroup behind (KIP-345)


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(
    kop: KopProcess, topic: str
) -> None:
    create_topic(kop.bootstrap, topic, 4)
    group = f"g-{topic}"
    a = StaticMember(kop.bootstrap, group, topic, "a")
    b = StaticMember(kop.bootstrap, group, topic, "b")
    members: list[Member] = [a, b]
    for m in members:
        m.start()
    try:
        _until(lambda: _partitioned_once(members, 4), 90, "a split between a and b", members)
        before_a, before_b = a.assigned, b.assigned
        revocations_of_b = len(b.revocations)
        a.stop.set()
        a.join(30)
        assert a.error is None
        again = StaticMember(kop.bootstrap, group, topic, "a")
        members = [again, b]
        again.start()
        _until(lambda: bool(again.assigned), 60, "the restarted member's assignment", members)
        assert again.assigned == before_a
        assert b.assigned == before_b and len(b.revocations) == revocations_of_b, (
            "the other member was rebalanced"
        )
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            m.join(30)


def test_operators_see_a_groups_committed_offsets_and_lag(kop: KopProcess, topic: str) -> None:
    """After a commit at 4 of 10 records: /v1/groups, `kop groups describe` (JSON and
    table) and the kop_group_lag metric all say the group is 6 records behind."""
    create_topic(kop.bootstrap, topic)
    p = CfProducer({"bootstrap.servers": kop.bootstrap})
    for i in range(10):
        p.produce(topic, f"r{i}".encode(), partition=0)
    assert p.flush(30) == 0
    group = f"g-{topic}"
    c = CfConsumer({**_group_config(kop.bootstrap, group), "enable.auto.commit": False})
    c.assign([CfTP(topic, 0, 0)])
    c.commit(offsets=[CfTP(topic, 0, 4)], asynchronous=False)
    c.close()

    admin = f"http://127.0.0.1:{kop.admin_port}"
    listed = json.load(urllib.request.urlopen(f"{admin}/v1/groups", timeout=10))["groups"]
    assert {"group": group, "state": "Empty"}.items() <= next(
        g for g in listed if g["group"] == group
    ).items()
    described = json.load(urllib.request.urlopen(f"{admin}/v1/groups/{group}", timeout=10))
    expected = {"topic": topic, "partition": 0, "committed_offset": 4, "log_end_offset": 10,
                "lag": 6}  # fmt: skip
    assert [{k: o[k] for k in expected} for o in described["offsets"]] == [expected]

    cli = [sys.executable, "-m", "kop.cli.main", "groups", "describe", group, "--admin-url", admin]
    as_json = subprocess.run([*cli, "--json"], capture_output=True, text=True, timeout=60)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["offsets"] == described["offsets"]
    as_table = subprocess.run(cli, capture_output=True, text=True, timeout=60)
    assert as_table.returncode == 0, as_table.stderr
    row = next(line.split() for line in as_table.stdout.splitlines() if line.startswith(topic))
    assert row == [topic, "0", "4", "10", "6"]

    metrics = urllib.request.urlopen(f"{admin}/metrics", timeout=10).read().decode()
    labels = f'group="{group}",namespace="default",partition="0",tenant="public",topic="{topic}"'
    lag_line = f"kop_group_lag{{{labels}}} 6.0"
    assert lag_line in metrics.splitlines()


_KILLABLE = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
c.subscribe([sys.argv[3]])
last = None
while True:
    c.poll(0.2)
    now = sorted(tp.partition for tp in c.assignment())
    if now != last:
        print("ASSIGNED", ",".join(map(str, now)), flush=True)
        last = now
"""


class ProcessMember(Member):
    """A confluent-kafka member in a process of its own, so it can be killed: it
    never leaves the group, its session has to time out."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__("killed-member")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _KILLABLE, bootstrap, group, topic],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def consume(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("ASSIGNED"):
                parts = line.split()[1:]
                self.assigned = (
                    frozenset(int(p) for p in parts[0].split(",")) if parts else frozenset()
                )

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self.assigned = frozenset()


def test_a_killed_member_is_dropped_when_its_session_times_out(kop: KopProcess, topic: str) -> None:
    create_topic(kop.bootstrap, topic, PARTITIONS)
    group = f"g-{topic}"
    victim = ProcessMember(kop.bootstrap, group, topic)
    members: list[Member] = [
        victim, KpMember(kop.bootstrap, group, topic), AioMember(kop.bootstrap, group, topic)
    ]  # fmt: skip
    for m in members:
        m.start()
    try:
        _until(lambda: _partitioned_once(members), 90, "one assignment of all partitions", members)
        killed_at = time.monotonic()
        victim.kill()
        survivors = members[1:]
        _until(lambda: _partitioned_once(survivors), 60, "a rebalance without the killed", members)
        # it took the session to time out (6 s), not a clean leave
        assert time.monotonic() - killed_at >= 5
    finally:
        victim.proc.kill()
        for m in members:
            m.stop.set()
        for m in members[1:]:
            m.join(30)


def _pulsar_subscriptions(topic: str) -> dict[str, int]:
    """Subscriptions on partition 0 of `topic` with their backlog, as Pulsar's stats say."""
    url = f"{PULSAR_HTTP}/admin/v2/persistent/public/default/{topic}-partition-0/stats"
    stats = json.load(urllib.request.urlopen(url, timeout=10))
    return {name: s["msgBacklog"] for name, s in stats["subscriptions"].items()}


def test_a_groups_commits_show_up_as_a_pulsar_subscription_with_its_lag(
    kop: KopProcess, topic: str
) -> None:
    """On a topic with kop.pulsar.batching=false every record is a Pulsar entry of its
    own, so the mirrored subscription's backlog (Pulsar counts entries) is the Kafka
    lag, also for a producer that batches. DeleteGroups removes the subscription."""
    create_topic(kop.bootstrap, topic, configs={"kop.pulsar.batching": "false"})
    p = CfProducer({"bootstrap.servers": kop.bootstrap, "linger.ms": 50})
    for i in range(100):
        p.produce(topic, f"r{i}".encode(), partition=0)
    assert p.flush(30) == 0
    group = f"g-{topic}"
    c = CfConsumer({**_group_config(kop.bootstrap, group), "enable.auto.commit": False})
    c.commit(offsets=[CfTP(topic, 0, 37)], asynchronous=False)
    _, high = c.get_watermark_offsets(CfTP(topic, 0), timeout=10)
    c.close()
    lag = high - 37
    assert lag == 63
    deadline = time.monotonic() + 60
    mirrored = f"kafka-group-{group}"
    while _pulsar_subscriptions(topic).get(mirrored) != lag:
        assert time.monotonic() < deadline, (
            f"no subscription with backlog {lag}: {_pulsar_subscriptions(topic)}"
        )
        time.sleep(0.5)

    admin = AdminClient({"bootstrap.servers": kop.bootstrap})
    admin.delete_consumer_groups([group])[group].result(30)
    deadline = time.monotonic() + 60
    while mirrored in _pulsar_subscriptions(topic):
        assert time.monotonic() < deadline, "DeleteGroups left the subscription behind"
        time.sleep(0.5)


def test_the_member_past_group_max_size_is_refused_and_the_group_goes_on(
    limited_kop: KopProcess, topic: str
) -> None:
    """group_max_size=2: two confluent-kafka consumers share the topic; a third is
    told GROUP_MAX_SIZE_REACHED (as Kafka tells it) and gets nothing, while the two
    keep every partition between them."""
    create_topic(limited_kop.bootstrap, topic, 4)  # the most this gateway allows
    group = f"max-size-{topic}"
    members: list[Member] = [CfMember(limited_kop.bootstrap, group, topic) for _ in range(2)]
    for m in members:
        m.start()
    third = CfConsumer(_group_config(limited_kop.bootstrap, group))
    try:
        _until(lambda: _partitioned_once(members, 4), 90, "two members sharing", members)
        third.subscribe([topic])
        errors: list[int] = []
        deadline = time.monotonic() + 60
        while KafkaError.GROUP_MAX_SIZE_REACHED not in errors:
            assert time.monotonic() < deadline, f"no GROUP_MAX_SIZE_REACHED in 60 s: {errors}"
            m = third.poll(0.2)
            if m is not None and m.error() is not None:
                errors.append(m.error().code())
        assert not third.assignment()
        assert _partitioned_once(members, 4), [sorted(m.assigned) for m in members]
    finally:
        third.close()
        for m in members:
            m.stop.set()
        for m in members:
            m.join(30)


def _assigned_within(poll: Callable[[], set[str]], suffix: str, within: float) -> bool:
    """Polls until a partition of a topic ending in `suffix` is assigned (False: not in time)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if any(t.endswith(suffix) for t in poll()):
            return True
    return False


def test_a_pattern_subscriber_takes_topics_made_after_it_subscribed(
    kop: KopProcess, topic: str
) -> None:
    """librdkafka's and aiokafka's pattern subscriptions (a one-second metadata refresh):
    a topic created after the member subscribed, and one its own producer auto-creates,
    are assigned to it within a few refreshes, as on Kafka (issue 36's classic-protocol
    behaviours)."""
    admin = AdminClient({"bootstrap.servers": kop.bootstrap})
    admin.create_topics([NewTopic(f"{topic}-a", 2)])[f"{topic}-a"].result(30)
    cf = CfConsumer({
        "bootstrap.servers": kop.bootstrap, "group.id": f"{topic}-cf",
        "topic.metadata.refresh.interval.ms": 1000, "auto.offset.reset": "earliest",
    })  # fmt: skip
    cf.subscribe([f"^{topic}-.*"])

    def cf_poll() -> set[str]:
        cf.poll(0.2)
        return {tp.topic for tp in cf.assignment()}

    try:
        assert _assigned_within(cf_poll, "-a", 30)
        admin.create_topics([NewTopic(f"{topic}-b", 2)])[f"{topic}-b"].result(30)
        assert _assigned_within(cf_poll, "-b", 30)
        producer = CfProducer({"bootstrap.servers": kop.bootstrap})
        producer.produce(f"{topic}-c", b"x")
        assert producer.flush(30) == 0
        assert _assigned_within(cf_poll, "-c", 30)
    finally:
        cf.close()

    async def aiokafka_side() -> list[bool]:
        """The same for aiokafka's member: -a exists, -d is created after it subscribed,
        -e is auto-created by a producer."""
        consumer = AIOKafkaConsumer(
            bootstrap_servers=kop.bootstrap, group_id=f"{topic}-aio", metadata_max_age_ms=1000,
            auto_offset_reset="earliest",
        )  # fmt: skip
        await consumer.start()
        consumer.subscribe(pattern=f"^{topic}-.*")

        async def assigned(suffix: str) -> bool:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                await consumer.getmany(timeout_ms=200)
                if any(tp.topic.endswith(suffix) for tp in consumer.assignment()):
                    return True
            return False

        try:
            got = [await assigned("-a")]
            admin.create_topics([NewTopic(f"{topic}-d", 1)])[f"{topic}-d"].result(30)
            got.append(await assigned("-d"))
            producer = CfProducer({"bootstrap.servers": kop.bootstrap})
            producer.produce(f"{topic}-e", b"x")
            assert producer.flush(30) == 0
            got.append(await assigned("-e"))
        finally:
            await consumer.stop()
        return got

    result: list[list[bool]] = []
    side = threading.Thread(target=lambda: result.append(asyncio.run(aiokafka_side())))
    side.start()  # on a thread of its own: the main thread's event loop stays pytest's
    side.join(180)
    assert result == [[True, True, True]]
