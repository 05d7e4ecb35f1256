"""Partition ownership: opens partition logs on first use and persists their indexes.

One kop instance owns every partition it is asked about (single-owner
deployment); the flusher is what lets the next owner resume. Memory budgets
(tail buffers, kept history readers) are shared by all partitions it owns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Iterable, Sequence

from kop.log.checkpoint_store import CheckpointStore
from kop.log.partition_log import PartitionLog, Shared
from kop.log.settings import LogSettings
from kop.log.topics import TopicView
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.port import Compaction, MessageLog

log = logging.getLogger(__name__)

_SIDE_BY_SIDE = 64  # partitions closed at once: each close waits on a Pulsar round trip
_MAX_RETRY_S = 30.0  # the longest a partition whose index writes fail waits for the next try
_WARN_EVERY_S = 300.0  # while index writes keep failing, how often that is logged again


async def _side_by_side(calls: Iterable[Awaitable[None]]) -> None:
    """Await all, at most _SIDE_BY_SIDE at a time; the first failure is raised
    after all have finished."""
    gate = asyncio.Semaphore(_SIDE_BY_SIDE)

    async def one(call: Awaitable[None]) -> None:
        async with gate:
            await call

    results = await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r


class LogManager:
    def __init__(
        self,
        storage: MessageLog,
        store: CheckpointStore,
        settings: LogSettings,
        flush_interval_s: float = 1.0,
        compaction: Compaction | None = None,
    ) -> None:
        self._storage = storage
        self._store = store
        self._settings = settings
        self._flush_interval = flush_interval_s
        self._compaction = compaction
        self.shared = Shared.for_settings(settings)
        self.stats = self.shared.stats
        self._logs: dict[str, PartitionLog] = {}
        self._opening: dict[str, asyncio.Task[PartitionLog]] = {}
        self._flusher: asyncio.Task[None] | None = None
        self._flush_lock = asyncio.Lock()
        # Partitions whose index write failed: (next try, current backoff).
        self._retry_at: dict[str, tuple[float, float]] = {}
        self._warned_at: float | None = None  # during a spell of failed index writes

    @property
    def settings(self) -> LogSettings:
        return self._settings

    async def start(self) -> None:
        self._flusher = asyncio.create_task(self._flush_forever(), name="checkpoint-flusher")

    def owned(self) -> dict[str, PartitionLog]:
        return dict(self._logs)

    async def partition(
        self,
        topic: str,
        wait_s: float | None = None,
        compacted: bool | None = None,
        expire_ms: int | None = None,
    ) -> PartitionLog:
        """See `_partition`; `expire_ms`: a compacted topic's survivors expire after it
        (`compact,delete`), as its config says now."""
        plog = await self._partition(topic, wait_s, compacted)
        if compacted and plog.compacted is not None:
            plog.compacted.expire_ms = expire_ms
        return plog

    async def of_topic(self, view: TopicView, index: int) -> PartitionLog:
        """Partition `index` of a topic, opened as its cleanup policy says."""
        return await self.partition(
            view.partition_topic(index),
            compacted=view.compacted,
            expire_ms=view.compacted_expire_ms,
        )

    async def _partition(
        self, topic: str, wait_s: float | None, compacted: bool | None
    ) -> PartitionLog:
        """The partition's log, opened on first use. Opening (loading its index and
        catching up from it) goes on in the background; a caller waits at most
        `wait_s` (default `open_wait_s`) and meanwhile gets a retriable
        LEADER_NOT_AVAILABLE, as from a Kafka broker still loading a partition.
        `compacted`: the topic's cleanup policy compacts (None: unknown to the
        caller); a partition open the other way is reopened (a config changed)."""
        existing = self._logs.get(topic)
        if existing is not None:
            if compacted is None or (existing.compacted is not None) == compacted:
                return existing
            await self.drop_open(topic)
        task = self._opening.get(topic)
        if task is None:
            want = bool(compacted) and self._compaction is not None
            task = asyncio.create_task(self._open(topic, want), name=f"open:{topic}")
            self._opening[topic] = task
            task.add_done_callback(lambda _t: self._opening.pop(topic, None))
        wait = (
            self._settings.open_wait_s
            if wait_s is None
            else min(wait_s, self._settings.open_wait_s)
        )
        try:
            async with asyncio.timeout(max(0.0, wait)):
                return await asyncio.shield(task)
        except TimeoutError:
            raise KafkaError(
                ErrorCode.leader_not_available, f"{topic} is still catching up with Pulsar"
            ) from None

    async def _open(self, topic: str, compacted: bool = False) -> PartitionLog:
        plog = PartitionLog(
            self._storage, self._store, topic, self._settings, self.shared,
            self._compaction if compacted else None,
        )  # fmt: skip
        try:
            await plog.open()
        except BaseException:
            await plog.close()
            raise
        self._logs[topic] = plog
        return plog

    async def drop_open(self, topic: str) -> None:
        """Close a partition's log (its index persisted first); the next use reopens it."""
        await self.flush(final=True)
        async with self._flush_lock:
            plog = self._logs.pop(topic, None)
            if plog is not None:
                await plog.close()

    async def drop(self, topics: Sequence[str]) -> None:
        """The Pulsar partitions are being deleted: stop following them and forget
        their indexes. Partitions let go side by side (a topic may have thousands)."""
        async with self._flush_lock:  # a flush in flight must not re-add its checkpoints
            plogs = [p for p in (self._logs.pop(t, None) for t in topics) if p is not None]
            for t in topics:
                self._retry_at.pop(t, None)
            await _side_by_side(p.close() for p in plogs)
            await _side_by_side(self._storage.close_writer(t) for t in topics)
            await _side_by_side(self._store.forget(t) for t in topics)

    async def flush(self, final: bool = False) -> None:
        """Persist every partition's index changes, the sends pipelined and each
        bounded by `write_timeout_s`: a dead index topic holds a flush (and a stop)
        that long, not that long per partition. A failed write keeps its changes for
        a later flush, after a backoff; `final` (the stop) tries every partition now."""
        async with self._flush_lock:
            now = asyncio.get_running_loop().time()
            due = [
                (topic, plog)
                for topic, plog in list(self._logs.items())
                if final or self._retry_at.get(topic, (0.0, 0.0))[0] <= now
            ]
            results = await asyncio.gather(*(self._save(t, p) for t, p in due))
        outcome = {topic: why for (topic, _), why in zip(due, results, strict=True)}
        self._report(outcome, final)

    async def _save(self, topic: str, plog: PartitionLog) -> str | None:
        """Persist one partition's changes; None, or why it failed."""
        changes = plog.take_changes()
        if not changes:
            return None
        timeout = self._settings.write_timeout_s
        try:
            async with asyncio.timeout(timeout):
                await self._store.save(
                    topic, changes.created, changes.dropped, changes.mark, changes.producers
                )
        except BaseException as exc:
            # Kept for the next flush, whatever happened (a stop cancels a flush in
            # flight: its checkpoints must not be lost). The write may still be stored,
            # late or never: it holds facts about the log, true in any order.
            plog.return_changes(changes)
            if not isinstance(exc, Exception):
                raise
            plog.stats.add("index_write_failures")
            return f"not stored within {timeout:g}s" if isinstance(exc, TimeoutError) else str(exc)
        plog.flushed(changes)
        return None

    def _report(self, outcome: dict[str, str | None], final: bool) -> None:
        """Back off each failing partition, and say what a failure means for users:
        once when a spell of failures begins, then at most every `_WARN_EVERY_S`."""
        now = asyncio.get_running_loop().time()
        failed = {topic: why for topic, why in outcome.items() if why is not None}
        for topic in outcome.keys() - failed.keys():
            self._retry_at.pop(topic, None)
        for topic in failed:
            delay = self._retry_at.get(topic, (0.0, 0.0))[1]
            delay = min(max(2 * delay, self._flush_interval), _MAX_RETRY_S)
            self._retry_at[topic] = (now + delay, delay)
        if failed and (final or self._warned_at is None or now - self._warned_at >= _WARN_EVERY_S):
            self._warned_at = now
            topic, why = next(iter(failed.items()))
            then = (
                "this kop is stopping, so the next start re-reads them"
                if final
                else "kop retries, and a restart before it succeeds re-reads them"
            )
            log.warning(
                "the offset index of %d partition(s) was not persisted (%s: %s). The "
                "records are safe and offsets stay correct: %s from their last persisted "
                "checkpoint",
                len(failed), topic, why, then,
            )  # fmt: skip
        elif self._warned_at is not None and not self._retry_at:
            self._warned_at = None
            log.info("the offset index is persisted again for every partition")

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(self._flush_interval)
            await self.flush()

    async def close(self) -> None:
        for task in list(self._opening.values()):
            task.cancel()
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        await self.flush(final=True)
        await _side_by_side(plog.close() for plog in self._logs.values())
        self._logs.clear()
