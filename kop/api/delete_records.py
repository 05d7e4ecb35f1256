"""DeleteRecords: move partitions' log start forward, as `kafka-delete-records` does.

Pulsar cannot delete single messages, so the new log start is a floor kop
persists (`kop/log/floor.py`); the data below stays in Pulsar until its
retention deletes it. Each partition is answered once its floor is persisted.
"""

from __future__ import annotations

import asyncio

from kio.schema.delete_records.v2.request import DeleteRecordsRequest
from kio.schema.delete_records.v2.response import (
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from kio.schema.types import TopicName
from kio.static.primitive import i32, i64

from kop.api.context import (
    RequestContext,
    Services,
    error_of,
    existing_topic,
    lead,
)
from kop.api.routes import Now, Route
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.security.authorizer import TopicOp

NO_LOW_WATERMARK = -1  # what Kafka answers for a partition that failed


async def handle(
    services: Services, ctx: RequestContext, request: DeleteRecordsRequest
) -> Now[DeleteRecordsResponse]:
    timeout_s = request.timeout.total_seconds()
    wanted = [(t.name, p) for t in request.topics for p in t.partitions]
    parts = await asyncio.gather(
        *(
            _delete(services, ctx, name, p.partition_index, p.offset, timeout_s)
            for name, p in wanted
        )
    )
    topics: dict[TopicName, list[DeleteRecordsPartitionResult]] = {}
    for (name, _p), part in zip(wanted, parts, strict=True):
        topics.setdefault(name, []).append(part)
    return Now(
        DeleteRecordsResponse(
            throttle_time=NO_THROTTLE,
            topics=tuple(
                DeleteRecordsTopicResult(name=name, partitions=tuple(ps))
                for name, ps in topics.items()
            ),
        )
    )


ROUTES = (Route(ApiKey.DELETE_RECORDS, DeleteRecordsRequest, DeleteRecordsResponse, handle),)


async def _delete(
    services: Services, ctx: RequestContext, name: str, index: int, offset: int, timeout_s: float
) -> DeleteRecordsPartitionResult:
    try:
        view = await existing_topic(services, ctx, name, TopicOp.ALTER)
        if not 0 <= index < view.partitions:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition, f"{name} has no partition {index}"
            )
        lead(services, view.partition_topic(index))
        plog = await services.logs.of_topic(view, index)
        # The request's timeout bounds the wait, not the work: a floor being
        # persisted is still applied after the client stopped waiting.
        async with asyncio.timeout(timeout_s if timeout_s > 0 else None):
            low = await plog.delete_records(offset)
        return _part(index, ErrorCode.none, low)
    except TimeoutError:
        return _part(index, ErrorCode.request_timed_out, NO_LOW_WATERMARK)
    except Exception as exc:
        code, _ = error_of(exc)
        return _part(index, code, NO_LOW_WATERMARK)


def _part(index: int, code: ErrorCode, low_watermark: int) -> DeleteRecordsPartitionResult:
    return DeleteRecordsPartitionResult(
        partition_index=i32(index), low_watermark=i64(low_watermark), error_code=code
    )
