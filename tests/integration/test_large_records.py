"""Records up to what Kafka allows, on a real Pulsar: a topic with
max.message.bytes=10485760 takes a 10 MB record though Pulsar's maxMessageSize is
5 MiB. kop stores it with Pulsar's message chunking, as the Java client does, so a
Kafka consumer reads it back through kop and a Pulsar consumer reads it whole."""

from __future__ import annotations

import os

import pulsar
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration.admin import create_topic
from tests.integration.conftest import PULSAR_URL, KopProcess
from tests.integration.observe import ledgers

TEN_MB = 10_000_000
CLIENT_LIMITS = {"message.max.bytes": 12 << 20, "receive.message.max.bytes": 40 << 20}


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> list[int]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **CLIENT_LIMITS})
    offsets: list[int] = []

    def done(err: object, msg: object) -> None:
        assert err is None, err
        offsets.append(msg.offset())  # type: ignore[attr-defined]

    for value in values:
        producer.produce(topic, value=value, key=b"k", on_delivery=done)
        producer.flush(60)
    return offsets


def _consume(bootstrap: str, topic: str, n: int) -> list[tuple[int, bytes]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", **CLIENT_LIMITS,
         "enable.auto.commit": False, "fetch.max.bytes": 30 << 20}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[tuple[int, bytes]] = []
    try:
        for msg in iter(lambda: consumer.poll(30), None):
            assert msg.error() is None, msg.error()
            got.append((msg.offset(), msg.value()))
            if len(got) == n:
                break
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("entry_format", ["pulsar", "kafka"])
def test_a_10_mb_record_is_stored_in_chunks_and_read_back_whole(
    kop: KopProcess, topic: str, entry_format: str
) -> None:
    """Failed before: creating the topic was INVALID_CONFIG (above Pulsar's entry)."""
    create_topic(
        kop.bootstrap, topic, entry_format=entry_format,
        configs={"max.message.bytes": "10485760"},
    )  # fmt: skip
    big = os.urandom(TEN_MB)  # incompressible: it stays above Pulsar's 5 MiB entries
    assert _produce(kop.bootstrap, topic, [b"before", big, b"after"]) == [0, 1, 2]
    got = _consume(kop.bootstrap, topic, 3)
    assert [o for o, _ in got] == [0, 1, 2]
    # Three records, the middle one in two chunks of at most 5 MiB: four entries.
    assert sum(n for _, n in ledgers(topic)) == 4
    assert got[1][1] == big and (got[0][1], got[2][1]) == (b"before", b"after")

    client = pulsar.Client(PULSAR_URL)
    try:
        reader = client.create_reader(
            f"persistent://public/default/{topic}-partition-0", pulsar.MessageId.earliest
        )
        msgs = [reader.read_next(30_000) for _ in range(3)]
    finally:
        client.close()
    middle = msgs[1].data()
    if entry_format == "pulsar":
        assert [m.data() for m in msgs] == [b"before", big, b"after"]
    else:  # the Kafka batch verbatim, whole
        assert len(middle) > TEN_MB and big in middle
