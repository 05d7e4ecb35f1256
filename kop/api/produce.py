"""Produce: validate batches, write them to Pulsar, answer with their offsets.

The ordered part (lookups, validation, sequence checks, enqueueing the Pulsar
sends) runs before the connection reads its next request; waiting for
Pulsar's acknowledgements overlaps with later requests. acks=0 gets no answer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
import logging
import time
from typing import Any, cast

from kio.schema.produce.v12.request import ProduceRequest
from kio.schema.produce.v12.response import (
    BatchIndexAndErrorMessage,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from kio.schema.types import TopicName
from kio.static.primitive import TZAware, i32, i64

from kop.api import transactions
from kop.api.context import RequestContext, Services, error_of, existing_topic, lead
from kop.api.internal_topics import refuse_produce
from kop.api.routes import Later, Route
from kop.entries.formats import EntryFormat
from kop.log.appender import OFFLOAD_RECORDS
from kop.log.batch_rules import BatchRules, InvalidTimestamps
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.records import BatchHeader, iter_records, split_batches
from kop.protocol.values import NO_THROTTLE
from kop.security.authorizer import ALLOW_ALL, TopicOp
from kop.topics.catalog import TopicView
from kop.txn.peers import is_peer
from kop.txn.verified_writes import verify_write

# What a partition's write becomes: its offset (awaited) and its log append time
# (-1 for CreateTime topics), or why it was refused.
Pending = tuple[asyncio.Future[int], int] | BaseException
ANSWER_WITHIN = 0.9  # of the request's timeout (`_deadline`)
TOLD_EVERY_S = 10.0
_told: dict[tuple[str, int], float] = {}  # partition -> when its timeouts were last logged
log = logging.getLogger(__name__)


async def handle(
    services: Services, ctx: RequestContext, request: ProduceRequest
) -> Later[ProduceResponse]:
    """The ordered part begins every partition's append; the answer waits for Pulsar."""
    if request.acks not in (0, 1, -1):
        return Later(_finish(request, [], error=ErrorCode.invalid_required_acks))
    principal = ctx.principal
    if (
        principal is not None
        and principal.instance
        and is_peer(principal, services.ownership.instances())
    ):
        # another kop instance writing as kop (a share group's dead letters, whose
        # topic it checked): kop's own write, whatever the tenant's permissions
        ctx = dataclasses.replace(ctx, access=ALLOW_ALL)
    txn: str | None = None
    if request.transactional_id is not None:
        try:
            txn = await transactions.txn_key(services, ctx, request.transactional_id)
        except KafkaError as exc:
            return Later(_finish(request, [], error=exc.code))
    pending: list[tuple[str, int, Pending | asyncio.Task[Pending]]] = []
    for t in request.topic_data:
        for p in t.partition_data:
            key = (t.name, p.index)
            begin = functools.partial(_begin, services, ctx, t.name, p.index, p.records, txn)
            if ctx.chains.busy(key):
                pending.append((t.name, p.index, ctx.chains.after(key, begin)))
                continue
            view = await _known(services, ctx, t.name)
            if view is not None and _to_open(services, view, p.index):
                pending.append((t.name, p.index, ctx.chains.after(key, begin)))
            else:  # the view just looked up: one lookup per partition, not two
                pending.append((t.name, p.index, await begin(view)))
    return Later(_finish(request, pending))


ROUTES = (Route(ApiKey.PRODUCE, ProduceRequest, ProduceResponse, handle),)


async def _known(services: Services, ctx: RequestContext, name: str) -> TopicView | None:
    """The topic if it exists and the client may produce to it; None otherwise (`_begin`
    looks it up again and answers why)."""
    try:
        return await existing_topic(services, ctx, name, TopicOp.PRODUCE)
    except Exception:
        return None


def _to_open(services: Services, view: TopicView, index: int) -> bool:
    """Whether the partition is this instance's and not open yet (`produce_order`);
    anything else is answered at once by `_begin`."""
    if not 0 <= index < view.partitions:
        return False
    topic = view.partition_topic(index)
    return services.ownership.mine(topic) and not services.logs.is_open(topic)


async def _begin(
    services: Services, ctx: RequestContext, name: str, index: int, records: bytes | None,
    txn: str | None, view: TopicView | None = None,
) -> Pending:  # fmt: skip
    """`view`: the topic as looked up for this request a moment ago (None: look it up)."""
    try:
        refuse_produce(name)
        if view is None:
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
        if txn is not None:
            add = transactions.tv2(services, ctx, first=12)
            for head, _ in batches:
                await verify_write(
                    services.txns, head, txn, (view.partition_topic(index), index), plog, add=add
                )
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
    request: ProduceRequest,
    pending: list[tuple[str, int, Pending | asyncio.Task[Pending]]],
    error: ErrorCode | None = None,
) -> ProduceResponse | None:
    results = await _settle([work for _, _, work in pending], _deadline(request))
    if request.acks == 0:
        return None
    by_topic: dict[str, list[PartitionProduceResponse]] = {}
    for (name, index, _), part in zip(pending, results, strict=True):
        by_topic.setdefault(name, []).append(part(index))
        if part.code is ErrorCode.request_timed_out:
            _tell_timed_out(name, index, part.message)
    if error is not None:
        for t in request.topic_data:
            by_topic[t.name] = [
                _partition(error, -1, error.name)(p.index) for p in t.partition_data
            ]
    return ProduceResponse(
        responses=tuple(
            TopicProduceResponse(name=TopicName(n), partition_responses=tuple(ps))
            for n, ps in by_topic.items()
        ),
        throttle_time=NO_THROTTLE,
    )


