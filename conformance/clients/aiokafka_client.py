"""aiokafka, as an application would use it (each call runs its own event loop)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError
from aiokafka.structs import TopicPartition

from conformance.clients.base import ClientError, OffsetSpec, Unsupported
from conformance.model import Rec

T = TypeVar("T")


def _sync(work: Coroutine[Any, Any, T]) -> T:
    """Run one call on an event loop of its own, with the client's errors named.

    The loop lives on a worker thread: `asyncio.run` on the caller's thread would
    unset that thread's current loop when done, under a test session's feet."""
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, work).result()
    except KafkaError as exc:
        raise ClientError(type(exc).__name__) from exc


class AioKafka:
    name = "aiokafka"
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
        async def run() -> list[int]:
            producer = AIOKafkaProducer(
                bootstrap_servers=bootstrap,
                max_request_size=max_request_bytes,
                compression_type=None if compression in (None, "none") else compression,
                linger_ms=5,
                enable_idempotence=idempotent,
                acks="all",
            )
            await producer.start()
            try:
                futures = [
                    await producer.send(
                        topic,
                        key=r.key,
                        value=r.value,
                        headers=list(r.headers),
                        timestamp_ms=r.timestamp if r.timestamp >= 0 else None,
                        partition=r.partition,
                    )
                    for r in recs
                ]
                return [(await f).offset for f in futures]
            finally:
                await producer.stop()

        return _sync(run())

    def consume(
        self, bootstrap: str, topic: str, n: int, *, partition: int = 0, start: int = 0
    ) -> list[Rec]:
        async def run() -> list[Rec]:
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
            await consumer.start()
            try:
                tp = TopicPartition(topic, partition)
                consumer.assign([tp])
                consumer.seek(tp, start)
                got: list[Rec] = []
                deadline = time.monotonic() + 30
                while len(got) < n and time.monotonic() < deadline:
                    for msgs in (await consumer.getmany(timeout_ms=500)).values():
                        got += [
                            Rec(
                                m.key, m.value, tuple(m.headers), m.timestamp, m.offset, m.partition
                            )
                            for m in msgs
                        ]
                return got
            finally:
                await consumer.stop()

        return _sync(run())

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: OffsetSpec) -> int:
        if spec == "max-timestamp":
            raise Unsupported("aiokafka has no max-timestamp lookup")

        async def run() -> int:
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
            await consumer.start()
            try:
                tp = TopicPartition(topic, partition)
                if spec == "earliest":
                    return int((await consumer.beginning_offsets([tp]))[tp])
                if spec == "latest":
                    return int((await consumer.end_offsets([tp]))[tp])
                assert isinstance(spec, int)
                found = (await consumer.offsets_for_times({tp: spec}))[tp]
                return -1 if found is None else int(found.offset)
            finally:
                await consumer.stop()

        return _sync(run())

    def group_consume(self, bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
        """Subscribe as a member of `group`, take `n` records, commit after them, leave."""

        async def run() -> list[Rec]:
            consumer = AIOKafkaConsumer(
                topic,
                bootstrap_servers=bootstrap,
                group_id=group,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )
            await consumer.start()
            got: list[Rec] = []
            try:
                deadline = time.monotonic() + 60
                while len(got) < n and time.monotonic() < deadline:
                    for msgs in (await consumer.getmany(timeout_ms=500)).values():
                        got += [
                            Rec(m.key, m.value, (), m.timestamp, m.offset, m.partition)
                            for m in msgs
                        ]
                got = got[:n]
                ends = {r.partition: r.offset + 1 for r in got}
                if ends:
                    await consumer.commit({TopicPartition(topic, p): o for p, o in ends.items()})
                return got
            finally:
                await consumer.stop()

        return _sync(run())

    def committed(self, bootstrap: str, group: str, topic: str, partition: int) -> int | None:
        async def run() -> int | None:
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
            await consumer.start()
            try:
                offset = await consumer.committed(TopicPartition(topic, partition))
                return None if offset is None else int(offset)
            finally:
                await consumer.stop()

        return _sync(run())

    def member_loop(
        self, bootstrap: str, topic: str, group: str, stop: threading.Event,
        report: Callable[[frozenset[int]], None],
    ) -> None:  # fmt: skip
        async def run() -> None:
            consumer = AIOKafkaConsumer(
                topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                auto_offset_reset="earliest",
            )  # fmt: skip
            await consumer.start()
            try:
                while not stop.is_set():
                    await consumer.getmany(timeout_ms=200)
                    report(frozenset(tp.partition for tp in consumer.assignment()))
            finally:
                await consumer.stop()

        asyncio.run(run())
