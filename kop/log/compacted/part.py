"""What a compacted partition adds to a partition log: the survivors of Pulsar's
compaction, the cycle that notes them, and the reads below the live ledgers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from kop.aio.futures import cancel_and_wait
from kop.log.checkpoint_store import CheckpointStore, Persisted
from kop.log.compacted.compaction import Compactor
from kop.log.compacted.reads import CompactedReads
from kop.log.compacted.survivors import SurvivorIndex
from kop.log.counting import LogEntry
from kop.log.offset_index import OffsetIndex
from kop.log.settings import LogSettings
from kop.log.stats import LogStats
from kop.storage.port import Compaction, MessageLog


class CompactedPart:
    def __init__(
        self,
        storage: MessageLog,
        port: Compaction,
        store: CheckpointStore,
        topic: str,
        index: OffsetIndex,
        stats: LogStats,
        settings: LogSettings,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._index = index
        self.survivors = SurvivorIndex()
        self.compactor = Compactor(
            storage, port, store, topic, index, self.survivors, stats, settings
        )
        self._reads = CompactedReads(storage, topic, self.survivors, stats, settings)
        self._task: asyncio.Task[None] | None = None
        self.expire_ms: int | None = None  # compact,delete: retention.ms (see `log_start`)
        self._now_ms = now_ms

    def restore(self, persisted: Persisted) -> None:
        self.survivors.restore(list(persisted.survivors.values()), persisted.horizon)

    async def start(self) -> None:
        """Pin what no pass has covered, then compact every `compaction_interval_s`."""
        await self.compactor.pin()
        self._task = asyncio.create_task(self.compactor.run_forever(), name="compaction")

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
        await self._reads.close()

    @property
    def log_start(self) -> int:
        """Where the log began when the first pass ran (Kafka's log start does not
        move with compaction), or the live data start, whichever is lower; the
        DeleteRecords floor above it."""
        horizon = self.survivors.horizon
        start = self._index.data_start
        if horizon is not None:
            start = min(start, horizon.start)
        if self.expire_ms is not None:
            # compact,delete: what compaction kept expires too, oldest first, as
            # Kafka deletes old segments whatever they hold.
            kept = self.survivors.first_at_or_after(self._now_ms() - self.expire_ms)
            live = self._index.data_start
            start = max(start, min(kept.offset, live) if kept else live)
        return max(start, min(self._index.deleted_below, self._index.high_watermark))

    @property
    def noted_offset(self) -> int:
        """Offsets below this are noted and pinned: retention may delete them."""
        return self.compactor.noted_offset

    def below_live(self, offset: int) -> bool:
        return offset < self._index.data_start

    async def read(self, offset: int, max_bytes: int, min_one: bool) -> tuple[list[LogEntry], bool]:
        """Entries below the live ledgers from `offset` (see `CompactedReads`)."""
        return await self._reads.read(offset, self._index.data_start, max_bytes, min_one)
