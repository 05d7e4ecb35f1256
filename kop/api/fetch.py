"""Fetch: read from offsets; long-poll on new data instead of busy polling.

Sessions (KIP-227, docs/decisions.md D25): a full fetch at epoch 0 opens an incremental
session when the instance's cache has room (kop.api.fetch_sessions); later fetches name
only the partitions whose position changed, and their answers only partitions with
something to say. Every partition of a session is authorized again at every fetch, as
in a full one. A full answer names exactly the partitions asked for, each once.
"""

from __future__ import annotations

import asyncio
import time
from typing import cast

from kio.schema.fetch.v12.request import FetchPartition, FetchRequest
from kio.schema.fetch.v12.response import (
    AbortedTransaction,
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)
from kio.schema.types import ProducerId, TopicName
from kio.static.primitive import Records, i32, i64

from kop.api.context import RequestContext, Services, error_of, existing_topic, led_partition
from kop.api.fetch_session import Key
from kop.api.fetch_sessions import NO_SESSION, Full, Incremental, Owner, Plan, Refused
from kop.api.routes import Later, Route
from kop.entries.formats import EntryFormat
from kop.log.partition_log import PartitionLog
from kop.protocol.batch_epochs import NO_EPOCH
from kop.protocol.batch_rewrite import as_log_append_time
from kop.protocol.errors import ErrorCode
from kop.protocol.frame_pieces import RecordPieces, records_of
from kop.protocol.messages import ApiKey
from kop.protocol.records import below
from kop.protocol.values import NO_THROTTLE
from kop.security.authorizer import TopicOp

READ_COMMITTED = 1  # isolation_level: only what is below the last stable offset

# A partition to read, and whether its batches are served as LogAppendTime.
Source = tuple[PartitionLog, bool] | BaseException


async def handle(
    services: Services, ctx: RequestContext, request: FetchRequest
) -> Later[FetchResponse]:
    """A fetch waits for data after its ordered part, while the connection reads on.
    Its session is read in the ordered part: a client's fetches meet it in their order."""
    forgotten = [(t.topic, p) for t in request.forgotten_topics_data for p in t.partitions]
    plan = services.fetch_sessions.begin(
        owner(ctx), request.session_id, request.session_epoch, _wanted(request), forgotten
    )
    return Later(_fetch(services, ctx, request, plan))


def owner(ctx: RequestContext) -> Owner:
    """Whose a session is: the principal, in its namespace, through its listener."""
    who = ctx.principal.kafka_name if ctx.principal is not None else "User:ANONYMOUS"
    return Owner(ctx.listener, who, str(ctx.namespace))


ROUTES = (Route(ApiKey.FETCH, FetchRequest, FetchResponse, handle),)


