"""KIP-932 share groups on Pulsar Shared subscriptions (D27), with kafka-clients 4.3.1's
share consumer, unmodified, against kop over Pulsar: members of one share group split
what is produced, each record to one member; a released record comes back with its
delivery counted; a Pulsar application on the group's subscription takes its share of
the same records and neither side receives what the other acknowledged; everything
acknowledged leaves the subscription's backlog empty."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pulsar

from tests.integration.admin import create_topic
from tests.integration.conftest import PULSAR_URL, KopProcess
from tests.integration.observe import pulsar_rest

JAVA_DIR = Path(__file__).resolve().parent / "java"


def _run(kop: KopProcess, kafka_lib: Path, topic: str, group: str, *args: str) -> list[str]:
    out = subprocess.run(
        ["java", "-cp", f"{kafka_lib}/*", str(JAVA_DIR / "ShareGroupConsume.java"),
         kop.bootstrap, topic, group, *args],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    return out.stdout.splitlines()


def _backlog(topic: str, subscription: str) -> int:
    stats = pulsar_rest("GET", f"persistent/public/default/{topic}/partitioned-stats")
    return int(stats["subscriptions"][subscription]["msgBacklog"])


def test_two_share_consumers_split_the_records_and_a_release_comes_back(
    kop: KopProcess, topic: str, kafka_lib: Path
) -> None:
    create_topic(kop.bootstrap, topic, 4)
    group = f"sg-{topic}"
    lines = _run(kop, kafka_lib, topic, group, "1000", "2", "explicit")
    assert "RECEIVED 1000 DUPLICATES 0" in lines, lines[-8:]
    counts = [int(line.split()[2]) for line in lines if line.startswith("MEMBER ")]
    assert len(counts) == 2 and all(c > 0 for c in counts) and sum(counts) == 1000, counts
    assert [line for line in lines if line.startswith("DELIVERY")] == ["DELIVERY 1", "DELIVERY 2"]
    assert "REDELIVERED 2" in lines
    assert _backlog(topic, f"kafka-share-{group}") == 0  # every record acknowledged


def test_a_pulsar_consumer_shares_the_subscription_with_a_kafka_share_consumer(
    kop: KopProcess, topic: str, kafka_lib: Path
) -> None:
    """The Pulsar consumer attaches to the subscription kop names after the group; the
    Kafka member creates it on its first fetch (share.auto.offset.reset=latest)."""
    create_topic(kop.bootstrap, topic, 2)
    group = f"sg-{topic}"
    got: list[bytes] = []
    stop = threading.Event()
    native = pulsar.Client(PULSAR_URL)

    def pulsar_side() -> None:
        consumer = native.subscribe(
            f"persistent://public/default/{topic}", f"kafka-share-{group}",
            consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=5,
        )  # fmt: skip
        while not stop.is_set():
            try:
                msg = consumer.receive(timeout_millis=500)
            except pulsar.Timeout:
                continue
            got.append(msg.data())
            consumer.acknowledge(msg)
        consumer.close()

    side = threading.Thread(target=pulsar_side)
    side.start()
    try:
        lines = _run(kop, kafka_lib, topic, group, "1000", "1")
    finally:
        stop.set()
        side.join(30)
        native.close()
    kafka = next(line for line in lines if line.startswith("VALUES ")).removeprefix("VALUES ")
    kafka_values = set(kafka.split(",")) if kafka else set()
    pulsar_values = {v.decode() for v in got}
    assert kafka_values and pulsar_values, (len(kafka_values), len(pulsar_values))
    assert not kafka_values & pulsar_values, "a record reached both sides"
    assert len(got) == len(pulsar_values), "the Pulsar consumer got a record twice"
    assert kafka_values | pulsar_values == {f"v{i}" for i in range(1000)}
    assert _backlog(topic, f"kafka-share-{group}") == 0
