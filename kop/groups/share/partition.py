"""One share group's share-partition on the instance that leads the partition: the
Pulsar Shared subscription's deliveries counted into Kafka offsets and held
(`records.py`), acquired by fetches, acknowledged, expired, answered to Pulsar (D27).

A task takes deliveries while fewer than `hold` records wait unacquired (Pulsar gives
the rest to the subscription's other consumers meanwhile). A delivery is served by
the partition log's counted entry at its position: its base offset and its records
as Kafka batches. A transaction marker is no record of a share group's: it is
acknowledged as it arrives. A delivery the log cannot count (a chunk of a chunked
message) is given back until its delivery limit, then acknowledged as archived.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

from kop.groups.share.dead_letters import DeadLetterPolicy, DeadLetterSink, send_letters
from kop.groups.share.records import (
    AckBatch,
    Acquired,
    Dead,
    Settled,
    ShareLimits,
    ShareRecords,
)
from kop.log.counting import LogEntry
from kop.log.partition_log import PartitionLog
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.port import SharedSubscription
from kop.storage.types import Delivered, StaleDelivery, StorageError

log = logging.getLogger(__name__)

COUNT_WAIT_S = 5.0  # how long a delivery may wait for the log to count its entry


class SharePartition:
    def __init__(
        self,
        plog: PartitionLog,
        subscription: SharedSubscription,
        limits: ShareLimits,
        clock: Callable[[], int],
        hold: int = 500,
        *,
        source: tuple[str, int] | None = None,
        dead_letters: DeadLetterSink | None = None,
    ) -> None:
        self.plog = plog
        self.subscription = subscription
        self.records: ShareRecords[Delivered] = ShareRecords(limits)
        self._items: dict[int, LogEntry] = {}  # base offset -> the counted entry held
        self._clock = clock
        self._hold = hold
        self._waiters: list[asyncio.Future[None]] = []
        self._room = asyncio.Event()
        self._epoch = subscription.epoch
        self.last_used_s = asyncio.get_running_loop().time()
        self.failed: StorageError | None = None
        # the partition as the group's members name it, and where its dead letters go
        self.source = source if source is not None else (plog.topic, 0)
        self.dead_letters = dead_letters
        self.policy = DeadLetterPolicy("", "")
        self._task = asyncio.get_running_loop().create_task(self._pump())

    def configure(self, limits: ShareLimits, policy: DeadLetterPolicy) -> None:
        """The group's settings as of its latest fetch."""
        self.records.limits = limits
        self.policy = policy

    # -- what fetches and acknowledgements do ------------------------------------------

    def acquire(
        self, member: str, max_records: int, max_bytes: int, strict: bool = False
    ) -> tuple[list[Acquired], bytes]:
        """Records for `member`, whole entries at a time, until `max_records` or
        `max_bytes` is reached (the first entry whatever its size); and the batches
        that hold them, in offset order. `strict` (the record-limit acquire mode): never
        more than `max_records`, the last entry's records acquired only in part (its
        batches are served whole; the acquired ranges say which records are the
        member's, as Kafka answers)."""
        self.last_used_s = asyncio.get_running_loop().time()
        got: list[Acquired] = []
        bases: list[int] = []
        size = records = 0
        now = self._clock()
        while records < max_records and (size < max_bytes or not got):
            more = self.records.acquire(member, 1, now, max_records - records if strict else None)
            if not more:
                break
            got += more
            records += sum(a.last - a.first + 1 for a in more)
            for base in dict.fromkeys(a.base for a in more):
                if base not in bases:
                    bases.append(base)
                    size += self._items[base].entry.size
        self._room.set()
        data = b"".join(self._items[b].entry.data for b in sorted(bases))
        return sorted(got, key=lambda a: a.first), data

    async def acknowledge(
        self, member: str, batches: Sequence[AckBatch], renew: bool = True
    ) -> None:
        """KafkaError with the partition's acknowledgement error, or done once Pulsar
        has every entry it completed."""
        self.last_used_s = asyncio.get_running_loop().time()
        await self._settle(self.records.acknowledge(member, batches, self._clock(), renew))

    async def release_member(self, member: str) -> None:
        await self._settle(self.records.release_member(member))

    async def expire(self) -> None:
        await self._settle(self.records.expire(self._clock()))

    def changed(self) -> asyncio.Future[None]:
        """Resolved when records become available to acquire."""
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        return fut

    @property
    def idle(self) -> bool:
        return self.records.acquired == 0

    async def close(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self.subscription.close()  # what it held goes back to the subscription
        self._wake()

    # -- inside ----------------------------------------------------------------------

    async def _settle(self, settled: Settled[Delivered]) -> None:
        if settled.dead:  # before Pulsar hears of them: a letter first, then the ack
            await self._write_letters(settled.dead)
        for d in settled.ack + settled.release:
            self._forget(d)
        self.subscription.release(settled.release)
        if settled.release:
            self._room.set()
        try:
            await self.subscription.ack(settled.ack)
        except StaleDelivery:
            pass  # Pulsar took them back already: they come again, at least once (D27)
        except StorageError as exc:
            raise KafkaError(ErrorCode.request_timed_out, f"acknowledging: {exc}") from exc

    async def _write_letters(self, dead: list[Dead]) -> None:
        await send_letters(self.policy, self.dead_letters, self.source, dead, self._items)

    def _forget(self, d: Delivered) -> None:
        for base, item in list(self._items.items()):
            if item.position.entry_key == d.position.entry_key:
                del self._items[base]

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def _pump(self) -> None:
        try:
            while True:
                while self.records.available >= self._hold:
                    self._room.clear()
                    await self._room.wait()
                await self._take(await self.subscription.receive())
        except StorageError as exc:
            self.failed = exc
            log.warning("share partition %s stopped: %s", self.plog.topic, exc)
            self._wake()

    async def _take(self, d: Delivered) -> None:
        if d.epoch != self._epoch:  # attached anew: what the old attachment held went back
            self._epoch = d.epoch
            self.records.drop(lambda held: held.epoch == d.epoch)
            kept = {h.position.entry_key for h in self._held()}
            self._items = {b: i for b, i in self._items.items() if i.position.entry_key in kept}
        item = await self._counted(d)
        limit = self.records.limits.delivery_limit
        if item is None:
            if d.redeliveries + 1 >= limit:
                await self._settle(Settled(ack=[d]))
            else:
                self.subscription.release([d])
            return
        if item.entry.marker is not None:
            await self._settle(Settled(ack=[d]))  # a control record is nobody's to consume
            return
        self._items[item.base_offset] = item
        self.records.offer(d, item.base_offset, item.entry.count, d.redeliveries)
        self._wake()

    def _held(self) -> list[Delivered]:
        return self.records.tokens()

    async def _counted(self, d: Delivered) -> LogEntry | None:
        """The log's entry at the delivery's position, once the log has counted it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + COUNT_WAIT_S
        while True:
            changed = self.plog.data_changed()
            try:
                item = await self.plog.entry_at(d.position)
            except KafkaError as exc:
                log.info("share partition %s: %s at %s", self.plog.topic, exc, d.position)
                changed.cancel()
                return None
            remaining = deadline - loop.time()
            if item is not None or remaining <= 0:
                changed.cancel()
                return item
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed, remaining)