async def _fetch(
    services: Services, ctx: RequestContext, request: FetchRequest, plan: Plan
) -> FetchResponse:
    # (Versions before 7 have no sessions: their requests read as session 0, epoch -1.)
    if isinstance(plan, Refused):
        return _response([], plan.error)
    wanted = plan.session.asked() if isinstance(plan, Incremental) else plan.asked
    wait_ms = min(int(request.max_wait.total_seconds() * 1000), services.fetch_max_wait_cap_ms)
    deadline = time.monotonic() + max(0, wait_ms) / 1000
    min_bytes = max(0, request.min_bytes)
    # As Kafka's fetch.max.bytes: what a client asks for is capped, so no request makes
    # kop build more than the cap plus one batch (KIP-74) in memory.
    cap = services.fetch_max_bytes_cap
    max_bytes = min(request.max_bytes, cap) if request.max_bytes > 0 else cap
    # No answer is larger than its partitions' limits (but for KIP-74's first batch):
    # claiming the client's fetch.max.bytes (50 MiB for Java) would make a few
    # fetches starting together take the whole answer budget and refuse the rest.
    want = max(1, min(max_bytes, sum(max(0, p.partition_max_bytes) for _, p in wanted)))
    logs = await _logs(services, ctx, wanted)
    committed = request.isolation_level == READ_COMMITTED
    while True:
        # what to wait on, if this fetch may wait at all (max_wait 0: it answers at once)
        changed = [
            src[0].data_changed()
            for src in (logs if wait_ms > 0 else ())
            if not isinstance(src, BaseException)
        ]
        try:
            parts: list[tuple[Key, PartitionData]] = []
            total = 0
            errors = False
            # The server's budget for unsent answers bounds this one; with no room, the
            # fetch reads nothing for now and waits for room as well as for new data.
            room = ctx.answers.claim(want)
            if room <= 0:
                changed.append(ctx.answers.freed())
            for ((name, _), p), plog in zip(wanted, logs, strict=True):
                budget = min(p.partition_max_bytes, max(0, room - total))
                first = total == 0 and room > 0
                part = await _read_partition(
                    plog, p.partition, p.fetch_offset, budget, first, committed
                )
                total += len(part.records or b"")
                errors = errors or part.error_code != ErrorCode.none
                parts.append(((name, p.partition), part))
            ctx.answers.keep(total)
            remaining = deadline - time.monotonic()
            if (total >= min_bytes and room > 0) or errors or remaining <= 0 or not changed:
                return _answer(services, ctx, plan, wanted, parts)
            done, _ = await asyncio.wait(
                changed, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                return _answer(services, ctx, plan, wanted, parts)
        finally:  # also when the connection went away: no waiter outlives its fetch
            for fut in changed:
                fut.cancel()


def _answer(
    services: Services, ctx: RequestContext, plan: Full | Incremental,
    wanted: list[tuple[Key, FetchPartition]], parts: list[tuple[Key, PartitionData]],
) -> FetchResponse:  # fmt: skip
    """The answer as the fetch's session has it: in full, opening a session if asked
    and there is room; or incremental, only partitions with something to say."""
    if isinstance(plan, Incremental):
        error, kept = services.fetch_sessions.answer(plan, parts)
        return _response(kept, error, plan.session.id)
    session_id = NO_SESSION
    if plan.open:
        answered = [(key, p, part) for (key, p), (_, part) in zip(wanted, parts, strict=True)]
        session_id = services.fetch_sessions.open(owner(ctx), answered)
    return _response(parts, session_id=session_id)


def _wanted(request: FetchRequest) -> list[tuple[Key, FetchPartition]]:
    """Each partition once, as Kafka's broker reads a full fetch: a partition named
    twice is answered once, with its last fetch position, in its first place."""
    chosen: dict[Key, FetchPartition] = {}
    for t in request.topics:
        for p in t.partitions:
            chosen[(t.topic, p.partition)] = p
    return list(chosen.items())


async def _logs(
    services: Services, ctx: RequestContext, wanted: list[tuple[Key, FetchPartition]]
) -> list[Source]:
    """Each wanted partition's log (or why not), its topic looked up and authorized once
    per fetch, not once per partition: a session's fetch of 1,000 partitions of a few
    topics is a few look-ups. Topics side by side; a topic's partitions one after the
    other (once the topic is known, each is at hand)."""
    positions: dict[str, list[int]] = {}
    for i, ((name, _), _p) in enumerate(wanted):
        positions.setdefault(name, []).append(i)
    out: list[Source] = [ValueError("not looked up")] * len(wanted)

    async def topic(name: str, at: list[int]) -> None:
        try:
            view = await existing_topic(services, ctx, name, TopicOp.CONSUME)
        except Exception as exc:
            for i in at:
                out[i] = exc
            return
        # The `kafka` format stores batches stamped; the `pulsar` format keeps times.
        append_time = view.log_append_time and view.entry_format is EntryFormat.PULSAR
        for i in at:
            p = wanted[i][1]
            # Fetch (v9+) takes any negative current_leader_epoch for "none", as Kafka does.
            current = max(NO_EPOCH, p.current_leader_epoch)
            try:
                out[i] = (
                    await led_partition(services, view, name, p.partition, current),
                    append_time,
                )
            except Exception as exc:
                out[i] = exc

    if len(positions) == 1:
        await topic(*next(iter(positions.items())))
    else:
        await asyncio.gather(*(topic(name, at) for name, at in positions.items()))
    return out


async def _read_partition(
    src: Source, index: int, offset: int, budget: int, first: bool, committed: bool
) -> PartitionData:
    if isinstance(src, BaseException):
        code, _ = error_of(src)
        return _part(index, code, -1, -1, -1, b"")
    plog, append_time = src
    stable = plog.last_stable  # before the read: what it serves stays below it
    try:
        pieces: list[bytes] = []
        # At the end (what an incremental fetch of a quiet partition asks): nothing to
        # read, and no range to check (the end is never out of range).
        at_end = offset == plog.high_watermark and plog.compacted is None
        if (budget > 0 or first) and not at_end and not (committed and offset >= stable):
            # KIP-74: a batch is served only if it fits, except the response's first.
            pieces = await plog.read_batches(offset, budget, min_one=first)
            if committed and stable < plog.high_watermark:  # else nothing is past it
                pieces = _below(pieces, stable)
            if append_time:
                pieces = [as_log_append_time(p) for p in pieces]
            plog.gave(pieces)
        records = records_of(pieces)
        aborted: tuple[AbortedTransaction, ...] = ()
        if committed and records:  # those below the LSO (a consumer skips by offset)
            aborted = tuple(
                AbortedTransaction(
                    producer_id=cast(ProducerId, a.producer_id),
                    first_offset=cast(i64, a.first_offset),
                )
                for a in plog.txns.aborted(offset, stable)
            )
        return _part(
            index, ErrorCode.none, plog.high_watermark, stable, plog.log_start, records, aborted
        )
    except Exception as exc:
        code, _ = error_of(exc)
        return _part(index, code, plog.high_watermark, stable, plog.log_start, b"")


def _below(pieces: list[bytes], end: int) -> list[bytes]:
    """The batches that end before offset `end` (`below`, piece by piece)."""
    out: list[bytes] = []
    for piece in pieces:
        kept = below(piece, end)
        if kept:
            out.append(kept)
        if len(kept) < len(piece):
            break
    return out


def _part(
    index: int, code: ErrorCode, hw: int, stable: int, start: int,
    records: bytes | RecordPieces,
    aborted: tuple[AbortedTransaction, ...] = (),
) -> PartitionData:  # fmt: skip
    """One partition's answer. Per partition and per fetch, so the values are given
    their kio types by `cast` (no range check per value: each is an offset or index kop
    keeps, and kio's writer refuses one that does not fit its field), and the records
    are served as they are, without a copy."""
    return PartitionData(
        partition_index=cast(i32, index),
        error_code=code,
        high_watermark=cast(i64, hw),
        last_stable_offset=cast(i64, stable),
        log_start_offset=cast(i64, start),
        aborted_transactions=aborted,
        records=cast(Records, records),
    )


def _response(
    parts: list[tuple[Key, PartitionData]],
    error: ErrorCode = ErrorCode.none,
    session_id: int = NO_SESSION,
) -> FetchResponse:
    """An answer of `parts`, grouped by topic in their order."""
    by_topic: dict[str, list[PartitionData]] = {}
    for (name, _), part in parts:
        by_topic.setdefault(name, []).append(part)
    return FetchResponse(
        throttle_time=NO_THROTTLE,
        error_code=error,
        session_id=cast(i32, session_id),
        responses=tuple(
            FetchableTopicResponse(topic=TopicName(n), partitions=tuple(ps))
            for n, ps in by_topic.items()
        ),
    )
