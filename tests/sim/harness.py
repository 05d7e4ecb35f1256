"""A kop "node" (log manager, checkpoint store, partition logs) over the in-memory
log, on the simulated loop: start it, stop it cleanly, crash it, start another.
Plus small builders for what Kafka producers send."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from kop.entries.formats import EntryFormat
from kop.log.checkpoint_store import CheckpointStore
from kop.log.partition_log import LogSettings, PartitionLog
from kop.partitions.manager import LogManager
from kop.protocol.errors import KafkaError
from kop.protocol.records import Record, build_batch, iter_records, split_batches
from kop.storage.port import Compaction
from tests.sim.clock import SimLoop
from tests.sim.memory_log import MemoryLog

INDEX_TOPIC = "persistent://public/__kop/offset-index"
TOPIC = "persistent://public/default/t-partition-0"
TS = 1_700_000_000_000


@dataclass(frozen=True)
class Producer:
    """An idempotent Kafka producer's identity (pid -1: not idempotent)."""

    pid: int = -1
    epoch: int = 0


def batch(
    values: Sequence[bytes | None],
    producer: Producer = Producer(),
    seq: int = 0,
    compression: int = 0,
) -> bytes:
    records = [Record(i, TS + i, None, v) for i, v in enumerate(values)]
    idempotent = producer.pid >= 0
    return build_batch(
        records,
        compression=compression,
        producer_id=producer.pid,
        producer_epoch=producer.epoch if idempotent else -1,
        base_sequence=seq if idempotent else -1,
    )


class Node:
    def __init__(
        self,
        loop: SimLoop,
        log: MemoryLog,
        settings: LogSettings,
        compaction: Compaction | None = None,
        compacted: bool | None = None,
    ) -> None:
        self.loop = loop
        self.log = log
        self.settings = settings
        self.manager: LogManager | None = None
        self._compaction = compaction
        self._compacted = compacted  # what the node's partitions are opened as

    def start(self) -> None:
        store = CheckpointStore(self.log, INDEX_TOPIC)
        self.manager = LogManager(self.log, store, self.settings, compaction=self._compaction)
        self.loop.run(self.manager.start(), within=60)

    def partition(self, topic: str = TOPIC) -> PartitionLog:
        assert self.manager is not None
        return self.loop.run(self.manager.partition(topic, compacted=self._compacted), within=120)

    def stop(self) -> None:
        """A clean stop: everything is flushed."""
        assert self.manager is not None
        self.loop.run(self.manager.close(), within=60)
        self.loop.run(self.log.close(), within=60)
        self.manager = None

    def crash(self) -> None:
        """kill -9: every task of this node stops where it is; nothing is flushed."""
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.run_until_complete(asyncio.sleep(0))
        for writer in self.log.writers.values():
            writer.lost()
        self.log.writers.clear()
        self.manager = None

    # -- what clients do --------------------------------------------------------

    def produce(
        self,
        data: bytes,
        fmt: EntryFormat = EntryFormat.PULSAR,
        topic: str = TOPIC,
        batching: bool = True,
    ) -> int | KafkaError:
        """One Produce of `data` (record batches); its base offset or its error."""
        try:
            plog = self.partition(topic)
        except KafkaError as exc:  # not (or no longer) this node's to write
            return exc

        async def go() -> int | KafkaError:
            try:
                batches = split_batches(data, max_batch_bytes=1 << 20)
                done = await plog.begin_append(batches, fmt, batching)
                return await done
            except KafkaError as exc:
                return exc

        return self.loop.run(go(), within=self.settings.write_timeout_s + 10)

    def produce_stream(
        self,
        batches: Sequence[bytes],
        fmt: EntryFormat = EntryFormat.PULSAR,
        between: Callable[[int], None] = lambda _i: None,
        topic: str = TOPIC,
    ) -> list[int | KafkaError]:
        """Produces pipelined, as a client with several requests in flight does (a
        millisecond apart; `between(i)` runs after the i-th is sent): their base
        offsets or errors."""
        plog = self.partition(topic)

        async def go() -> list[int | KafkaError]:
            pending: list[Awaitable[int] | KafkaError] = []
            for i, data in enumerate(batches):
                try:
                    batches_ = split_batches(data, max_batch_bytes=1 << 20)
                    pending.append(await plog.begin_append(batches_, fmt))
                except KafkaError as exc:
                    pending.append(exc)
                between(i)
                await asyncio.sleep(0.001)
            out: list[int | KafkaError] = []
            for p in pending:
                try:
                    out.append(p if isinstance(p, KafkaError) else await p)
                except KafkaError as exc:
                    out.append(exc)
            return out

        return self.loop.run(go(), within=self.settings.write_timeout_s * 2 + 10)

    def fetch(self, offset: int, topic: str = TOPIC) -> list[tuple[int, bytes | None]] | KafkaError:
        """Everything from `offset` to the high watermark, as (offset, value)."""
        got = self.fetch_records(offset, topic)
        return got if isinstance(got, KafkaError) else [(r.offset, r.value) for r in got]

    def fetch_records(self, offset: int, topic: str = TOPIC) -> list[Record] | KafkaError:
        """Everything from `offset` to the high watermark, fetch after fetch as a
        consumer does (each fetch starts after the last record it got)."""
        plog = self.partition(topic)

        async def go() -> list[Record] | KafkaError:
            out: list[Record] = []
            at = offset
            try:
                while at < plog.high_watermark:
                    data = await plog.read(at, 1 << 20)
                    got = [r for r in iter_records_all(data) if r.offset >= at]
                    if not got:
                        return out
                    out.extend(got)
                    at = got[-1].offset + 1
                return out
            except KafkaError as exc:
                return exc

        return self.loop.run(go(), within=self.settings.write_timeout_s + 10)


def iter_records_all(data: bytes) -> list[Record]:
    """Every record of a fetch response's concatenated batches."""
    out: list[Record] = []
    pos = 0
    while pos < len(data):
        length = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
        out.extend(iter_records(data[pos : pos + length]))
        pos += length
    return out
