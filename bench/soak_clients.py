"""The mixed Kafka clients of `bench.pulsar_soak`, each a thread until `stop` is set.

What they do is what peers did to one `make run` for 75 minutes before its Pulsar
ran out of heap (issue 18): records trickling into hundreds of topics one at a
time, a steady bulk stream, consumers seeking into history, consumer groups that
keep rebalancing and committing, and topics created and deleted. Both client
libraries the issue names take part (kafka-python and confluent-kafka).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition

from bench.common import log

for noisy in ("kafka", "kafka.coordinator", "kafka.conn", "kafka.client"):
    logging.getLogger(noisy).setLevel(logging.CRITICAL)


@dataclass(frozen=True)
class Mix:
    """How much of each client runs; the defaults keep two shared cores usable."""

    topics: int = 400
    seed_records: int = 200  # per topic, before the clients start, so history exists
    trickle_per_s: float = 40.0  # single records, each to a random topic
    bulk_per_s: float = 1000.0  # 1 KiB records to the hot topics
    hot_topics: int = 8
    history_every_s: float = 0.5  # a seek to a random offset of a random topic
    groups: int = 2
    members: int = 3
    group_topics: int = 20
    member_life_s: tuple[float, float] = (60.0, 180.0)  # then it leaves: a rebalance
    churn_every_s: float = 20.0  # a topic created, written, read and deleted
    idle_partitions: int = 0  # opened and written once, then only followed (scale)


def topic_name(i: int) -> str:
    return f"soak-{i:03d}"


@dataclass
class Tally:
    """What the clients did, shared by all threads (a lock: the counters are hot)."""

    counts: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] += n

    def error(self, where: str, exc: BaseException | str) -> None:
        with self._lock:
            first = self.errors[where] == 0
            self.errors[where] += 1
        if first:
            log(f"[soak] {where}: {exc} (first of its kind; counted from now on)")

    def snapshot(self) -> tuple[dict[str, int], dict[str, int]]:
        with self._lock:
            return dict(self.counts), dict(self.errors)


class Clients:
    def __init__(self, bootstrap: str, mix: Mix, tally: Tally, seed: int = 1) -> None:
        self.bootstrap = bootstrap
        self.mix = mix
        self.tally = tally
        self.stop = threading.Event()
        self._rnd = random.Random(seed)
        self._threads: list[threading.Thread] = []
        self._value = random.Random(seed).randbytes(1024)

    # -- set-up ---------------------------------------------------------------------

    def prepare(self) -> None:
        """Creates the topics (kop auto-creates them too; this makes it one round)
        and writes `seed_records` into each, so seeks have history to land in."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        names = [topic_name(i) for i in range(self.mix.topics)]
        existing = set(admin.list_topics(timeout=30).topics)
        new = [NewTopic(t, 1, 1) for t in names if t not in existing]
        for i in range(0, len(new), 50):
            for t, fut in admin.create_topics(new[i : i + 50], request_timeout=60).items():
                try:
                    fut.result(120)
                except KafkaException as exc:
                    log(f"[soak] create {t}: {exc}")
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20})
        failed: list[str] = []

        def done(err: object, _msg: object) -> None:
            if err is not None:
                failed.append(str(err))

        for t in names:
            for j in range(self.mix.seed_records):
                producer.produce(t, self._value[: 100 + j % 400], on_delivery=done)
                producer.poll(0)
        left = producer.flush(300)
        if left or failed:
            raise RuntimeError(f"seeding: {left} unsent, {len(failed)} failed {failed[:1]}")
        log(f"[soak] {len(names)} topics ready, {self.mix.seed_records} records each")

    def open_idle(self) -> None:
        """`idle_partitions` more partitions, in topics of at most 500 (kop may bound
        partitions per topic), one record each: open in kop and loaded in Pulsar."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20})
        left, i = self.mix.idle_partitions, 0
        while left > 0:
            name, n = f"soak-idle-{i:02d}", min(500, left)
            if name not in admin.list_topics(timeout=30).topics:
                admin.create_topics([NewTopic(name, n, 1)])[name].result(300)
            for p in range(n):
                producer.produce(name, b"idle", partition=p)
                producer.poll(0)
            if producer.flush(600):
                raise RuntimeError(f"records to {name} left unsent")
            left, i = left - n, i + 1
            log(f"[soak] {self.mix.idle_partitions - left} idle partitions open")

    # -- running --------------------------------------------------------------------

    def start(self) -> None:
        m = self.mix
        self._spawn("trickle", self._trickle)
        self._spawn("bulk", self._bulk)
        self._spawn("history-confluent", lambda: self._history_confluent(seed=2))
        self._spawn("history-kafka-python", lambda: self._history_kafka_python(seed=3))
        self._spawn("tail", self._tail)
        for g in range(m.groups):
            for k in range(m.members):
                self._spawn(f"group-{g}-{k}", lambda g=g, k=k: self._member(g, k))
        self._spawn("churn", self._churn)

    def join(self, timeout_s: float = 60.0) -> None:
        self.stop.set()
        deadline = time.monotonic() + timeout_s
        for t in self._threads:
            t.join(max(0.1, deadline - time.monotonic()))

    def _spawn(self, name: str, body: Callable[[], None]) -> None:
        def guarded() -> None:
            while not self.stop.is_set():
                try:
                    body()
                except Exception as exc:  # a client died: count it, start it again
                    self.tally.error(f"{name} crashed", repr(exc))
                    self.stop.wait(1.0)

        t = threading.Thread(target=guarded, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def _paced(self, per_s: float) -> Callable[[], bool]:
        """Call it once per unit of work: it sleeps to hold `per_s`; False once stopped."""
        interval = 1.0 / per_s
        next_at = time.monotonic()

        def tick() -> bool:
            nonlocal next_at
            next_at += interval
            delay = next_at - time.monotonic()
            if delay < -1.0:  # far behind (a stall): do not burst to catch up
                next_at = time.monotonic()
            return not self.stop.wait(max(0.0, delay))

        return tick

    # -- the clients ----------------------------------------------------------------

    def _trickle(self) -> None:
        """kafka-python, one record at a time to a random topic: each topic hears from
        it every `topics / trickle_per_s` seconds, a quiet spell in between."""
        rnd = random.Random(4)
        producer = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=0, acks=1)
        tick = self._paced(self.mix.trickle_per_s)
        pending = []
        try:
            while tick():
                topic = topic_name(rnd.randrange(self.mix.topics))
                pending.append(producer.send(topic, value=self._value[: rnd.randrange(50, 500)]))
                if len(pending) >= 20:
                    for f in pending:
                        try:
                            f.get(timeout=30)
                            self.tally.add("trickled")
                        except Exception as exc:
                            self.tally.error("trickle send", repr(exc))
                    pending.clear()
        finally:
            producer.close(timeout=10)

    def _bulk(self) -> None:
        """confluent-kafka, a steady stream of 1 KiB records to the hot topics."""
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "linger.ms": 5, "batch.size": 262144}
        )

        def done(err: object, _msg: object) -> None:
            if err is None:
                self.tally.add("bulk")
            else:
                self.tally.error("bulk send", str(err))

        hot = [topic_name(i) for i in range(self.mix.hot_topics)]
        per_tick = 50  # records per pacing step: 1000/s is 20 steps a second
        tick = self._paced(self.mix.bulk_per_s / per_tick)
        i = 0
        try:
            while tick():
                for _ in range(per_tick):
                    try:
                        producer.produce(hot[i % len(hot)], self._value, on_delivery=done)
                    except BufferError:
                        producer.poll(0.1)
                    i += 1
                producer.poll(0)
        finally:
            producer.flush(30)

    def _history_confluent(self, seed: int) -> None:
        """Assign one partition at a random offset, read up to 50 records, move on."""
        rnd = random.Random(seed)
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "soak-history-unused",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
            }
        )
        tick = self._paced(1.0 / self.mix.history_every_s)
        try:
            while tick():
                topic = topic_name(rnd.randrange(self.mix.topics))
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
                if high <= low:
                    continue
                consumer.assign([TopicPartition(topic, 0, rnd.randrange(low, high))])
                got, deadline = 0, time.monotonic() + 3.0
                while got < 50 and time.monotonic() < deadline and not self.stop.is_set():
                    for msg in consumer.consume(50, 0.5):
                        if msg.error() is not None:
                            self.tally.error("history-confluent", str(msg.error()))
                        else:
                            got += 1
                self.tally.add("history_reads")
                self.tally.add("history_records", got)
                consumer.unassign()
        finally:
            consumer.close()

    def _history_kafka_python(self, seed: int) -> None:
        rnd = random.Random(seed)
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        tick = self._paced(1.0 / self.mix.history_every_s)
        try:
            while tick():
                tp = KpTopicPartition(topic_name(rnd.randrange(self.mix.topics)), 0)
                consumer.assign([tp])
                high = consumer.end_offsets([tp])[tp]
                low = consumer.beginning_offsets([tp])[tp]
                if high <= low:
                    continue
                consumer.seek(tp, rnd.randrange(low, high))
                got, deadline = 0, time.monotonic() + 3.0
                while got < 50 and time.monotonic() < deadline and not self.stop.is_set():
                    for records in consumer.poll(timeout_ms=500, max_records=50).values():
                        got += len(records)
                self.tally.add("history_reads")
                self.tally.add("history_records", got)
        finally:
            consumer.close()

    def _tail(self) -> None:
        """confluent-kafka in a group of one on the hot topics: reads at the tail."""
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "soak-tail",
                "auto.offset.reset": "latest",
                "enable.auto.commit": True,
            }
        )
        consumer.subscribe([topic_name(i) for i in range(self.mix.hot_topics)])
        try:
            while not self.stop.is_set():
                msgs = consumer.consume(500, 0.5)
                bad = [m for m in msgs if m.error() is not None]
                for m in bad:
                    self.tally.error("tail", str(m.error()))
                self.tally.add("tail_records", len(msgs) - len(bad))
        finally:
            consumer.close()

    def _member(self, group: int, member: int) -> None:
        """kafka-python in a group on `group_topics` topics, committing every second;
        it leaves after a random life (the others rebalance) and joins again."""
        rnd = random.Random(100 * group + member)
        topics = [topic_name(i) for i in range(self.mix.group_topics)]
        consumer = KafkaConsumer(
            *topics,
            bootstrap_servers=self.bootstrap,
            group_id=f"soak-group-{group}",
            auto_offset_reset="earliest",
            enable_auto_commit=True,
            auto_commit_interval_ms=1000,
        )
        self.tally.add("joins")
        leave_at = time.monotonic() + rnd.uniform(*self.mix.member_life_s)
        try:
            while time.monotonic() < leave_at and not self.stop.is_set():
                for records in consumer.poll(timeout_ms=500).values():
                    self.tally.add("group_records", len(records))
        finally:
            consumer.close()
        self.stop.wait(rnd.uniform(1.0, 5.0))

    def _churn(self) -> None:
        """A topic created, written, read back and deleted, again and again."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        tick = self._paced(1.0 / self.mix.churn_every_s)
        n = 0
        while tick():
            n += 1
            name = f"soak-churn-{int(time.time())}-{n}"
            try:
                admin.create_topics([NewTopic(name, 2, 1)])[name].result(60)
                # A producer of its own, gone before the delete: one that still knew
                # the topic would ask for it again and auto-create it (as with Kafka).
                producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
                for i in range(100):
                    producer.produce(name, self._value[:200], partition=i % 2)
                if producer.flush(30):
                    raise RuntimeError("records left unsent")
                del producer
                self._read_back(name, 100)
                admin.delete_topics([name])[name].result(60)
                self.tally.add("topics_churned")
            except Exception as exc:
                self.tally.error("churn", repr(exc))

    def _read_back(self, topic: str, expected: int) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "soak-churn-unused"})
        try:
            consumer.assign([TopicPartition(topic, p, 0) for p in range(2)])
            got, deadline = 0, time.monotonic() + 30
            while got < expected and time.monotonic() < deadline:
                got += sum(m.error() is None for m in consumer.consume(100, 0.5))
            if got < expected:
                raise RuntimeError(f"read back {got} of {expected} records of {topic}")
        finally:
            consumer.close()
