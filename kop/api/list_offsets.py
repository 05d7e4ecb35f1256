"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3), or by timestamp."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsRequest
from kio.schema.list_offsets.v7.response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from kio.static.primitive import i32, i64

from kop.api.context import RequestContext, Services, error_of, partition_log
from kop.api.routes import Now, Route
from kop.protocol.batch_epochs import BATCH_EPOCH, NO_EPOCH
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.security.authorizer import TopicOp

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
READ_COMMITTED = 1
FIRST_WITH_EPOCH = 4  # the answer's leader_epoch (not ignorable: older versions must not set it)


async def handle(
    services: Services, ctx: RequestContext, request: ListOffsetsRequest
) -> Now[ListOffsetsResponse]:
    topics = []
    committed = request.isolation_level == READ_COMMITTED
    epochs = ctx.api_version >= FIRST_WITH_EPOCH
    for t in request.topics:
        parts = await asyncio.gather(
            *(_lookup(services, ctx, t.name, p, committed, epochs) for p in t.partitions)
        )
        topics.append(ListOffsetsTopicResponse(name=t.name, partitions=tuple(parts)))
    return Now(ListOffsetsResponse(throttle_time=NO_THROTTLE, topics=tuple(topics)))


ROUTES = (Route(ApiKey.LIST_OFFSETS, ListOffsetsRequest, ListOffsetsResponse, handle),)


async def _lookup(
    services: Services, ctx: RequestContext, name: str, p: ListOffsetsPartition, committed: bool,
    epochs: bool = True,
) -> ListOffsetsPartitionResponse:  # fmt: skip
    """With `committed` (read_committed), nothing at or past the last stable offset;
    without `epochs` (before v4), no leader epoch, as Kafka's broker answers."""
    found = await _found(services, ctx, name, p, committed)
    return found if epochs else replace(found, leader_epoch=i32(NO_EPOCH))


async def _found(
    services: Services, ctx: RequestContext, name: str, p: ListOffsetsPartition, committed: bool
) -> ListOffsetsPartitionResponse:
    index, timestamp = p.partition_index, p.timestamp
    try:
        plog = await partition_log(
            services, ctx, name, index, p.current_leader_epoch, TopicOp.CONSUME
        )
        end = plog.last_stable if committed else plog.high_watermark
        if timestamp == LATEST:  # Kafka names the latest epoch with the log end
            return _part(index, ErrorCode.none, end, -1, plog.leader_epoch)
        if timestamp == EARLIEST:
            return _part(index, ErrorCode.none, plog.log_start, -1)
        if timestamp == MAX_TIMESTAMP:
            found = await plog.offset_for_time(plog.index.max_timestamp)
        elif timestamp < 0:
            raise KafkaError(ErrorCode.invalid_request, f"unknown special timestamp {timestamp}")
        else:
            found = await plog.offset_for_time(timestamp)
        offset, ts = found if found is not None and found[0] < end else (-1, -1)
        return _part(index, ErrorCode.none, offset, ts)
    except Exception as exc:
        code, _ = error_of(exc)
        return _part(index, code, -1, -1)


def _part(
    index: int, code: ErrorCode, offset: int, timestamp: int, epoch: int = BATCH_EPOCH
) -> ListOffsetsPartitionResponse:
    """`epoch`: of the record at `offset`, which every served batch carries."""
    return ListOffsetsPartitionResponse(
        partition_index=i32(index),
        error_code=code,
        timestamp=i64(timestamp),
        offset=i64(offset),
        leader_epoch=i32(epoch if offset >= 0 else NO_EPOCH),
    )
