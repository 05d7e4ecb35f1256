"""OffsetForLeaderEpoch: where a leader epoch ends, so consumers can check that
their position was not truncated away (KIP-320). See `kop.log.leader_epoch`."""

from __future__ import annotations

import asyncio

from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
)
from kio.schema.offset_for_leader_epoch.v4.response import (
    EpochEndOffset,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from kio.static.primitive import i32, i64

from kop.api.context import RequestContext, Services, error_of, partition_log
from kop.api.routes import Now, Route
from kop.log.leader_epoch import end_offset_for
from kop.protocol.batch_epochs import NO_EPOCH
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE


async def handle(
    services: Services, ctx: RequestContext, request: OffsetForLeaderEpochRequest
) -> Now[OffsetForLeaderEpochResponse]:
    topics = []
    for t in request.topics:
        parts = await asyncio.gather(*(_end(services, ctx, t.topic, p) for p in t.partitions))
        topics.append(OffsetForLeaderTopicResult(topic=t.topic, partitions=tuple(parts)))
    return Now(OffsetForLeaderEpochResponse(throttle_time=NO_THROTTLE, topics=tuple(topics)))


ROUTES = (
    Route(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        OffsetForLeaderEpochRequest,
        OffsetForLeaderEpochResponse,
        handle,
    ),
)


async def _end(
    services: Services, ctx: RequestContext, name: str, p: OffsetForLeaderPartition
) -> EpochEndOffset:
    try:
        plog = await partition_log(services, ctx, name, p.partition, p.current_leader_epoch)
        found, end = end_offset_for(
            p.leader_epoch, plog.log_start, plog.high_watermark, plog.leader_epoch
        )
        return _part(p.partition, ErrorCode.none, found, end)
    except Exception as exc:
        code, _ = error_of(exc)
        return _part(p.partition, code, NO_EPOCH, -1)


def _part(index: int, code: ErrorCode, epoch: int, end: int) -> EpochEndOffset:
    return EpochEndOffset(
        error_code=code, partition=i32(index), leader_epoch=i32(epoch), end_offset=i64(end)
    )
