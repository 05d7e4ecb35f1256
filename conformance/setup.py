"""Set-up steps shared by scenarios (not what is judged): topics made and waited for."""

from __future__ import annotations

import contextlib
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def drop_topics(bootstrap: str, names: list[str]) -> None:
    """Delete what a scenario made (names that are not topics are skipped), so runs
    do not pile up topics on either broker."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = set(admin.list_topics(timeout=30).topics)
    doomed = [n for n in names if n in existing]
    if doomed:
        for fut in admin.delete_topics(doomed, operation_timeout=60).values():
            with contextlib.suppress(KafkaException):
                fut.result(60)


def broker_count(bootstrap: str) -> int:
    """How many brokers Metadata lists (kop: live instances)."""
    return len(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).brokers)


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    """Create a topic and wait until every partition's leader serves it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(name, partitions, 1, config=configs or {})
    admin.create_topics([new], operation_timeout=30)[name].result(60)
    deadline = time.monotonic() + 30
    while True:
        try:
            md = admin.list_topics(name, timeout=10).topics.get(name)
            if md is not None and md.error is None and len(md.partitions) == partitions:
                break
        except KafkaException:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name} not visible in metadata after 30 s")
        time.sleep(0.2)
    _await_leaders(bootstrap, name, partitions, deadline)


def _await_leaders(bootstrap: str, name: str, partitions: int, deadline: float) -> None:
    """Metadata names a leader before that leader has loaded the partition: Kafka
    4.3.1 answers NOT_LEADER_OR_FOLLOWER (and stores nothing) for a moment after
    creation. A ListOffsets per partition answers only once the leader serves it."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "conformance-setup"})
    try:
        for p in range(partitions):
            while True:
                try:
                    consumer.get_watermark_offsets(TopicPartition(name, p), timeout=5)
                    break
                except KafkaException:
                    if time.monotonic() > deadline:
                        raise TimeoutError(
                            f"{name}[{p}] has no serving leader after 30 s"
                        ) from None
                    time.sleep(0.2)
    finally:
        consumer.close()
