"""ShareFetch and ShareAcknowledge (KIP-932): a share group's members acquire records
of the partitions this instance leads and acknowledge them (D27; the records' rules:
kop/groups/share/records.py, the Pulsar side: kop/groups/share/partition.py).

Both need the group authorized (`group_key`) and READ on each topic (CONSUME); topics
are named by id, looked up in the client's namespace only. What a client controls is
bounded: a session's partitions, the records and bytes one fetch acquires, the wait,
and the sessions it may hold (kop/api/share_sessions.py).

Version 2 (Kafka 4.2+) adds two things, served as Kafka serves them: RENEW
acknowledgements (KIP-1222: the record's lock restarts, it stays the member's; a
ShareFetch carrying them says so with IsRenewAck, acquires nothing, and must ask for
nothing: its MaxBytes, MinBytes, MaxRecords and MaxWaitMs all 0), and the record-limit
acquire mode (KIP-1206: a fetch acquires at most MaxRecords records, splitting a batch).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol, cast

from kio.schema.share_acknowledge.v2.request import ShareAcknowledgeRequest
from kio.schema.share_acknowledge.v2.response import LeaderIdAndEpoch as AckLeader
from kio.schema.share_acknowledge.v2.response import PartitionData as AckPartition
from kio.schema.share_acknowledge.v2.response import (
    ShareAcknowledgeResponse,
    ShareAcknowledgeTopicResponse,
)
from kio.schema.share_fetch.v2.request import ShareFetchRequest
from kio.schema.share_fetch.v2.response import (
    AcquiredRecords,
    LeaderIdAndEpoch,
    PartitionData,
    ShareFetchableTopicResponse,
    ShareFetchResponse,
)
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64

from kop.api.context import RequestContext, Services, error_of, topic_partition
from kop.api.fetch import owner
from kop.api.groups import group_key
from kop.api.routes import Later, Now, Route
from kop.api.share_sessions import OPEN_EPOCH, Begun, SharePart, ShareSession
from kop.api.topic_ids import names_of
from kop.groups.share.partition import SharePartition
from kop.groups.share.records import AckBatch, AckType, Acquired
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE, milliseconds
from kop.security.authorizer import TopicOp

BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1  # ShareFetch v2's ShareAcquireMode
DEFAULT_MAX_RECORDS = 500  # share.max.poll.records, when a request names none
MAX_RECORDS = 10_000  # what one fetch may acquire, whatever it asks
MAX_ACK_BATCHES = 10_000  # acknowledgement batches one partition may carry
SESSION_END = "share-session"  # its key in the connection's ends
_NO_LEADER = LeaderIdAndEpoch(leader_id=i32(-1), leader_epoch=i32(-1))

# (topic id, partition) -> its acknowledgement batches
Acks = dict[SharePart, list[AckBatch]]
# a partition's outcome: (error, acknowledgement error, acquired, records)
Outcome = tuple[KafkaError | None, KafkaError | None, list[Acquired], bytes]


async def share_fetch(
    services: Services, ctx: RequestContext, request: ShareFetchRequest
) -> Now[ShareFetchResponse] | Later[ShareFetchResponse]:
    """The session is read in the connection's ordered part: a member's fetches meet it
    in their order. Acknowledgements ride on the fetch; a new session carries none."""
    try:
        _check_v2(request)
        key, begun = await _begin(services, ctx, request.group_id, request.member_id,
                                  int(request.share_session_epoch))  # fmt: skip
        acks = _acks((t.topic_id, p.partition_index, p.acknowledgement_batches)
                     for t in request.topics for p in t.partitions)  # fmt: skip
        if acks and int(request.share_session_epoch) == OPEN_EPOCH:
            raise KafkaError(ErrorCode.invalid_request, "a new share session acknowledges nothing")
    except KafkaError as exc:
        return Now(_fetch_refused(services, None, exc))
    rules = _AckRules(ctx.api_version >= 2, request.is_renew_ack)
    return Later(_fetch(services, ctx, request, key, begun, acks, rules))


def _check_v2(request: ShareFetchRequest) -> None:
    """What version 2 asks of a fetch (v1's requests carry the defaults): a fetch that
    renews locks asks for nothing, with Kafka's message naming each field that is not
    0; an acquire mode is one Kafka defines."""
    if request.share_acquire_mode not in (BATCH_OPTIMIZED, RECORD_LIMIT):
        raise KafkaError(
            ErrorCode.invalid_request, f"Unknown ShareAcquireMode: {request.share_acquire_mode}"
        )
    if not request.is_renew_ack:
        return
    nonzero = [
        name
        for name, value in (
            ("maxBytes", int(request.max_bytes)), ("minBytes", int(request.min_bytes)),
            ("maxRecords", int(request.max_records)),
            ("maxWaitMs", int(request.max_wait.total_seconds() * 1000)),
        )
        if value != 0
    ]  # fmt: skip
    if nonzero:
        raise KafkaError(
            ErrorCode.invalid_request,
            "".join(f"{name} must be set to 0, " for name in nonzero) + "if isRenewAck is true.",
        )


class _AckRules(NamedTuple):
    """What the request's version and flag allow its acknowledgement batches."""

    renew_served: bool  # version 2 or later: RENEW (4) is an acknowledge type
    renew_flagged: bool  # IsRenewAck: the request says it carries RENEW types


def _invalid(batches: Sequence[AckBatch], rules: _AckRules) -> KafkaError | None:
    """A partition's batches as Kafka checks them before any is applied (the partition's
    acknowledgement error is INVALID_REQUEST): each ends at or after its start, starts
    after the one before ends, has types, one or one per record, each a known type, and
    RENEW only in a request that serves and flags it."""
    highest = AckType.RENEW if rules.renew_served else AckType.REJECT
    last = -1
    for b in batches:
        if b.first > b.last or b.first < last or not b.types:
            return KafkaError(ErrorCode.invalid_request, "invalid acknowledgement batch")
        if len(b.types) > 1 and b.last - b.first + 1 != len(b.types):
            return KafkaError(ErrorCode.invalid_request, "acknowledge types do not match the batch")
        if any(t < 0 or t > highest for t in b.types):
            return KafkaError(ErrorCode.invalid_request, "unknown acknowledge type")
        if AckType.RENEW in b.types and not rules.renew_flagged:
            return KafkaError(ErrorCode.invalid_request, "RENEW without isRenewAck")
        last = b.last
    return None


async def _begin(
    services: Services, ctx: RequestContext, group_id: str | None, member_id: str | None,
    epoch: int,
) -> tuple[str, Begun]:  # fmt: skip
    if not group_id:
        raise KafkaError(ErrorCode.invalid_request, "GroupId must be set.")
    if not member_id:
        raise KafkaError(ErrorCode.invalid_request, "MemberId must be set.")
    key = await group_key(services, ctx, group_id)
    begun = services.share_sessions.begin(owner(ctx), key, member_id, epoch)
    if begun.closing:
        ctx.ends.discard((SESSION_END, key, member_id))
    elif epoch == OPEN_EPOCH:
        ctx.ends.add((SESSION_END, key, member_id), lambda: _ended(services, begun.session))
    return key, begun


async def _ended(services: Services, session: ShareSession) -> None:
    """The connection that opened the session closed without closing it (a client
    killed, a network gone): the session's slot is freed and what its member acquired
    is released now, not when the locks expire."""
    if services.share_sessions.end(session):
        await services.share_partitions.release_member(session.group_key, session.member_id)


class _Batch(Protocol):
    """An acknowledgement batch of either request (their classes differ by API only)."""

    @property
    def first_offset(self) -> i64: ...
    @property
    def last_offset(self) -> i64: ...
    @property
    def acknowledge_types(self) -> tuple[i8, ...]: ...


def _acks(parts: Iterable[tuple[uuid.UUID | None, i32, Sequence[_Batch]]]) -> Acks:
    out: Acks = {}
    for topic_id, index, batches in parts:
        if topic_id is None:
            raise KafkaError(ErrorCode.invalid_request, "a topic without an id")
        if len(batches) > MAX_ACK_BATCHES:
            raise KafkaError(ErrorCode.invalid_request, "too many acknowledgement batches")
        if batches:
            out[(topic_id, int(index))] = [_batch(b) for b in batches]
    return out


def _batch(b: _Batch) -> AckBatch:
    types = tuple(int(t) for t in b.acknowledge_types)
    return AckBatch(int(b.first_offset), int(b.last_offset), types)


async def _fetch(
    services: Services, ctx: RequestContext, request: ShareFetchRequest, key: str, begun: Begun,
    acks: Acks, rules: _AckRules,
) -> ShareFetchResponse:  # fmt: skip
    session, member, group_id = begun.session, begun.session.member_id, cast(str, request.group_id)
    if begun.replaced is not None:
        await services.share_partitions.release_member(key, member)
    asked = [(t.topic_id, int(p.partition_index)) for t in request.topics for p in t.partitions
             if t.topic_id is not None]  # fmt: skip
    names = await _resolve(services, ctx, session, {tid for tid, _ in asked})
    out: dict[SharePart, Outcome] = {}
    for part, batches in acks.items():
        out[part] = (None, await _acknowledge(services, ctx, key, group_id, names, part,
                                              member, batches, rules), [], b"")  # fmt: skip
    if begun.closing:
        await services.share_partitions.release_member(key, member)
        return _fetch_answer(services, key, out)
    try:
        services.share_sessions.update(
            session, [(p, names[p[0]]) for p in asked if p[0] in names],
            [(t.topic_id, int(i)) for t in request.forgotten_topics_data
             for i in t.partitions if t.topic_id is not None],
        )  # fmt: skip
    except KafkaError as exc:
        return _fetch_refused(services, key, exc)
    for part in asked:
        if part[0] not in names:
            out[part] = (KafkaError(ErrorCode.unknown_topic_id), None, [], b"")
    if not request.is_renew_ack:  # a fetch that renews locks acquires nothing
        await _acquire(services, ctx, request, key, group_id, session, out)
    return _fetch_answer(services, key, out)


async def _acquire(
    services: Services, ctx: RequestContext, request: ShareFetchRequest, key: str,
    group_id: str, session: ShareSession, out: dict[SharePart, Outcome],
) -> None:  # fmt: skip
    """Acquires records of the session's partitions, waiting up to the request's wait
    (capped) for some to become available."""
    wait_ms = min(int(request.max_wait.total_seconds() * 1000), services.fetch_max_wait_cap_ms)
    deadline = time.monotonic() + max(0, wait_ms) / 1000
    asked = int(request.max_records)
    want = min(asked if asked > 0 else DEFAULT_MAX_RECORDS, MAX_RECORDS)
    strict = request.share_acquire_mode == RECORD_LIMIT
    cap = services.fetch_max_bytes_cap
    max_bytes = min(int(request.max_bytes), cap) if request.max_bytes > 0 else cap
    parts: dict[SharePart, SharePartition] = {}
    for part, name in list(session.partitions.items()):
        try:
            parts[part] = await _share_partition(services, ctx, key, group_id, name, part[1])
        except Exception as exc:
            code, message = error_of(exc)
            out[part] = (KafkaError(code, message), _ack_error(out, part), [], b"")
    while True:
        changed = [sp.changed() for sp in parts.values()]
        taken = size = 0
        for part, sp in parts.items():
            if taken >= want or size >= max_bytes:
                break
            got, data = sp.acquire(session.member_id, want - taken, max_bytes - size, strict)
            if got:
                out[part] = (None, _ack_error(out, part), got, data)
                taken += sum(a.last - a.first + 1 for a in got)
                size += len(data)
        remaining = deadline - time.monotonic()
        if taken or remaining <= 0 or not changed:
            for fut in changed:
                fut.cancel()
            return
        try:
            await asyncio.wait(changed, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fut in changed:
                fut.cancel()


def _ack_error(out: dict[SharePart, Outcome], part: SharePart) -> KafkaError | None:
    return out[part][1] if part in out else None


async def _share_partition(
    services: Services, ctx: RequestContext, key: str, group_id: str, name: str, index: int
) -> SharePartition:
    _, plog = await topic_partition(services, ctx, name, index, op=TopicOp.CONSUME)
    return await services.share_partitions.of(key, group_id, plog, (name, index))


async def _acknowledge(
    services: Services, ctx: RequestContext, key: str, group_id: str,
    names: dict[uuid.UUID, str], part: SharePart, member: str, batches: Sequence[AckBatch],
    rules: _AckRules,
) -> KafkaError | None:  # fmt: skip
    name = names.get(part[0])
    if name is None:
        return KafkaError(ErrorCode.unknown_topic_id)
    invalid = _invalid(batches, rules)
    if invalid is not None:
        return invalid
    try:
        sp = await _share_partition(services, ctx, key, group_id, name, part[1])
        await sp.acknowledge(member, batches, services.groups.configs.settings(key).share_renew)
    except Exception as exc:
        code, message = error_of(exc)
        return KafkaError(code, message)
    return None


async def _resolve(
    services: Services, ctx: RequestContext, session: ShareSession, ids: set[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """Names of the ids: those the session knows, the rest looked up."""
    known = {tid: name for (tid, _), name in session.partitions.items()}
    missing = ids - known.keys()
    return {**known, **await names_of(services, ctx, missing)}


def _lock_ms(services: Services, key: str | None) -> i32Timedelta:
    """The group's share.record.lock.duration.ms (the broker's when no group is known)."""
    configs = services.groups.configs
    return milliseconds((configs.settings(key) if key else configs.defaults).share_lock_ms)


def _fetch_answer(
    services: Services, key: str, out: dict[SharePart, Outcome]
) -> ShareFetchResponse:
    by_topic: dict[uuid.UUID, list[PartitionData]] = {}
    for (tid, index), (error, ack_error, got, data) in sorted(out.items()):
        by_topic.setdefault(tid, []).append(PartitionData(
            partition_index=i32(index),
            error_code=error.code if error else ErrorCode.none,
            error_message=error.message if error else None,
            acknowledge_error_code=i16(ack_error.code if ack_error else 0),
            acknowledge_error_message=ack_error.message if ack_error else None,
            current_leader=_NO_LEADER,
            records=cast(Records, data),
            acquired_records=tuple(
                AcquiredRecords(first_offset=i64(a.first), last_offset=i64(a.last),
                                delivery_count=i16(min(a.delivery_count, 2**15 - 1)))
                for a in got
            ),
        ))  # fmt: skip
    return ShareFetchResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
        acquisition_lock_timeout=_lock_ms(services, key),
        responses=tuple(ShareFetchableTopicResponse(topic_id=t, partitions=tuple(ps))
                        for t, ps in by_topic.items()),
        node_endpoints=(),
    )  # fmt: skip


def _fetch_refused(services: Services, key: str | None, exc: KafkaError) -> ShareFetchResponse:
    return ShareFetchResponse(
        throttle_time=NO_THROTTLE, error_code=exc.code, error_message=exc.message,
        acquisition_lock_timeout=_lock_ms(services, key), responses=(), node_endpoints=(),
    )  # fmt: skip


# -- ShareAcknowledge ------------------------------------------------------------------


async def share_acknowledge(
    services: Services, ctx: RequestContext, request: ShareAcknowledgeRequest
) -> Now[ShareAcknowledgeResponse] | Later[ShareAcknowledgeResponse]:
    try:
        epoch = int(request.share_session_epoch)
        if epoch == OPEN_EPOCH:
            raise KafkaError(
                ErrorCode.invalid_share_session_epoch, "ShareAcknowledge cannot open a session"
            )
        key, begun = await _begin(services, ctx, request.group_id, request.member_id, epoch)
        acks = _acks((t.topic_id, p.partition_index, p.acknowledgement_batches)
                     for t in request.topics for p in t.partitions)  # fmt: skip
    except KafkaError as exc:
        return Now(_ack_refused(services, exc))
    rules = _AckRules(ctx.api_version >= 2, request.is_renew_ack)
    return Later(
        _acknowledge_all(services, ctx, cast(str, request.group_id), key, begun, acks, rules)
    )


async def _acknowledge_all(
    services: Services, ctx: RequestContext, group_id: str, key: str, begun: Begun, acks: Acks,
    rules: _AckRules,
) -> ShareAcknowledgeResponse:  # fmt: skip
    session = begun.session
    names = await _resolve(services, ctx, session, {tid for tid, _ in acks})
    errors = {
        part: await _acknowledge(services, ctx, key, group_id, names, part,
                                 session.member_id, batches, rules)
        for part, batches in acks.items()
    }  # fmt: skip
    if begun.closing:
        await services.share_partitions.release_member(key, session.member_id)
    by_topic: dict[uuid.UUID, list[AckPartition]] = {}
    for (tid, index), error in sorted(errors.items()):
        by_topic.setdefault(tid, []).append(AckPartition(
            partition_index=i32(index), error_code=error.code if error else ErrorCode.none,
            error_message=error.message if error else None,
            current_leader=AckLeader(leader_id=i32(-1), leader_epoch=i32(-1)),
        ))  # fmt: skip
    return ShareAcknowledgeResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
        responses=tuple(ShareAcknowledgeTopicResponse(topic_id=t, partitions=tuple(ps))
                        for t, ps in by_topic.items()),
        node_endpoints=(), acquisition_lock_timeout=_lock_ms(services, key),
    )  # fmt: skip


def _ack_refused(services: Services, exc: KafkaError) -> ShareAcknowledgeResponse:
    return ShareAcknowledgeResponse(
        throttle_time=NO_THROTTLE, error_code=exc.code, error_message=exc.message,
        responses=(), node_endpoints=(), acquisition_lock_timeout=_lock_ms(services, None),
    )  # fmt: skip


ROUTES = (
    Route(ApiKey.SHARE_FETCH, ShareFetchRequest, ShareFetchResponse, share_fetch),
    Route(
        ApiKey.SHARE_ACKNOWLEDGE,
        ShareAcknowledgeRequest,
        ShareAcknowledgeResponse,
        share_acknowledge,
    ),
)