def _deadline(request: ProduceRequest) -> float | None:
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


async def _settle(
    works: list[Pending | asyncio.Task[Pending]], deadline: float | None
) -> list[Answer]:
    """Every partition's answer once its write is counted, or at the deadline (one for
    the request, not one per partition). Nothing waited for is cancelled: a write
    belongs to the log and completes even if the connection waiting for it goes away,
    and a partition begun in the background (`produce_order`) is still begun."""
    loop = asyncio.get_running_loop()
    while waiting := [f for w in works if (f := _waits_on(w)) is not None and not f.done()]:
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            break
        _, still = await asyncio.wait(waiting, timeout=left)
        if still:
            break
    return [_answer(w) for w in works]


def _waits_on(work: Pending | asyncio.Task[Pending]) -> asyncio.Future[Any] | None:
    """What a partition's answer waits for now: its begin, then its write."""
    if isinstance(work, asyncio.Task):
        if not work.done():
            return work
        work = _begun(work)
    return None if isinstance(work, BaseException) else work[0]


def _answer(work: Pending | asyncio.Task[Pending]) -> Answer:
    if isinstance(work, asyncio.Task):
        if not work.done():
            return _timed_out()
        work = _begun(work)
    if isinstance(work, BaseException):
        return _refused(work)
    written, append_time = work
    if not written.done():
        return _timed_out()
    if (exc := written.exception()) is not None:
        return _refused(exc)
    return _partition(ErrorCode.none, written.result(), None, append_time)


def _begun(task: asyncio.Task[Pending]) -> Pending:
    """A background begin's outcome (a cancelled one, its connection closing, raises)."""
    exc = task.exception()
    return task.result() if exc is None else exc


def _timed_out() -> Answer:
    return _partition(ErrorCode.request_timed_out, -1, "not stored within the request's timeout")


def _tell_timed_out(name: str, index: int, why: str | None) -> None:
    """A partition whose writes time out is in the log (at most every TOLD_EVERY_S):
    from the client's side it is only a retry, or a batch expired much later."""
    now = time.monotonic()
    if now - _told.get((name, index), -TOLD_EVERY_S) >= TOLD_EVERY_S:
        _told[(name, index)] = now
        log.info("produce to %s-%d answered REQUEST_TIMED_OUT: %s", name, index, why)


class Answer:
    """A partition's answer before its index is known to the caller: called with the
    index, it is the typed answer (`_finish` pairs them)."""

    __slots__ = ("_append_time", "_offset", "_record_errors", "code", "message")

    def __init__(
        self, code: ErrorCode, offset: int, message: str | None, append_time: int = -1,
        record_errors: tuple[BatchIndexAndErrorMessage, ...] = (),
    ) -> None:  # fmt: skip
        self.code = code
        self.message = message
        self._offset = offset
        self._append_time = append_time
        self._record_errors = record_errors

    def __call__(self, index: int) -> PartitionProduceResponse:
        # Per partition and produce: kio types by `cast` (no range check per value; the
        # writer refuses one that does not fit), as for Fetch.
        return PartitionProduceResponse(
            index=cast(i32, index),
            error_code=self.code,
            base_offset=cast(i64, self._offset),
            log_append_time=_append_time(self._append_time),
            log_start_offset=i64(-1),
            record_errors=self._record_errors,
            error_message=self.message,
        )


def _append_time(ms: int) -> TZAware | None:
    """Kafka's LogAppendTime in ms, as kio carries it (-1: CreateTime, none). A `cast`:
    kio's TZAware check refuses an instant with milliseconds, which its writer carries."""
    if ms < 0:
        return None
    return cast(TZAware, datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC))


def _refused(exc: BaseException) -> Answer:
    code, message = error_of(exc)
    if isinstance(exc, InvalidTimestamps):
        errors = tuple(
            BatchIndexAndErrorMessage(batch_index=i32(i), batch_index_error_message=m)
            for i, m in exc.record_errors
        )
        return Answer(code, -1, message, record_errors=errors)
    return _partition(code, -1, message)


def _partition(code: ErrorCode, offset: int, message: str | None, append_time: int = -1) -> Answer:
    return Answer(code, offset, message, append_time)


def _check_transactional(head: BatchHeader, txn: str | None) -> None:
    """A client writes no control batch, and a transactional batch only with its
    transactional id."""
    if head.is_control:
        raise KafkaError(ErrorCode.invalid_record, "clients may not write control batches")
    if head.is_transactional and txn is None:
        raise KafkaError(ErrorCode.invalid_record, "a transactional batch needs a transactional id")


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
