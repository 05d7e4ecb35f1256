"""DeleteRecords: the log start a client sets, kept by kop as a floor.

Pulsar cannot delete single messages, so Kafka's DeleteRecords becomes a floor
in the offset index (`OffsetIndex.deleted_below`): offsets below it are no
longer served, and their data stays in Pulsar until Pulsar's retention deletes
it. The floor is persisted in the index topic before the request is answered,
so an acknowledged deletion survives restarts and owner changes.
"""

from __future__ import annotations

import asyncio
import logging

from kop.log.checkpoint_store import CheckpointStore
from kop.log.offset_index import OffsetIndex
from kop.log.tail_buffer import TailBuffer
from kop.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

HIGH_WATERMARK = -1  # DeleteRecords' offset meaning "everything written so far"


class LogFloor:
    def __init__(
        self,
        topic: str,
        store: CheckpointStore,
        index: OffsetIndex,
        tail: TailBuffer,
        timeout_s: float,
    ) -> None:
        self._topic = topic
        self._store = store
        self._index = index
        self._tail = tail
        self._timeout_s = timeout_s
        self._lock = asyncio.Lock()  # one persist at a time: a lower floor never lands last
        self._running: set[asyncio.Task[int]] = set()

    async def raise_to(self, offset: int) -> int:
        """Make `offset` (-1: the high watermark) the log start if it is above it;
        returns the log start after. The work completes even if the caller goes away
        (as a produce does), so a persisted floor is always applied too."""
        task = asyncio.create_task(self._raise(offset), name=f"delete-records:{self._topic}")
        self._running.add(task)
        task.add_done_callback(self._done)
        return await asyncio.shield(task)

    async def close(self) -> None:
        """Let deletions in flight finish (each is bounded by the write timeout)."""
        await asyncio.gather(*self._running, return_exceptions=True)

    def _done(self, task: asyncio.Task[int]) -> None:
        self._running.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a caller that went away is not an error

    async def _raise(self, offset: int) -> int:
        async with self._lock:
            high = self._index.high_watermark
            target = high if offset == HIGH_WATERMARK else offset
            if not 0 <= target <= high:
                raise KafkaError(
                    ErrorCode.offset_out_of_range,
                    f"{self._topic}: cannot delete records below {offset}: "
                    f"the high watermark is {high}",
                )
            if target > self._index.log_start:
                try:
                    async with asyncio.timeout(self._timeout_s):
                        await self._store.save_floor(self._topic, target)
                except TimeoutError:
                    raise KafkaError(
                        ErrorCode.request_timed_out, f"{self._topic}: persisting the log start"
                    ) from None
                self._index.delete_below(target)
                self._tail.drop_below(self._index.log_start)
                log.info("%s: DeleteRecords moved the log start to %d", self._topic, target)
            return self._index.log_start
