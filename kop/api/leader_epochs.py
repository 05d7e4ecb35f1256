"""OffsetForLeaderEpoch: where a leader epoch ends, so consumers can check that
their position was not truncated away (KIP-320). See `kop.log.leader_epoch`."""

from __future__ import annotations

import asyncio
from typing import Any

from kop.api.context import RequestContext, Response, Services, error_of, partition_log
from kop.log.leader_epoch import end_offset_for
from kop.protocol.batch_epochs import NO_EPOCH
from kop.protocol.errors import ErrorCode


async def handle(services: Services, ctx: RequestContext, request: Any) -> Response:
    topics = []
    for t in request.topics:
        parts = await asyncio.gather(
            *(
                _end(services, ctx, t.topic, p.partition, p.current_leader_epoch, p.leader_epoch)
                for p in t.partitions
            )
        )
        topics.append({"topic": t.topic, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}


async def _end(
    services: Services, ctx: RequestContext, name: str, index: int, current: int, epoch: int
) -> dict[str, Any]:
    try:
        plog = await partition_log(services, ctx, name, index, current)
        found, end = end_offset_for(epoch, plog.log_start, plog.high_watermark, plog.leader_epoch)
        return _part(index, ErrorCode.none, found, end)
    except Exception as exc:
        code, _ = error_of(exc)
        return _part(index, code, NO_EPOCH, -1)


def _part(index: int, code: ErrorCode, epoch: int, end: int) -> dict[str, Any]:
    return {"error_code": code, "partition": index, "leader_epoch": epoch, "end_offset": end}
