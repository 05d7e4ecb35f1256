"""Produce: validate batches, write them to Pulsar, answer with their offsets.

The ordered part (lookups, validation, sequence checks, enqueueing the Pulsar
sends) runs before the connection reads its next request; waiting for
Pulsar's acknowledgements overlaps with later requests. acks=0 gets no answer.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable
from typing import Any

from kop.api import transactions
from kop.api.context import (
    RequestContext,
    Response,
    Services,
    error_of,
    existing_topic,
    lead,
)
from kop.api.internal_topics import refuse_produce
from kop.entries.formats import EntryFormat
from kop.log.appender import OFFLOAD_RECORDS
from kop.log.batch_rules import BatchRules, InvalidTimestamps
from kop.log.partition_log import PartitionLog
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import BatchHeader, iter_records, split_batches
from kop.security.authorizer import TopicOp
from kop.txn.state import Partition

# What a partition's write becomes: its offset (awaited) and its log append time
# (-1 for CreateTime topics), or why it was refused.
Pending = tuple[Awaitable[int], int] | BaseException
ANSWER_WITHIN = 0.9  # of the request's timeout (`_deadline`)
TOLD_EVERY_S = 10.0
_told: dict[tuple[str, int], float] = {}  # partition -> when its timeouts were last logged
log = logging.getLogger(__name__)


async def handle(
    services: Services, ctx: RequestContext, request: Any
) -> Awaitable[Response | None]:
    if request.acks not in (0, 1, -1):
        return _finish(request, [], error=ErrorCode.invalid_required_acks)
    txn: str | None = None
    if request.transactional_id is not None:
        try:
            txn = await transactions.txn_key(services, ctx, request.transactional_id)
        except KafkaError as exc:
            return _finish(request, [], error=exc.code)
    pending: list[tuple[str, int, Pending | asyncio.Task[Pending]]] = []
    for t in request.topic_data:
        for p in t.partition_data:
            key = (t.name, p.index)
            begin = functools.partial(_begin, services, ctx, t.name, p.index, p.records, txn)
            if ctx.chains.busy(key) or await _to_open(services, ctx, t.name, p.index):
                pending.append((t.name, p.index, ctx.chains.after(key, begin)))
            else:
                pending.append((t.name, p.index, await begin()))
    return _finish(request, pending)


async def _to_open(services: Services, ctx: RequestContext, name: str, index: int) -> bool:
    """Whether the partition is this instance's and not open yet (`produce_order`);
    anything else is answered at once by `_begin`."""
    try:
        view = await existing_topic(services, ctx, name, TopicOp.PRODUCE)
    except Exception:
        return False
    if not 0 <= index < view.partitions:
        return False
    topic = view.partition_topic(index)
    return services.owners.mine(topic) and not services.logs.is_open(topic)


async def _begin(
    services: Services, ctx: RequestContext, name: str, index: int, records: bytes | None,
    txn: str | None,
) -> Pending:  # fmt: skip
    try:
        refuse_produce(name)
        view = await existing_topic(services, ctx, name, TopicOp.PRODUCE)
        if not 0 <= index < view.partitions:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition, f"{name} has no partition {index}"
            )
        lead(services, view.partition_topic(index))
        if not records:
            raise KafkaError(ErrorCode.corrupt_message, "produce without records")
        batches = split_batches(records, max_batch_bytes=view.max_message_bytes)
        for head, _ in batches:
            _check_transactional(head, txn)
        if view.compacted:
            _require_keys(batches, name, index)
        rules = BatchRules.of(view.configs)
        now = int(time.time() * 1000)
        pulsar = view.entry_format is EntryFormat.PULSAR
        batches = await _apply(services, rules, batches, now, pulsar)
        await services.catalog.writable(view.topic)
        plog = await services.logs.of_topic(view, index)
        v2 = transactions.tv2(services, ctx, first=12)
        for head, _ in batches:
            await _verify(services, head, txn, (view.partition_topic(index), index), plog, v2)
        work = await plog.begin_append(
            batches, view.entry_format, view.pulsar_batching, shared=view.shared_writes
        )
        return work, now if rules.log_append_time else -1
    except Exception as exc:
        return exc


async def _apply(
    services: Services,
    rules: BatchRules,
    batches: list[tuple[BatchHeader, bytes]],
    now: int,
    pulsar: bool,
) -> list[tuple[BatchHeader, bytes]]:
    """The topic's configs applied to each batch (kop.log.batch_rules); off the event
    loop when that decodes many records, as the appender encodes them."""
    limit = services.logs.settings.max_uncompressed_batch_bytes
    out = []
    for batch in batches:
        head = batch[0]
        if rules.per_record(head, pulsar) and head.record_count > OFFLOAD_RECORDS:
            out.append(
                await asyncio.to_thread(
                    rules.apply, batch, now, records_have_times=pulsar, limit=limit
                )
            )
        else:
            out.append(rules.apply(batch, now, records_have_times=pulsar, limit=limit))
    return out


async def _finish(
    request: Any,
    pending: list[tuple[str, int, Pending | asyncio.Task[Pending]]],
    error: ErrorCode | None = None,
) -> Response | None:
    # One after another: the writes are in flight already, so this takes as long as the
    # slowest, and no task per partition is made to wait for (with gather, an answer
    # took two more turns of the event loop).
    deadline = _deadline(request)
    results = [await _settle(work, deadline) for _, _, work in pending]
    if request.acks == 0:
        return None
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (name, index, _), part in zip(pending, results, strict=True):
        by_topic.setdefault(name, []).append({"index": index, **part})
        if part["error_code"] is ErrorCode.request_timed_out:
            _tell_timed_out(name, index, part["error_message"])
    if error is not None:
        for t in request.topic_data:
            by_topic[t.name] = [
                {"index": p.index, **_partition(error, -1, error.name)} for p in t.partition_data
            ]
    return {
        "responses": [{"name": n, "partition_responses": ps} for n, ps in by_topic.items()],
        "throttle_time": 0,
    }


def _deadline(request: Any) -> float | None:
    """When the answer is due: within the request's timeout, as Kafka answers a
    delayed produce, and a little before it. Clients send their own request timeout
    as the produce timeout (Java's and librdkafka's request.timeout.ms); an answer
    that came after it would find the connection closed, and every other request in
    flight on it failed with it. The writes go on: a retry finds them (idempotent
    producers get the offset they were stored at)."""
    timeout_s: float = request.timeout.total_seconds()
    if request.acks == 0 or timeout_s <= 0:
        return None
    now: float = asyncio.get_running_loop().time()
    return now + timeout_s * ANSWER_WITHIN


async def _settle(work: Pending | asyncio.Task[Pending], deadline: float | None) -> dict[str, Any]:
    try:
        async with asyncio.timeout_at(deadline):
            if isinstance(work, asyncio.Task):
                work = await asyncio.shield(work)  # begun in the background (`produce_order`)
            if isinstance(work, BaseException):
                return _refused(work)
            written, append_time = work
            # Shielded: the write belongs to the log and completes even if the
            # connection waiting for it goes away.
            offset = await asyncio.shield(written)
    except TimeoutError:
        return _partition(
            ErrorCode.request_timed_out, -1, "not stored within the request's timeout"
        )
    except Exception as exc:
        return _refused(exc)
    return _partition(ErrorCode.none, offset, None, append_time)


def _tell_timed_out(name: str, index: int, why: str | None) -> None:
    """A partition whose writes time out is in the log (at most every TOLD_EVERY_S):
    from the client's side it is only a retry, or a batch expired much later."""
    now = time.monotonic()
    if now - _told.get((name, index), -TOLD_EVERY_S) >= TOLD_EVERY_S:
        _told[(name, index)] = now
        log.info("produce to %s-%d answered REQUEST_TIMED_OUT: %s", name, index, why)


