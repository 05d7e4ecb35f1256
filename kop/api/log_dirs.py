"""DescribeLogDirs: kop's "log directory" is the Pulsar namespace its topics live
in, and a partition's size is what Pulsar stores for it. The lag is always 0:
Pulsar replicates below kop, there is no follower log to catch up. As a Kafka
broker lists only the replicas it hosts, an instance lists only the partitions it
owns (docs/decisions.md D15): kafka-log-dirs asks every broker and adds up."""

from __future__ import annotations

import asyncio
from typing import Any

from kop.api.context import RequestContext, Response, Services, existing_topic
from kop.protocol.errors import ErrorCode

_STATS_AT_ONCE = 16  # Pulsar stats lookups in flight for one request


async def handle(services: Services, ctx: RequestContext, request: Any) -> Response:
    if not await ctx.access.cluster():
        return {"throttle_time": 0, "error_code": ErrorCode.cluster_authorization_failed,
                "results": ()}  # fmt: skip
    wanted: dict[str, list[int] | None]
    if request.topics is None:
        wanted = dict.fromkeys(await services.catalog.names(ctx.namespace))
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
            if 0 <= i < view.partitions and services.owners.mine(view.partition_topic(i))
        ]  # fmt: skip
        if not indexes:
            continue  # none hosted here: Kafka leaves the topic out
        sizes = await asyncio.gather(*(size(view.partition_topic(i)) for i in indexes))
        topics.append(
            {
                "name": name,
                "partitions": [_partition(i, s) for i, s in zip(indexes, sizes, strict=True)],
            }
        )
    result = {
        "error_code": ErrorCode.none,
        "log_dir": f"pulsar://{ctx.namespace.path}",
        "topics": topics,
        "total_bytes": -1,
        "usable_bytes": -1,
    }
    return {"throttle_time": 0, "error_code": ErrorCode.none, "results": [result]}


def _partition(index: int, size: int) -> dict[str, Any]:
    return {
        "partition_index": index,
        "partition_size": size,
        "offset_lag": 0,
        "is_future_key": False,
    }
