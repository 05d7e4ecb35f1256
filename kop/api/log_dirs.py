"""DescribeLogDirs: kop's "log directory" is the Pulsar namespace its topics live
in, and a partition's size is what Pulsar stores for it. The lag is always 0:
Pulsar replicates below kop, there is no follower log to catch up. As a Kafka
broker lists only the replicas it hosts, an instance lists only the partitions it
owns (docs/decisions.md D15): kafka-log-dirs asks every broker and adds up."""

from __future__ import annotations

import asyncio

from kio.schema.describe_log_dirs.v4.request import DescribeLogDirsRequest
from kio.schema.describe_log_dirs.v4.response import (
    DescribeLogDirsPartition,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)
from kio.schema.types import TopicName
from kio.static.primitive import i32, i64

from kop.api.context import RequestContext, Services, existing_topic
from kop.api.routes import Now, Route
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE

_STATS_AT_ONCE = 16  # Pulsar stats lookups in flight for one request


async def handle(
    services: Services, ctx: RequestContext, request: DescribeLogDirsRequest
) -> Now[DescribeLogDirsResponse]:
    """The top-level error code (v3+) is dropped for older versions, as Kafka's schema
    allows: they learn of a refusal from the empty results."""
    if not await ctx.access.cluster():
        return Now(
            DescribeLogDirsResponse(
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode.cluster_authorization_failed,
                results=(),
            )
        )
    wanted: dict[TopicName, list[int] | None]
    if request.topics is None:
        # listed now: kafka-log-dirs asks every broker right after a topic is made, and
        # an instance's cached list may not hold one created through another instance
        # yet (a cluster admin's request; one listing of one namespace)
        names = await services.catalog.names(ctx.namespace, fresh=True)
        wanted = dict.fromkeys(TopicName(n) for n in names)
    else:
        wanted = {t.topic: list(t.partitions) for t in request.topics}
    gate = asyncio.Semaphore(_STATS_AT_ONCE)

    async def size(partition_topic: str) -> int:
        async with gate:
            return await services.catalog.stored_bytes(partition_topic)

    topics = []
    for name, asked in wanted.items():
        try:
            view = await existing_topic(services, ctx, name)
        except Exception:
            continue  # Kafka leaves out what it does not host
        indexes = [
            i for i in (asked or range(view.partitions))
            if 0 <= i < view.partitions and services.ownership.mine(view.partition_topic(i))
        ]  # fmt: skip
        if not indexes:
            continue  # none hosted here: Kafka leaves the topic out
        sizes = await asyncio.gather(*(size(view.partition_topic(i)) for i in indexes))
        topics.append(
            DescribeLogDirsTopic(
                name=name,
                partitions=tuple(_partition(i, s) for i, s in zip(indexes, sizes, strict=True)),
            )
        )
    result = DescribeLogDirsResult(
        error_code=ErrorCode.none,
        log_dir=f"pulsar://{ctx.namespace.path}",
        topics=tuple(topics),
        total_bytes=i64(-1),
        usable_bytes=i64(-1),
    )
    return Now(
        DescribeLogDirsResponse(
            throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results=(result,)
        )
    )


ROUTES = (Route(ApiKey.DESCRIBE_LOG_DIRS, DescribeLogDirsRequest, DescribeLogDirsResponse, handle),)


def _partition(index: int, size: int) -> DescribeLogDirsPartition:
    return DescribeLogDirsPartition(
        partition_index=i32(index),
        partition_size=i64(size),
        offset_lag=i64(0),
        is_future_key=False,
    )