def _refused(exc: BaseException) -> dict[str, Any]:
    code, message = error_of(exc)
    out = _partition(code, -1, message)
    if isinstance(exc, InvalidTimestamps):
        out["record_errors"] = tuple(
            {"batch_index": i, "batch_index_error_message": m} for i, m in exc.record_errors
        )
    return out


def _partition(
    code: ErrorCode, offset: int, message: str | None, append_time: int = -1
) -> dict[str, Any]:
    return {
        "error_code": code,
        "base_offset": offset,
        "log_append_time": append_time,
        "log_start_offset": -1,
        "record_errors": (),
        "error_message": message,
    }


def _check_transactional(head: BatchHeader, txn: str | None) -> None:
    """A client writes no control batch, and a transactional batch only with its
    transactional id."""
    if head.is_control:
        raise KafkaError(ErrorCode.invalid_record, "clients may not write control batches")
    if head.is_transactional and txn is None:
        raise KafkaError(ErrorCode.invalid_record, "a transactional batch needs a transactional id")


async def _verify(
    services: Services, head: BatchHeader, txn: str | None, part: Partition, plog: PartitionLog,
    v2: bool,
) -> None:  # fmt: skip
    """A transactional batch goes only into a partition its producer's ongoing
    transaction holds (KIP-890's verification, by the coordinator of the id, here or at
    another instance): a late write of an ended transaction would otherwise open one
    that no marker ever closes. Under transaction version 2 (`v2`) the coordinator adds
    the partition instead. Asked once per transaction and partition, as Kafka asks:
    while the producer has a transaction of this epoch open here, its batches belong
    to it (version 2 bumps the epoch at every end: a batch of the next transaction
    is asked about while the last one's marker is on its way). Errors as Kafka answers
    them: a coordinator loading, out of reach or still ending the producer's previous
    transaction, NOT_ENOUGH_REPLICAS (retriable); a fenced producer,
    INVALID_PRODUCER_EPOCH."""
    if not head.is_transactional or txn is None or services.txns is None:
        return
    pid, epoch = head.producer_id, head.producer_epoch
    if plog.txns.is_open(pid) and plog.producers.epoch(pid) == epoch:
        return
    code = await services.txns.admit(txn, pid, epoch, part, add=v2)
    if code in (ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available,
                ErrorCode.not_coordinator, ErrorCode.concurrent_transactions):  # fmt: skip
        raise KafkaError(ErrorCode.not_enough_replicas, f"transaction coordinator: {code.name}")
    if code is ErrorCode.producer_fenced:
        raise KafkaError(ErrorCode.invalid_producer_epoch, f"producer {pid} is fenced")
    if code is not ErrorCode.none:
        raise KafkaError(code, f"{part[0]}: not in an ongoing transaction of this producer")


def _require_keys(batches: list[tuple[BatchHeader, bytes]], name: str, index: int) -> None:
    """Kafka refuses a keyless record on a compacted topic (and Pulsar's compaction
    would drop it)."""
    for _head, data in batches:
        if any(r.key is None for r in iter_records(data)):
            raise KafkaError(
                ErrorCode.invalid_record,
                f"Compacted topic cannot accept message without key in topic partition "
                f"{name}-{index}.",
            )
