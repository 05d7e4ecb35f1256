"""kafka-python, as an application would use it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, OffsetSpec
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from conformance.clients.base import ClientError
from conformance.clients.base import OffsetSpec as Spec
from conformance.model import Rec


def _name(exc: KafkaError) -> str:
    return type(exc).__name__


class KafkaPython:
    name = "kafka-python"
    codecs = ("none", "gzip", "snappy", "lz4", "zstd")

    def produce(
        self,
        bootstrap: str,
        topic: str,
        recs: list[Rec],
        *,
        compression: str | None = None,
        idempotent: bool = False,
        max_request_bytes: int = 1 << 20,
    ) -> list[int]:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            max_request_size=max_request_bytes,
            compression_type=None if compression in (None, "none") else compression,
            linger_ms=5,
            enable_idempotence=idempotent,
            acks="all",
        )
        try:
            futures = [
                producer.send(
                    topic,
                    key=r.key,
                    value=r.value,
                    headers=list(r.headers),
                    timestamp_ms=r.timestamp if r.timestamp >= 0 else None,
                    partition=r.partition,
                )
                for r in recs
            ]
            return [f.get(timeout=60).offset for f in futures]
        except KafkaError as exc:
            raise ClientError(_name(exc)) from exc
        finally:
            producer.close(timeout=10)

    def consume(
        self, bootstrap: str, topic: str, n: int, *, partition: int = 0, start: int = 0
    ) -> list[Rec]:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, start)
        got: list[Rec] = []
        deadline = time.monotonic() + 30
        try:
            while len(got) < n and time.monotonic() < deadline:
                for msgs in consumer.poll(timeout_ms=500).values():
                    got += [
                        Rec(m.key, m.value, tuple(m.headers), m.timestamp, m.offset, m.partition)
                        for m in msgs
                    ]
        except KafkaError as exc:
            raise ClientError(_name(exc)) from exc
        finally:
            consumer.close()
        return got

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: Spec) -> int:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        which = {
            "earliest": OffsetSpec.EARLIEST,
            "latest": OffsetSpec.LATEST,
            "max-timestamp": OffsetSpec.MAX_TIMESTAMP,
        }
        tp = TopicPartition(topic, partition)
        try:
            asked = which[spec] if isinstance(spec, str) else spec
            return int(admin.list_partition_offsets({tp: asked})[tp].offset)
        except KafkaError as exc:
            raise ClientError(_name(exc)) from exc
        finally:
            admin.close()

    def group_consume(self, bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
        """Subscribe as a member of `group`, take `n` records, commit after them, leave."""
        consumer = _member(bootstrap, topic, group)
        got: list[Rec] = []
        deadline = time.monotonic() + 60
        try:
            while len(got) < n and time.monotonic() < deadline:
                for msgs in consumer.poll(timeout_ms=500).values():
                    got += [
                        Rec(m.key, m.value, (), m.timestamp, m.offset, m.partition) for m in msgs
                    ]
            got = got[:n]
            ends = {r.partition: r.offset + 1 for r in got}
            if ends:
                consumer.commit(
                    {
                        TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                        for p, o in ends.items()
                    }
                )
        except KafkaError as exc:
            raise ClientError(_name(exc)) from exc
        finally:
            consumer.close()
        return got

    def committed(self, bootstrap: str, group: str, topic: str, partition: int) -> int | None:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
        try:
            offset = consumer.committed(TopicPartition(topic, partition))
        except KafkaError as exc:
            raise ClientError(_name(exc)) from exc
        finally:
            consumer.close()
        return None if offset is None else int(offset)

    def member_loop(
        self, bootstrap: str, topic: str, group: str, stop: threading.Event,
        report: Callable[[frozenset[int]], None],
    ) -> None:  # fmt: skip
        consumer = _member(bootstrap, topic, group)
        try:
            while not stop.is_set():
                consumer.poll(timeout_ms=200)
                report(frozenset(tp.partition for tp in consumer.assignment()))
        finally:
            consumer.close()


def _member(bootstrap: str, topic: str, group: str) -> KafkaConsumer:
    """A group member that commits explicitly and starts from the earliest offset."""
    return KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
