"""How an append's batches are answered (kop/log/append_completion.py): the offset
once the follower counted the write, a retriable error and a retired writer when it
failed or did not come within the write timeout, the original's outcome for a retry,
and for several batches the first's offset or the first failure in batch order."""

from __future__ import annotations

import asyncio

import pytest

from kop.log.append_completion import Completion, Job
from kop.log.producer_state import ProducerStates
from kop.log.write_gate import Handle
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import BatchHeader
from kop.storage.types import StorageError, StoredEntry, WriterFenced

TIMEOUT_S = 0.05


def _head(pid: int = -1, seq: int = -1, count: int = 1) -> BatchHeader:
    return BatchHeader(0, 61, 2, 0, 0, count - 1, 0, 0, pid, 0, seq, count)


class Seen:
    def __init__(self) -> None:
        self.fenced: list[str] = []
        self.failed: list[tuple[str, str]] = []
        self.producers: ProducerStates[Handle] = ProducerStates()

    def completion(self) -> Completion:
        return Completion(
            "t", self.producers, TIMEOUT_S, self.fenced.append,
            lambda writer, why: self.failed.append((writer, why)),
        )  # fmt: skip


def _written(head: BatchHeader, first_index: int = 0) -> Job:
    loop = asyncio.get_running_loop()
    acked: asyncio.Future[list[StoredEntry | None]] = loop.create_future()
    return Job(head, observed=loop.create_future(), acked=acked, writer="w-1",
               first_index=first_index)  # fmt: skip


async def test_a_counted_write_answers_with_its_first_batch_offset() -> None:
    seen = Seen()
    job = _written(_head())
    done = seen.completion().complete([job])
    assert job.observed is not None
    job.observed.set_result(40)
    assert await done == 40
    assert seen.failed == [] and seen.fenced == []


async def test_an_idempotent_retry_of_a_partly_stored_batch_gets_the_whole_batch_offset() -> None:
    seen = Seen()
    head = _head(pid=7, seq=0, count=3)
    handle: Handle = asyncio.get_running_loop().create_future()
    seen.producers.begin(7, 0, 0, 3, handle)
    job = _written(head, first_index=2)  # records 0 and 1 were stored before
    job.handle = handle
    done = seen.completion().complete([job])
    assert job.observed is not None
    job.observed.set_result(12)  # the write's first entry: record 2 of the batch
    assert await done == 10
    assert handle.result() == 10  # its later retries are told the same


async def test_a_write_not_counted_in_time_is_retriable_and_retires_its_writer() -> None:
    seen = Seen()
    handle: Handle = asyncio.get_running_loop().create_future()
    seen.producers.begin(7, 0, 0, 1, handle)
    job = _written(_head(pid=7, seq=0))
    job.handle = handle
    with pytest.raises(KafkaError) as caught:
        await seen.completion().complete([job])
    assert caught.value.code is ErrorCode.request_timed_out
    assert seen.failed == [("w-1", "timed out")]
    assert isinstance(handle.exception(), KafkaError)  # a retry waiting on it is told
    assert job.observed is not None
    job.observed.set_result(5)  # counted after all: the answer was given already


async def test_a_fenced_write_moves_the_partition_and_a_failed_one_retires_the_writer() -> None:
    seen = Seen()
    fenced, failed = _written(_head()), _written(_head())
    answers = [seen.completion().complete([fenced]), seen.completion().complete([failed])]
    assert fenced.observed is not None and failed.observed is not None
    fenced.observed.set_exception(WriterFenced("taken over"))
    failed.observed.set_exception(StorageError("connection lost"))
    codes = []
    for answer in answers:
        with pytest.raises(KafkaError) as caught:
            await answer
        codes.append(caught.value.code)
    assert codes == [ErrorCode.not_leader_or_follower, ErrorCode.not_enough_replicas]
    assert seen.fenced == ["taken over"]
    assert seen.failed == [("w-1", "connection lost")]


async def test_a_retry_gets_its_original_outcome_or_times_out() -> None:
    seen = Seen()
    loop = asyncio.get_running_loop()
    original: Handle = loop.create_future()
    answered = seen.completion().complete([Job(_head(), wait=original)])
    original.set_result(33)
    assert await answered == 33
    with pytest.raises(KafkaError) as caught:
        await seen.completion().complete([Job(_head(), wait=loop.create_future())])
    assert caught.value.code is ErrorCode.request_timed_out
    assert seen.failed == []  # the original's write, not the retry's, decides its writer


async def test_several_batches_answer_the_first_offset_or_the_first_failure() -> None:
    seen = Seen()
    first, second = _written(_head()), _written(_head())
    done = seen.completion().complete([Job(_head(), offset=3), first])
    assert first.observed is not None
    first.observed.set_result(4)
    assert await done == 3  # a duplicate first: its known offset
    third = _written(_head())
    failing = seen.completion().complete([second, third])
    assert second.observed is not None and third.observed is not None
    third.observed.set_exception(StorageError("lost"))
    await asyncio.sleep(0)
    assert not failing.done()  # answered once all are
    second.observed.set_result(9)
    with pytest.raises(KafkaError) as caught:
        await failing
    assert caught.value.code is ErrorCode.not_enough_replicas
