"""confluent-kafka (librdkafka), as an application would use it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from conformance.clients.base import ClientError
from conformance.clients.base import OffsetSpec as Spec
from conformance.model import Rec


class ConfluentKafka:
    name = "confluent-kafka"
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
        **extra: Any,
    ) -> list[int]:
        conf = {
            "bootstrap.servers": bootstrap,
            "message.max.bytes": max_request_bytes,
            "linger.ms": 5,
            "compression.type": compression or "none",
            "enable.idempotence": idempotent,
            "message.timeout.ms": 30000,
            **extra,
        }
        producer = Producer(conf)
        offsets: dict[int, int] = {}
        errors: list[KafkaError] = []

        def done(i: int) -> Any:
            def cb(err: KafkaError | None, msg: Any) -> None:
                if err is not None:
                    errors.append(err)
                else:
                    offsets[i] = msg.offset()

            return cb

        for i, r in enumerate(recs):
            try:
                producer.produce(
                    topic,
                    value=r.value,
                    key=r.key,
                    headers=list(r.headers),
                    timestamp=max(r.timestamp, 0),
                    partition=r.partition,
                    on_delivery=done(i),
                )
            except KafkaException as exc:
                raise ClientError(exc.args[0].name()) from exc
            producer.poll(0)
        left = producer.flush(60)
        if errors:
            raise ClientError(errors[0].name())
        if left:
            raise ClientError(f"{left} undelivered")
        return [offsets[i] for i in range(len(recs))]

    def consume(
        self,
        bootstrap: str,
        topic: str,
        n: int,
        *,
        partition: int = 0,
        start: int = 0,
        reset: str = "latest",
        within: float = 30.0,
    ) -> list[Rec]:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "conformance-unused",
                "enable.auto.commit": False,
                "auto.offset.reset": reset,
            }
        )
        consumer.assign([TopicPartition(topic, partition, start)])
        got: list[Rec] = []
        deadline = time.monotonic() + within
        try:
            while len(got) < n and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is None:
                    continue
                if m.error() is not None:
                    raise ClientError(m.error().name())
                got.append(
                    Rec(
                        m.key(),
                        m.value(),
                        tuple(m.headers() or ()),
                        m.timestamp()[1],
                        m.offset(),
                        m.partition(),
                    )
                )
        finally:
            consumer.close()
        return got

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: Spec) -> int:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        which = {
            "earliest": OffsetSpec.earliest(),
            "latest": OffsetSpec.latest(),
            "max-timestamp": OffsetSpec.max_timestamp(),
        }
        asked = which[spec] if isinstance(spec, str) else OffsetSpec.for_timestamp(spec)
        tp = TopicPartition(topic, partition)
        try:
            result = admin.list_offsets({tp: asked}, request_timeout=30)[tp].result(30)
        except KafkaException as exc:
            raise ClientError(exc.args[0].name()) from exc
        return int(result.offset)

    def group_consume(self, bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
        """Subscribe as a member of `group`, take `n` records, commit after them, leave."""
        consumer = _member(bootstrap, group)
        consumer.subscribe([topic])
        got: list[Rec] = []
        deadline = time.monotonic() + 60
        try:
            while len(got) < n and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is None:
                    continue
                if m.error() is not None:
                    raise ClientError(m.error().name())
                got.append(Rec(m.key(), m.value(), (), m.timestamp()[1], m.offset(), m.partition()))
            ends = {r.partition: r.offset + 1 for r in got}
            if ends:
                consumer.commit(
                    offsets=[TopicPartition(topic, p, o) for p, o in ends.items()],
                    asynchronous=False,
                )
        except KafkaException as exc:
            raise ClientError(exc.args[0].name()) from exc
        finally:
            consumer.close()
        return got

    def committed(self, bootstrap: str, group: str, topic: str, partition: int) -> int | None:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        try:
            tp = consumer.committed([TopicPartition(topic, partition)], timeout=30)[0]
        except KafkaException as exc:
            raise ClientError(exc.args[0].name()) from exc
        finally:
            consumer.close()
        return None if tp.offset < 0 else int(tp.offset)

    def member_loop(
        self, bootstrap: str, topic: str, group: str, stop: threading.Event,
        report: Callable[[frozenset[int]], None], **conf: Any,
    ) -> None:  # fmt: skip
        """Extra `conf` (e.g. group.instance.id, partition.assignment.strategy) goes to
        the consumer; a `revoked` list in it collects each revocation, as partition
        lists. A static member (group.instance.id) does not leave when it closes."""
        revoked: list[list[int]] | None = conf.pop("revoked", None)
        consumer = _member(bootstrap, group, **conf)

        def on_revoke(c: Any, parts: list[TopicPartition]) -> None:
            if revoked is not None:
                revoked.append(sorted(tp.partition for tp in parts))

        consumer.subscribe([topic], on_revoke=on_revoke)
        try:
            while not stop.is_set():
                consumer.poll(0.2)
                report(frozenset(tp.partition for tp in consumer.assignment()))
        finally:
            consumer.close()


def _member(bootstrap: str, group: str, **conf: Any) -> Consumer:
    """A group member that commits explicitly and starts from the earliest offset."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **conf,
        }
    )
