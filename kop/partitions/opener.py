"""Opening a partition's log in the background, one opening per partition.

A partition opens by loading its index and catching up with Pulsar, which can take
longer than a client waits; the opening goes on after a caller stops waiting (it got
a retriable LEADER_NOT_AVAILABLE) so that the retry finds it open. Split from
`LogManager` so the manager keeps only what is open and letting go of it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable

from kop.log.checkpoint_store import CheckpointStore
from kop.log.framing import Framings
from kop.log.leader_epoch import EpochSource
from kop.log.partition_log import PartitionLog, Shared
from kop.log.settings import LogSettings
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.port import Compaction, MessageLog

log = logging.getLogger(__name__)


class PartitionOpener:
    """Opens partitions into `logs` (the manager's table of open partitions)."""

    def __init__(
        self,
        storage: MessageLog,
        store: CheckpointStore,
        settings: LogSettings,
        shared: Shared,
        compaction: Compaction | None,
        owns: Callable[[str], bool],
        epochs: EpochSource,
        logs: dict[str, PartitionLog],
        framings: Framings | None = None,
    ) -> None:
        self._storage = storage
        self._framings = framings  # Confluent's framing at the edge (kop.log.framing)
        self._store = store
        self._settings = settings
        self._shared = shared
        self._compaction = compaction
        self._owns = owns
        self._epochs = epochs
        self._logs = logs
        self._opening: dict[str, asyncio.Task[PartitionLog]] = {}

    def is_opening(self, topic: str) -> bool:
        return topic in self._opening

    async def wait_for(
        self, topic: str, compacted: bool | None, wait_s: float | None
    ) -> PartitionLog:
        """The partition's log once open, starting its opening if none is under way.
        A caller waits at most `wait_s` (default and cap: `open_wait_s`) and then gets
        a retriable LEADER_NOT_AVAILABLE, as from a Kafka broker still loading a
        partition; the opening goes on."""
        task = self._opening.get(topic)
        if task is None:
            want = bool(compacted) and self._compaction is not None
            task = asyncio.create_task(self._open(topic, want), name=f"open:{topic}")
            self._opening[topic] = task
            task.add_done_callback(functools.partial(self._opened, topic))
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

    def cancel(self, topics: Iterable[str]) -> None:
        """Stop the openings of these partitions, if any are under way."""
        for topic in topics:
            task = self._opening.get(topic)
            if task is not None:
                task.cancel()

    def cancel_all(self) -> None:
        self.cancel(list(self._opening))

    def _opened(self, topic: str, task: asyncio.Task[PartitionLog]) -> None:
        """An opening ended. Its failure is taken here: the callers that waited for it
        have the error already, and one that gave up waiting (LEADER_NOT_AVAILABLE) left
        it to asyncio, which logs it from the task's finalizer, at whatever moment the
        garbage collector runs; on Python 3.11 a finalizer that formats a traceback
        inside another `ast.parse` breaks that parse."""
        self._opening.pop(topic, None)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.info("opening %s failed: %s", topic, exc)

    async def _open(self, topic: str, compacted: bool) -> PartitionLog:
        plog = PartitionLog(
            self._storage, self._store, topic, self._settings, self._shared,
            self._compaction if compacted else None,
            None if self._framings is None else self._framings.of(topic),
        )  # fmt: skip
        try:
            await plog.open()
            if not self._owns(topic):  # ownership moved while it opened
                raise KafkaError(ErrorCode.not_leader_or_follower, f"{topic} moved away")
            plog.leader_epoch = await self._epochs.take(topic)
        except BaseException:
            await plog.close()
            raise
        self._logs[topic] = plog
        return plog
