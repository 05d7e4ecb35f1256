"""An idempotent producer in the background and a group reading it back: the
workload the several-instances tests put kop under while instances come and go,
on a Pulsar standalone (tests/integration) and on the production-shaped cluster
(tests/cluster)."""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

PARTITIONS = 6


class Writer:
    """An idempotent producer writing round-robin over the partitions in the background,
    remembering what was acknowledged where, and when each partition was served again
    after a moment the test marks."""

    def __init__(
        self, bootstrap: str, topic: str, partitions: int = PARTITIONS, **conf: object
    ) -> None:
        self._conf, self._partitions = conf, partitions
        self.acked: dict[tuple[int, int], bytes] = {}
        self.errors: list[str] = []
        self.served_again: dict[int, float] = {}
        self._bootstrap, self._topic = bootstrap, topic
        self._mark: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(90)

    def mark(self) -> None:
        self.served_again.clear()
        self._mark = time.monotonic()

    def until_served(self, partitions: list[int], within: float = 30) -> None:
        deadline = time.monotonic() + within
        while not set(partitions) <= set(self.served_again) and time.monotonic() < deadline:
            time.sleep(0.1)

    def _done(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))
            return
        self.acked[(msg.partition(), msg.offset())] = msg.value()
        if self._mark is not None:
            self.served_again.setdefault(msg.partition(), time.monotonic() - self._mark)

    def _run(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self._bootstrap, "enable.idempotence": True,
             "linger.ms": 5, "message.timeout.ms": 60000, **self._conf}
        )  # fmt: skip
        i = 0
        while not self._stop.is_set():
            value = b"r%d" % i
            producer.produce(
                self._topic, value=value, partition=i % self._partitions, on_delivery=self._done
            )
            producer.poll(0.002)
            i += 1
        producer.flush(60)

    def check(self, bootstrap: str, group: str) -> None:
        """Nothing acknowledged lost or duplicated, offsets dense, all of it readable."""
        assert self.errors == []
        probe = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{group}-probe"})
        try:
            for p in range(self._partitions):
                offsets = sorted(o for (q, o) in self.acked if q == p)
                assert offsets == list(range(len(offsets))), p
                # and nothing else in the log: no batch stored twice by a retry
                _low, high = probe.get_watermark_offsets(TopicPartition(self._topic, p), 15)
                assert high == len(offsets), (p, high, len(offsets))
        finally:
            probe.close()
        got = consume_group(bootstrap, self._topic, group, len(self.acked))
        assert got == self.acked


def consume_group(
    bootstrap: str, topic: str, group: str, want: int
) -> dict[tuple[int, int], bytes]:
    """What a group member reads from the start, committed at the end."""
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
