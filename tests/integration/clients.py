"""The same produce/consume done by three unmodified Kafka clients."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTP
from confluent_kafka import Consumer as CfConsumer
from confluent_kafka import Producer as CfProducer
from confluent_kafka import TopicPartition as CfTP
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTP

Header = tuple[str, bytes | None]


@dataclass(frozen=True)
class Rec:
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp: int
    offset: int = -1


def sample_records(n: int, base_ts: int = 1_700_000_000_000) -> list[Rec]:
    """Keys (binary and text, some null), null values, headers (repeated, binary), timestamps."""
    out = []
    for i in range(n):
        value = None if i % 5 == 4 else (f"value-{i}-".encode() * (1 + i % 4))
        key = bytes([0xFF, i % 256, 0]) if i % 2 else f"key-{i}".encode()
        if i % 7 == 3 and value is not None:  # aiokafka refuses a record with neither
            key = None
        headers: tuple[Header, ...] = ()
        if i % 3 == 0:
            headers = (("trace", f"t{i}".encode()), ("bin", b"\x00\xff"), ("trace", b"again"))
        elif i % 3 == 1:
            headers = (("a", b"1"), ("b", b"2"))
        out.append(Rec(key, value, headers, base_ts + i * 10))
    return out


# -- kafka-python -------------------------------------------------------------


def kp_produce(bootstrap: str, topic: str, recs: list[Rec], compression: str | None) -> list[int]:
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=compression, linger_ms=5)
    futures = [
        producer.send(
            topic,
            key=r.key,
            value=r.value,
            headers=list(r.headers),
            timestamp_ms=r.timestamp,
            partition=0,
        )
        for r in recs
    ]
    offsets = [f.get(timeout=30).offset for f in futures]
    producer.close()
    return offsets


def kp_consume(bootstrap: str, topic: str, n: int, start: int = 0) -> list[Rec]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = KpTP(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, start)
    got: list[Rec] = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        for msgs in consumer.poll(timeout_ms=500).values():
            got += [Rec(m.key, m.value, tuple(m.headers), m.timestamp, m.offset) for m in msgs]
    consumer.close()
    return got


# -- confluent-kafka (librdkafka) ---------------------------------------------


def cf_produce(
    bootstrap: str, topic: str, recs: list[Rec], compression: str | None, **extra: object
) -> list[int]:
    conf = {
        "bootstrap.servers": bootstrap,
        "linger.ms": 5,
        "compression.type": compression or "none",
    }
    conf.update(extra)
    producer = CfProducer(conf)
    offsets: dict[int, int] = {}
    errors: list[object] = []

    def done(i: int):  # type: ignore[no-untyped-def]
        def cb(err, msg):  # type: ignore[no-untyped-def]
            if err is not None:
                errors.append(err)
            else:
                offsets[i] = msg.offset()

        return cb

    for i, r in enumerate(recs):
        producer.produce(
            topic,
            value=r.value,
            key=r.key,
            headers=list(r.headers),
            timestamp=r.timestamp,
            partition=0,
            on_delivery=done(i),
        )
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors
    return [offsets[i] for i in range(len(recs))]


def cf_consume(
    bootstrap: str, topic: str, n: int, start: int = 0, reset: str = "latest"
) -> list[Rec]:
    """The first `n` records from `start` (fewer after 30 s); `reset` is the
    auto.offset.reset policy applied when `start` is out of range."""
    consumer = CfConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "it-unused",
            "enable.auto.commit": False,
            "auto.offset.reset": reset,
        }
    )
    consumer.assign([CfTP(topic, 0, start)])
    got: list[Rec] = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got.append(Rec(m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1], m.offset()))
    consumer.close()
    return got


# -- aiokafka -------------------------------------------------------------------


def aio_produce(bootstrap: str, topic: str, recs: list[Rec], compression: str | None) -> list[int]:
    async def run() -> list[int]:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, compression_type=compression, linger_ms=5
        )
        await producer.start()
        try:
            futures = [
                await producer.send(
                    topic,
                    key=r.key,
                    value=r.value,
                    headers=list(r.headers),
                    timestamp_ms=r.timestamp,
                    partition=0,
                )
                for r in recs
            ]
            return [(await f).offset for f in futures]
        finally:
            await producer.stop()

    return asyncio.run(run())


def aio_consume(bootstrap: str, topic: str, n: int, start: int = 0) -> list[Rec]:
    async def run() -> list[Rec]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = AioTP(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, start)
            got: list[Rec] = []
            deadline = time.monotonic() + 30
            while len(got) < n and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for msgs in batches.values():
                    got += [
                        Rec(m.key, m.value, tuple(m.headers), m.timestamp, m.offset) for m in msgs
                    ]
            return got
        finally:
            await consumer.stop()

    return asyncio.run(run())


PRODUCERS = {"kafka-python": kp_produce, "confluent-kafka": cf_produce, "aiokafka": aio_produce}
CONSUMERS = {"kafka-python": kp_consume, "confluent-kafka": cf_consume, "aiokafka": aio_consume}
