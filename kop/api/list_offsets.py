"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3), or by timestamp."""

from __future__ import annotations

import asyncio
from typing import Any

from kop.api.context import RequestContext, Response, Services, error_of, partition_log
from kop.protocol.batch_epochs import BATCH_EPOCH, NO_EPOCH
from kop.protocol.errors import ErrorCode, KafkaError
from kop.security.authorizer import TopicOp

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
READ_COMMITTED = 1


async def handle(services: Services, ctx: RequestContext, request: Any) -> Response:
    topics = []
    committed = int(getattr(request, "isolation_level", 0)) == READ_COMMITTED
    for t in request.topics:
        parts = await asyncio.gather(
            *(
                _lookup(
                    services, ctx, t.name, p.partition_index, p.timestamp, _current(p), committed
                )
                for p in t.partitions
            )
        )
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}


def _current(partition: Any) -> int:
    """The client's view of the leader epoch (v4+; -1: none)."""
    return int(getattr(partition, "current_leader_epoch", NO_EPOCH))


async def _lookup(
    services: Services, ctx: RequestContext, name: str, index: int, timestamp: int, current: int,
    committed: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """With `committed` (read_committed), nothing at or past the last stable offset."""
    try:
        plog = await partition_log(services, ctx, name, index, current, TopicOp.CONSUME)
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
) -> dict[str, Any]:
    """`epoch`: of the record at `offset`, which every served batch carries."""
    return {
        "partition_index": index,
        "error_code": code,
        "timestamp": timestamp,
        "offset": offset,
        "leader_epoch": epoch if offset >= 0 else NO_EPOCH,
    }
