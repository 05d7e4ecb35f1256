"""Reads of a compacted topic below its live ledgers: from Pulsar's compacted view.

Every entry there is one a compaction pass noted (`survivors.py`), so its base
offset is known without counting; what compaction removed is a gap, and a fetch
from a missing offset gets the next record, as with Kafka. Reads stream: one
Pulsar reader (with `readCompacted`) per read, starting at the survivor at or
below the offset asked for, never the whole compacted ledger in memory.
"""

from __future__ import annotations

import asyncio

from kop.log import compacted_entries
from kop.log.counting import LogEntry
from kop.log.settings import LogSettings
from kop.log.stats import LogStats
from kop.log.survivors import SurvivorIndex
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.port import MessageLog
from kop.storage.types import Idle, StorageError


class CompactedReads:
    def __init__(
        self,
        storage: MessageLog,
        topic: str,
        survivors: SurvivorIndex,
        stats: LogStats,
        settings: LogSettings,
    ) -> None:
        self._storage = storage
        self._topic = topic
        self._survivors = survivors
        self._stats = stats
        self._settings = settings

    async def read(
        self, offset: int, end: int, max_bytes: int, min_one: bool = True
    ) -> tuple[list[LogEntry], bool]:
        """Surviving entries holding offsets >= `offset` and below `end` (where the
        live ledgers begin), each while it fits in `max_bytes` (with `min_one` the
        first whatever its size, KIP-74), and whether they reach `end`: False when
        the next one did not fit."""
        below = self._survivors.floor(offset)
        try:
            reader = await self._storage.reader(
                self._topic,
                below.position if below is not None else None,
                compacted=True,
                prefetch=self._settings.history_prefetch,
            )
        except StorageError as exc:
            raise KafkaError(ErrorCode.kafka_storage_error, str(exc)) from exc
        self._stats.add("compacted_readers")
        out: list[LogEntry] = []
        size = 0
        try:
            async with asyncio.timeout(self._settings.write_timeout_s):
                reader.report_idle()
                while True:
                    e = await reader.read()
                    if isinstance(e, Idle):
                        break
                    horizon = self._survivors.horizon
                    if horizon is None or e.position.entry_key > horizon.position.entry_key:
                        break  # past what a pass noted: the live ledgers serve it
                    base = self._survivors.at_entry(e.position.entry_key)
                    if base is None:
                        continue  # a survey skipped it (it logged why)
                    if base >= end:
                        break
                    item = LogEntry(base, e.position, compacted_entries.decode(e, base))
                    if item.last_offset < offset:
                        continue
                    if size + item.entry.size > max_bytes and (out or not min_one):
                        return out, False
                    out.append(item)
                    size += item.entry.size
        except (TimeoutError, StorageError) as exc:
            raise KafkaError(
                ErrorCode.kafka_storage_error, f"reading compacted {self._topic}: {exc!r}"
            ) from exc
        finally:
            await reader.close()
        return out, True
