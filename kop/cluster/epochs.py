"""Leader epochs, one per partition, shared by every instance through a compacted
Pulsar topic (`kop-leader-epochs` in the system namespace; kept, compacted).

An instance that opens a partition to serve it takes the next epoch: it reads the
table to the topic's end, writes `epoch + 1` under the partition's key, and serves
only once Pulsar has acknowledged it. "To the end" is up to a barrier it writes
itself (key `sync|<node id>`, never a partition's: those are Pulsar topic names) and
reads back (kop.systables.barrier).

Every instance tails the topic. Each take names the instance (process) that took
it, so every instance can tell the epoch a partition's owner leads it in, also
before the owner has opened it (partitions open on first use): the last epoch
taken if the owner took it, else the next. Metadata from any instance thus names
the epoch the owner will check, and a client holding an older one is told
FENCED_LEADER_EPOCH and refreshes, as with Kafka brokers.

A deleted topic's partitions get tombstones (the next one made under the name
starts at 0). Read by the tail, they also tell every instance of the deletion, as
Kafka's metadata log tells every broker: `on_deleted` removes the committed offsets
of the groups each instance coordinates (the instance that ran DeleteTopics can only
remove its own). Tombstones read at start are history and are not told.

Two instances that both believe they own a partition (views disagree for a
moment) may take the same epoch; Pulsar's fence on the partition's writer, not
the epoch, keeps the stale one's writes out. A partition no instance has served
yet is at epoch 0, as a new Kafka partition is.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from typing import NamedTuple

from kop.aio.futures import cancel_and_wait
from kop.cluster.member import Member
from kop.storage import batch_layout
from kop.storage.port import MessageLog, TopicReader
from kop.storage.types import (
    Idle,
    OutgoingEntry,
    OutgoingMessage,
    StorageUnavailable,
    StoredEntry,
)
from kop.systables.barrier import EPOCHS, Barriers

log = logging.getLogger(__name__)

FIRST_EPOCH = 0


class Taken(NamedTuple):
    epoch: int
    instance: str  # the process that took it (Member.instance)


class LeaderEpochs:
    def __init__(
        self, storage: MessageLog, topic: str, me: Member, catch_up_s: float = 10.0
    ) -> None:
        self.topic = topic
        self._storage = storage
        self._me = me
        self._catch_up_s = catch_up_s
        self._table: dict[str, Taken] = {}
        self._barriers = Barriers(EPOCHS)  # written, not yet read back
        self._tail: asyncio.Task[None] | None = None
        self._catching_up: asyncio.Future[None] | None = None
        self._live = False  # the tail is past what the topic held at start
        self.on_deleted: Callable[[list[str]], None] = lambda _partitions: None
        self.malformed = 0

    async def start(self) -> None:
        """Read the table as it is, then follow it."""
        reader = await self._storage.reader(self.topic, None, compacted=True)
        reader.report_idle()
        try:
            while not isinstance(got := await reader.read(), Idle):
                self._apply(got)
        except BaseException:
            await reader.close()
            raise
        log.info("%d partitions have a leader epoch in %s", len(self._table), self.topic)
        self._live = True
        self._tail = asyncio.create_task(self._follow(reader), name="leader-epochs")

    async def close(self) -> None:
        if self._tail is not None:
            await cancel_and_wait(self._tail)

    def of(self, partition: str, leader: str) -> int:
        """The epoch the instance `leader` leads the partition in, as last read: the
        last one taken if it took it, else the one it will take (0 if none was)."""
        taken = self._table.get(partition)
        if taken is None:
            return FIRST_EPOCH
        return taken.epoch if taken.instance == leader else taken.epoch + 1

    def taken_elsewhere(self) -> list[str]:
        """The partitions another process took last: served elsewhere, or before a
        restart of this instance."""
        me = self._me.instance
        return [p for p, taken in self._table.items() if taken.instance != me]

    async def take(self, partition: str) -> int:
        """The next epoch of `partition`, persisted: this instance now leads it."""
        await self._caught_up()
        known = self._table.get(partition)
        epoch = FIRST_EPOCH if known is None else known.epoch + 1
        me = self._me
        body = json.dumps({"epoch": epoch, "node": me.node_id, "instance": me.instance})
        writer = await self._storage.writer(self.topic)
        message = OutgoingMessage(body.encode(), {}, partition, None)
        await writer.send_all([OutgoingEntry.of(message)])[1]
        self._note(partition, Taken(epoch, me.instance))
        return epoch

    async def forget(self, partitions: Sequence[str]) -> None:
        """The partitions' topic is deleted: a topic made again under its name starts
        at epoch 0, as in Kafka (it gets a new topic id, so clients drop the old epochs).
        Every partition gets a tombstone, taken or not: the other instances learn of
        the deletion from it."""
        if not partitions:
            return
        tombstones = [OutgoingEntry.of(OutgoingMessage(None, {}, p, None)) for p in partitions]
        writer = await self._storage.writer(self.topic)
        await writer.send_all(tombstones)[1]
        for p in partitions:
            self._table.pop(p, None)

    async def _caught_up(self) -> None:
        """Wait until the tail has read what the topic held when this was called;
        calls while one waits share it (what they need was written before it began)."""
        if self._catching_up is None or self._catching_up.done():
            self._catching_up = asyncio.ensure_future(self._read_to_end())
        await asyncio.shield(self._catching_up)

    async def _read_to_end(self) -> None:
        """Write a barrier (kop.systables.barrier) and wait for the tail to read it."""
        marker, read_back = self._barriers.written(str(self._me.node_id))
        try:
            async with asyncio.timeout(self._catch_up_s):
                writer = await self._storage.writer(self.topic)
                await writer.send_all([OutgoingEntry.of(marker)])[1]
                await read_back
        except TimeoutError:
            raise StorageUnavailable(
                f"{self.topic} was not read to its end within {self._catch_up_s:.0f} s"
            ) from None
        finally:
            self._barriers.forget(read_back)

    async def _follow(self, reader: TopicReader) -> None:
        try:
            while True:
                got = await reader.read()
                if not isinstance(got, Idle):
                    self._apply(got)
        finally:
            await reader.close()

    def _apply(self, entry: StoredEntry) -> None:
        deleted = []
        for msg in batch_layout.messages(entry):
            if self._barriers.read(msg):
                continue
            if msg.null_value:
                self._table.pop(msg.partition_key, None)
                deleted.append(msg.partition_key)
                continue
            try:
                body = json.loads(msg.payload)
                taken = Taken(body["epoch"], str(body.get("instance", "")))
                if not isinstance(taken.epoch, int) or taken.epoch < 0:
                    raise ValueError(f"epoch {taken.epoch!r}")
            except (ValueError, KeyError, TypeError) as exc:
                self.malformed += 1
                if self.malformed == 1:
                    log.warning("%s holds a message that is not an epoch: %s", self.topic, exc)
                continue
            self._note(msg.partition_key, taken)
        if deleted and self._live:
            self.on_deleted(deleted)

    def _note(self, partition: str, taken: Taken) -> None:
        """The highest epoch wins (two instances that both took one, in a view change)."""
        known = self._table.get(partition)
        if known is None or taken.epoch >= known.epoch:
            self._table[partition] = taken
