"""How an append's batches are answered: a duplicate at once, a retry when its original
settles, a write when the tail follower has counted its last entry (its offset is then
the one every reader computes). A write that fails or times out fails its batch with a
retriable error and has its writer retired (its numbering no longer names its entries),
or ends the partition's ownership when another instance fenced it."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable
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
    """Turns an append's jobs into the base offset of its first batch: a future fed by
    the callbacks of what each job waits for, each with a timer. Clients send
    thousands of produce requests a second; a task per append, and an
    `asyncio.timeout` around its wait, cost more than the rest of the completion
    (and a turn of the event loop between the count and the answer)."""

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

    def complete(self, jobs: list[Job]) -> asyncio.Future[int]:
        """The first batch's base offset once every job is answered, or the first
        job's failure (in job order) once all are."""
        if len(jobs) == 1:  # one batch, as clients send
            return self._finish(jobs[0])
        return _first_of(self._finish(j) for j in jobs)

    def _finish(self, job: Job) -> asyncio.Future[int]:
        loop = asyncio.get_running_loop()
        out: asyncio.Future[int] = loop.create_future()
        if job.offset is not None:
            out.set_result(job.offset)
            return out
        source: asyncio.Future[int]
        if job.wait is not None:
            source = job.wait
        else:  # failed at once by a failed send (`fail_observed`)
            assert job.observed is not None and job.acked is not None
            source = job.observed
        timer = loop.call_later(self._timeout_s, self._expired, job, out)
        source.add_done_callback(functools.partial(self._settled, job, timer, out))
        return out

    def _settled(
        self, job: Job, timer: asyncio.TimerHandle, out: asyncio.Future[int],
        source: asyncio.Future[int],
    ) -> None:  # fmt: skip
        timer.cancel()
        if out.done():  # timed out first
            return
        if source.cancelled():
            out.cancel()
        elif (exc := source.exception()) is None:
            out.set_result(source.result() if job.wait is not None else self._base(job, source))
        elif job.wait is None and isinstance(exc, StorageError):
            self._failed(job, out, exc)
        else:  # the original's failure is its retry's
            out.set_exception(exc)

    def _expired(self, job: Job, out: asyncio.Future[int]) -> None:
        if out.done():
            return
        if job.wait is not None:
            out.set_exception(KafkaError(
                ErrorCode.request_timed_out, "the original of this retry is still in flight"
            ))  # fmt: skip
        else:  # a lost receipt changes nothing: what was counted is stored
            self._failed(job, out, TimeoutError())

    def _failed(self, job: Job, out: asyncio.Future[int], exc: BaseException) -> None:
        why = "timed out" if isinstance(exc, TimeoutError) else str(exc)
        if isinstance(exc, WriterFenced):
            self._on_fenced(why)
        else:
            self._on_failed_writer(job.writer, why)
        error = _error(exc, self._topic)
        error.__cause__ = exc
        if job.handle is not None:
            h = job.head
            self._producers.failed(
                h.producer_id, h.producer_epoch, h.base_sequence, h.record_count, job.handle
            )
            job.handle.set_exception(error)
        out.set_exception(error)

    def _base(self, job: Job, observed: asyncio.Future[int]) -> int:
        base = observed.result() - job.first_index
        if job.idempotent and job.first_index:
            known = self._producers.batch(
                job.head.producer_id, job.head.base_sequence, job.head.record_count
            )
            if known is not None and known.base_offset is not None:
                base = known.base_offset
        if job.handle is not None and not job.handle.done():
            job.handle.set_result(base)
        return base


def _first_of(parts: Iterable[asyncio.Future[int]]) -> asyncio.Future[int]:
    """The first part's result once all are done; the first failure in their order
    if any failed (as `gather` with `return_exceptions`, then raising the first)."""
    todo = list(parts)
    out: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    left = len(todo)

    def one_done(_: asyncio.Future[int]) -> None:
        nonlocal left
        left -= 1
        if left or out.done():
            return
        for part in todo:
            if part.cancelled():
                out.cancel()
                return
            if (exc := part.exception()) is not None:
                out.set_exception(exc)
                return
        out.set_result(todo[0].result())

    for part in todo:
        part.add_done_callback(one_done)
    return out


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
