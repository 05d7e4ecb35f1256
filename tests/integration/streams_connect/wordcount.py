"""The word count's inputs, its Streams JVM, and its output table as a user reads it."""

from __future__ import annotations

import random
import struct
import uuid
from collections import Counter
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.streams_connect.jvm import JavaApp

VOCABULARY = [f"{a}{b}" for a in ("red", "blue", "green", "gold") for b in ("fox", "owl", "elk")]


def lines(n: int, seed: int) -> list[str]:
    """n lines of 1-8 words each, reproducible from the seed."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(VOCABULARY, k=rng.randint(1, 8))) for _ in range(n)]


def word_counts(text: list[str]) -> Counter[str]:
    return Counter(word for line in text for word in line.split())


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=n, replication_factor=1) for name, n in topics.items()]
    )
    for future in futures.values():
        future.result(60)


def produce(bootstrap: str, topic: str, text: list[str]) -> None:
    """Keyed by line number, acks=all, all delivered before it returns."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    failed: list[str] = []
    for i, line in enumerate(text):
        producer.produce(
            topic, key=str(i).encode(), value=line.encode(),
            on_delivery=lambda err, _msg: failed.append(str(err)) if err else None,
        )  # fmt: skip
        producer.poll(0)
    assert producer.flush(60) == 0, "input records not delivered within 60 s"
    assert not failed, failed[:5]


class WordCountApp(JavaApp):
    """WordCount.java: input -> words -> repartition by word -> persistent count -> output."""

    def __init__(
        self, classpath: str, bootstrap: str, topic: str, work: Path,
        guarantee: str = "at_least_once",
    ) -> None:  # fmt: skip
        self.application_id = f"wc-{uuid.uuid4().hex[:8]}"
        self.input, self.output = f"{topic}-in", f"{topic}-out"
        args = [bootstrap, self.application_id, self.input, self.output, str(work / "state"),
                guarantee]  # fmt: skip
        super().__init__("wordcount", classpath, "WordCount", args, work, r"^(FATAL|STATE ERROR).*")

    def state(self) -> str:
        """Its last Streams state of this run (CREATED before the first change)."""
        out = self.run_output().splitlines()
        states = [line.split()[1] for line in out if line.startswith("STATE ")]
        return states[-1] if states else "CREATED"


class CountTable:
    """The output topic read from the beginning: the latest count emitted per word."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:8]}",
             "enable.auto.commit": False}
        )  # fmt: skip
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self.latest: dict[str, int] = {}
        self.records = 0

    def poll(self) -> None:
        """Whatever is available within a moment."""
        for msg in self.consumer.consume(num_messages=5000, timeout=0.2):
            error = msg.error()
            assert error is None or error.code() < 0, f"output read failed: {error}"
            if error is None:
                key, value = msg.key(), msg.value()
                assert key is not None and value is not None and len(value) == 8, (key, value)
                self.latest[key.decode()] = struct.unpack(">q", value)[0]
                self.records += 1

    def total(self) -> int:
        """The sum of the latest counts, after a poll."""
        self.poll()
        return sum(self.latest.values())

    def reached(self, expected: Counter[str]) -> bool:
        """Every word's latest count is at least its true count."""
        self.poll()
        return all(self.latest.get(word, 0) >= n for word, n in expected.items())

    def progress(self, expected: Counter[str]) -> str:
        counted = sum(min(self.latest.get(w, 0), n) for w, n in expected.items())
        return f"{counted} of {sum(expected.values())} words counted, {self.records} updates read"

    def close(self) -> None:
        self.consumer.close()
