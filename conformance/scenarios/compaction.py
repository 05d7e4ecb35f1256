"""Compacted topics (cleanup.policy=compact) as a client meets them before the log is
cleaned: the uncleaned head is the whole log, tombstones included, and a keyless
record is refused. What a consumer sees after cleaning, each target made to clean on
demand, is in compaction_cleaned.py."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from conformance.model import Ctx, Observation, scenario
from conformance.setup import create_topic

CF = ("confluent-kafka",)


def _produce(bootstrap: str, topic: str, writes: list[tuple[bytes | None, bytes | None]]) -> Any:
    """Each write's outcome: its offset, or the error the client reports."""
    producer = Producer({"bootstrap.servers": bootstrap, "retries": 0, "linger.ms": 0})
    out: list[Any] = []

    def done(err: Any, msg: Any) -> None:
        out.append(err.name() if err is not None else msg.offset())

    for key, value in writes:
        producer.produce(topic, key=key, value=value, on_delivery=done)
        producer.flush(30)
    return out


def _consume(bootstrap: str, topic: str, start: int, n: int) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
         "enable.auto.commit": False}
    )  # fmt: skip
    try:
        consumer.assign([TopicPartition(topic, 0, start)])
        out: list[Any] = []
        for _ in range(120):
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                out.append((msg.offset(), msg.key(), msg.value()))
                if len(out) == n:
                    break
        return out
    finally:
        consumer.close()


@scenario("compaction/head", CF, quick=True)
def head(ctx: Ctx, _client: object) -> Observation:
    """A compacted topic: its cleanup.policy as described, keyed writes and a tombstone
    all served from offset 0 and from the middle, a keyless write refused."""
    topic = ctx.name("compacted")
    create_topic(ctx.bootstrap, topic, configs={"cleanup.policy": "compact"})
    admin = AdminClient({"bootstrap.servers": ctx.bootstrap})
    res = ConfigResource(ResourceType.TOPIC, topic)
    policy = admin.describe_configs([res])[res].result(60)["cleanup.policy"].value
    writes: list[tuple[bytes | None, bytes | None]] = [
        (b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"b", None), (b"c", b"1"),
    ]  # fmt: skip
    return {
        "cleanup.policy": policy,
        "keyed writes": _produce(ctx.bootstrap, topic, writes),
        "keyless write": _produce(ctx.bootstrap, topic, [(None, b"x")]),
        "from 0": _consume(ctx.bootstrap, topic, 0, len(writes)),
        "from 2": _consume(ctx.bootstrap, topic, 2, len(writes) - 2),
    }
