"""Persisting the partitions' offset indexes: what lets a restart or the next
owner resume. Each flush sends every open partition's changes side by side, each
bounded by `write_timeout_s`; a partition whose write failed keeps its changes,
backs off, and is retried; users are told once per spell of failures what that
means for them (nothing is lost: offsets stay correct)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from kop.log.checkpoint_store import CheckpointStore
from kop.log.partition_log import PartitionLog
from kop.log.settings import LogSettings

log = logging.getLogger("kop.partitions.manager")  # the name operators know these lines by

_MAX_RETRY_S = 30.0  # the longest a partition whose index writes fail waits for the next try
_WARN_EVERY_S = 300.0  # while index writes keep failing, how often that is logged again


class IndexFlusher:
    def __init__(
        self,
        store: CheckpointStore,
        settings: LogSettings,
        flush_interval_s: float,
        logs: dict[str, PartitionLog],
    ) -> None:
        self._store = store
        self._settings = settings
        self._flush_interval = flush_interval_s
        self._logs = logs  # the manager's open partitions, shared
        # Held by a flush, and by whoever removes partitions (a flush in flight must
        # not re-add a removed partition's checkpoints).
        self.lock = asyncio.Lock()
        # Partitions whose index write failed: (next try, current backoff).
        self._retry_at: dict[str, tuple[float, float]] = {}
        self._warned_at: float | None = None  # during a spell of failed index writes
        self._saved_at: dict[str, float] = {}  # when a partition's changes were last stored

    def forget(self, topics: Iterable[str]) -> None:
        for t in topics:
            self._retry_at.pop(t, None)
            self._saved_at.pop(t, None)

    async def flush(self, final: bool = False) -> None:
        """Persist every partition's index changes, the sends pipelined and each
        bounded by `write_timeout_s`: a dead index topic holds a flush (and a stop)
        that long, not that long per partition. A failed write keeps its changes for
        a later flush, after a backoff; `final` (the stop) tries every partition now."""
        async with self.lock:
            now = asyncio.get_running_loop().time()
            due = [
                (topic, plog)
                for topic, plog in list(self._logs.items())
                if final or self._due(topic, plog, now)
            ]
            results = await asyncio.gather(*(self._save(t, p) for t, p in due))
        outcome = {topic: why for (topic, _), why in zip(due, results, strict=True)}
        self._report(outcome, final)

    def _due(self, topic: str, plog: PartitionLog, now: float) -> bool:
        """Not while backing off; new checkpoints go at once; a mark alone (and
        producer snapshots) waits out `mark_interval_s`."""
        if self._retry_at.get(topic, (0.0, 0.0))[0] > now:
            return False
        if plog.index.created or plog.index.dropped:
            return True
        return now - self._saved_at.get(topic, -self._settings.mark_interval_s) >= (
            self._settings.mark_interval_s
        )

    async def _save(self, topic: str, plog: PartitionLog) -> str | None:
        """Persist one partition's changes; None, or why it failed."""
        changes = plog.changes.take()
        if not changes:
            return None
        timeout = self._settings.write_timeout_s
        try:
            async with asyncio.timeout(timeout):
                await self._store.save(
                    topic, changes.created, changes.dropped, changes.mark, changes.producers,
                    changes.txns,
                )  # fmt: skip
        except BaseException as exc:
            # Kept for the next flush, whatever happened (a stop cancels a flush in
            # flight: its checkpoints must not be lost). The write may still be stored,
            # late or never: it holds facts about the log, true in any order.
            plog.changes.give_back(changes)
            if not isinstance(exc, Exception):
                raise
            plog.stats.add("index_write_failures")
            return f"not stored within {timeout:g}s" if isinstance(exc, TimeoutError) else str(exc)
        plog.changes.flushed(changes)
        self._saved_at[topic] = asyncio.get_running_loop().time()
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

    async def run(self) -> None:
        """Flush every `flush_interval_s`, for ever."""
        while True:
            await asyncio.sleep(self._flush_interval)
            await self.flush()
