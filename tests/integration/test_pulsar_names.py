"""Pulsar topics as Kafka sees them: a non-partitioned Pulsar topic is a
one-partition Kafka topic, and a full Pulsar name works as a Kafka topic name."""

from __future__ import annotations

import urllib.request

import pulsar

from tests.integration.clients import PRODUCERS, Rec, cf_consume, kp_consume
from tests.integration.conftest import PULSAR_HTTP, PULSAR_URL, KopProcess


def test_non_partitioned_pulsar_topic_reads_as_partition_zero(kop: KopProcess, topic: str) -> None:
    full = f"persistent://public/default/{topic}"
    request = urllib.request.Request(
        f"{PULSAR_HTTP}/admin/v2/persistent/public/default/{topic}", method="PUT"
    )
    urllib.request.urlopen(request).close()
    client = pulsar.Client(PULSAR_URL)
    try:
        producer = client.create_producer(full)
        for i in range(4):
            producer.send(f"n{i}".encode(), partition_key=f"k{i}")
    finally:
        client.close()
    got = kp_consume(kop.bootstrap, topic, 4)
    assert [(r.offset, r.key, r.value) for r in got] == [
        (i, f"k{i}".encode(), f"n{i}".encode()) for i in range(4)
    ]
    more = [Rec(b"kafka", b"appended", (), 1_700_000_000_000)]
    assert PRODUCERS["kafka-python"](kop.bootstrap, topic, more, None) == [4]


def test_full_pulsar_name_is_a_kafka_topic_name(kop: KopProcess, topic: str) -> None:
    full = f"persistent://public/default/{topic}"
    recs = [Rec(b"k", b"via-full-name", (), 1_700_000_000_000)]
    assert PRODUCERS["confluent-kafka"](kop.bootstrap, full, recs, None) == [0]
    # The same topic under its short name in the default namespace.
    assert [r.value for r in cf_consume(kop.bootstrap, topic, 1)] == [b"via-full-name"]
