"""How an append's batches are answered: a duplicate at once, a retry when its original
settles, a write when the tail follower has counted its last entry (its offset is then
the one every reader computes). A write that fails or times out fails its batch with a
retriable error and has its writer retired (its numbering no longer names its entries),
or ends the partition's ownership when another instance fenced it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from kop.log.producer_state import ProducerStates
from kop.log.write_gate import Handle
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import BatchHeader
from kop.storage.types import StorageError, StoredEntry, WriterFenced


@dataclass(slots=True)
class Job:
    """One batch of an append: answered from what is known, or waiting for its write."""

    head: BatchHeader
    offset: int | None = None  # a duplicate: known already
    wait: Handle | None = None  # in flight: the original's outcome
    observed: asyncio.Future[int] | None = None  # our write: counted by the follower
    acked: asyncio.Future[list[StoredEntry | None]] | None = None
    writer: str = ""
    handle: Handle | None = None  # idempotent: this batch's outcome, for its retries
    first_index: int = 0

    @property
    def idempotent(self) -> bool:
        return self.head.producer_id >= 0 and self.head.base_sequence >= 0


class Completion:
    """Turns an append's jobs into the base offset of its first batch."""

    def __init__(
        self,
        topic: str,
        producers: ProducerStates[Handle],
        timeout_s: float,
        on_fenced: Callable[[str], None],
        on_failed_writer: Callable[[str, str], None],
    ) -> None:
        self._topic = topic
        self._producers = producers
        self._timeout_s = timeout_s
        self._on_fenced = on_fenced
        self._on_failed_writer = on_failed_writer

    async def complete(self, jobs: list[Job]) -> int:
        if len(jobs) == 1:  # one batch, as clients send: no task per job to wait for
            return await self._finish(jobs[0])
        results = await asyncio.gather(*(self._finish(j) for j in jobs), return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                raise r
        first = results[0]
        assert isinstance(first, int)
        return first

    async def _finish(self, job: Job) -> int:
        if job.offset is not None:
            return job.offset
        if job.wait is not None:
            try:
                async with asyncio.timeout(self._timeout_s):
                    return await asyncio.shield(job.wait)
            except TimeoutError:
                raise KafkaError(
                    ErrorCode.request_timed_out, "the original of this retry is still in flight"
                ) from None
        assert job.observed is not None and job.acked is not None
        try:
            async with asyncio.timeout(self._timeout_s):
                # Failed at once by a failed send (`fail_observed`). A lost receipt
                # changes nothing: what was counted is stored.
                first = await job.observed
        except (TimeoutError, StorageError) as exc:
            why = "timed out" if isinstance(exc, TimeoutError) else str(exc)
            if isinstance(exc, WriterFenced):
                self._on_fenced(why)
            else:
                self._on_failed_writer(job.writer, why)
            error = _error(exc, self._topic)
            if job.handle is not None:
                h = job.head
                self._producers.failed(
                    h.producer_id, h.producer_epoch, h.base_sequence, h.record_count, job.handle
                )
                job.handle.set_exception(error)
            raise error from exc
        base = first - job.first_index
        if job.idempotent and job.first_index:
            known = self._producers.batch(
                job.head.producer_id, job.head.base_sequence, job.head.record_count
            )
            if known is not None and known.base_offset is not None:
                base = known.base_offset
        if job.handle is not None and not job.handle.done():
            job.handle.set_result(base)
        return base


def fail_observed(
    observed: asyncio.Future[int], acked: asyncio.Future[list[StoredEntry | None]]
) -> None:
    """A failed send fails its write's wait for the count at once (the write's own
    future: the follower leaves a done one alone). Awaiting that one future, not
    either of two, saves the completion two turns of the event loop."""
    if observed.done():
        return
    if acked.cancelled():
        observed.cancel()
    elif (exc := acked.exception()) is not None:
        observed.set_exception(exc)


def _error(exc: BaseException, topic: str) -> KafkaError:
    if isinstance(exc, WriterFenced):
        return KafkaError(ErrorCode.not_leader_or_follower, f"{topic} moved to another instance")
    if isinstance(exc, StorageError) and not exc.retriable:
        return KafkaError(ErrorCode.message_too_large, str(exc))
    if isinstance(exc, TimeoutError):
        return KafkaError(ErrorCode.request_timed_out, f"write to {topic} timed out")
    return KafkaError(ErrorCode.not_enough_replicas, f"write to {topic} failed: {exc}")
