"""Compacted topics: Pulsar compacts, kop notes where the survivors' offsets are.

A cycle, run by the partition's owner every `compaction_interval_s` while there
is new data:
1. `E` = the last entry the tail follower counted (its offsets are known);
2. Pulsar compacts the partition up to at least `E`;
3. the survey: the compacted view is read from the beginning up to `E`, beside
   a count of the live entries after the previous horizon, and every surviving
   entry gets its base offset (`Survivor`); entries below the previous horizon
   keep the one noted then;
4. the survivors and the new horizon are persisted (`CheckpointStore`);
5. only then does the pin (a durable subscription of kop's own) move to `E`, so
   Pulsar's retention may delete the ledgers below: their survivors' offsets are
   safe. A cycle cut short anywhere leaves the pin, and the next repeats it.

The live ledgers are served in full as long as they exist (Kafka's uncleaned
head); the compacted view only below them (`reads.py`). So what a
Kafka consumer sees compacted is what retention has deleted from the live log,
and a topic's Pulsar retention time decides the tombstone delay (docs/decisions.md D10).
"""

from __future__ import annotations

import asyncio
import logging

from kop.log.checkpoint_store import CheckpointStore
from kop.log.compacted.survivors import Horizon, Survivor, SurvivorIndex
from kop.log.counting import Anchor, LogCounter, LogEntry, TrimDetected
from kop.log.offset_index import OffsetIndex
from kop.log.settings import LogSettings
from kop.log.stats import LogStats
from kop.storage.port import Compaction, MessageLog, TopicReader
from kop.storage.types import Idle, Position, StorageError, StoredEntry

log = logging.getLogger(__name__)


class Compactor:
    def __init__(
        self,
        storage: MessageLog,
        port: Compaction,
        store: CheckpointStore,
        topic: str,
        index: OffsetIndex,
        survivors: SurvivorIndex,
        stats: LogStats,
        settings: LogSettings,
    ) -> None:
        self._storage = storage
        self._port = port
        self._store = store
        self._topic = topic
        self._index = index
        self._survivors = survivors
        self._stats = stats
        self._settings = settings
        self._lock = asyncio.Lock()
        # Offsets below this are noted and pinned (a cycle ran to its end): the live
        # ledgers below may go (operators, and tests that truncate on demand, wait on it).
        self.noted_offset = 0

    async def pin(self) -> None:
        """Keep what no pass has covered yet (at open: a new partition from its start)."""
        horizon = self._survivors.horizon
        await self._port.pin(self._topic, horizon.position if horizon else None)
        self.noted_offset = horizon.next_offset if horizon else 0

    async def run_forever(self) -> None:
        while True:
            await asyncio.sleep(self._settings.compaction_interval_s)
            try:
                await self.cycle()
            except (StorageError, TrimDetected) as exc:
                # TrimDetected: the first pass began where retention just deleted;
                # the next cycle begins at the new data start.
                self._stats.add("compaction_failures")
                log.warning("%s: compaction cycle: %s", self._topic, exc)

    async def cycle(self) -> bool:
        """One cycle (module doc); False when there was nothing new to compact."""
        async with self._lock:
            mark = self._index.mark
            old = self._survivors.horizon
            if mark is None or (old is not None and mark.position <= old.position):
                return False
            await self._port.compact(self._topic)
            start = old.start if old is not None else self._index.data_start
            survivors = await self._survey(old, mark.position)
            horizon = Horizon(mark.position, mark.next_offset, start)
            self._survivors.replace(survivors, horizon)
            changes = self._survivors.take_changes()
            try:
                await self._store.save_survivors(self._topic, *changes)
            except BaseException:
                self._survivors.return_changes(*changes)
                raise
            await self._port.pin(self._topic, horizon.position)
            self.noted_offset = horizon.next_offset
            self._stats.add("compactions")
            log.info(
                "%s: compacted up to offset %d: %d surviving entries",
                self._topic, horizon.next_offset, len(survivors),
            )  # fmt: skip
            return True

    async def _survey(self, old: Horizon | None, end: Position) -> list[Survivor]:
        """The surviving entries up to `end` (a Position) with their base offsets."""
        live = _LiveCount(self._storage, self._topic, self._index, old)
        compacted = await self._storage.reader(self._topic, None, compacted=True)
        found: list[Survivor] = []
        try:
            async with asyncio.timeout(self._settings.write_timeout_s * 4):
                compacted.report_idle()
                while not isinstance(e := await compacted.read(), Idle):
                    key = e.position.entry_key
                    if key > end.entry_key:
                        break
                    if old is not None and key <= old.position.entry_key:
                        base = self._survivors.at_entry(key)
                    else:
                        base = await live.base_of(e)
                    if base is None:
                        self._stats.add("compaction_unknown_entries")
                        log.warning("%s: surviving entry %s has no known offset", self._topic, key)
                        continue
                    found.append(Survivor(base, key[0], key[1], e.publish_time))
        except TimeoutError:
            raise StorageError(f"{self._topic}: the compaction survey timed out") from None
        finally:
            await compacted.close()
            await live.close()
        return found


class _LiveCount:
    """Counts the live entries after the previous horizon, in step with the survey."""

    def __init__(
        self, storage: MessageLog, topic: str, index: OffsetIndex, old: Horizon | None
    ) -> None:
        self._storage = storage
        self._topic = topic
        first = index.first
        if old is not None and (first is None or first.offset < old.next_offset):
            self._anchor = Anchor(old.position, old.next_offset, inclusive=False)
        elif first is not None:
            # No horizon yet, or its own entry is gone (a truncate, a backlog quota's
            # eviction: what moved kop's pin too): count from where the live data
            # begins. A survivor between the two has no known offset (logged), lost.
            self._anchor = Anchor(first.position, first.offset)
        else:
            self._anchor = Anchor(None, 0)
        self._reader: TopicReader | None = None
        self._counter = LogCounter(self._anchor)
        self._last: LogEntry | None = None

    async def base_of(self, survivor: StoredEntry) -> int | None:
        """The base offset of the live entry the survivor was, or None when the
        live log does not hold it."""
        key = survivor.position.entry_key
        if self._reader is None:
            self._reader = await self._storage.reader(self._topic, self._anchor.position)
        while self._last is None or self._last.position.entry_key < key:
            self._reader.report_idle()
            e = await self._reader.read()
            if isinstance(e, Idle):
                return None
            item = self._counter.feed(e)
            if item is not None:
                self._last = item
        return self._last.base_offset if self._last.position.entry_key == key else None

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()
