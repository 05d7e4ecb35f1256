"""The partition leader's part of the share-group offset APIs, asked by the group's
coordinator on another kop instance (kop.groups.share.offsets; D30): the group named by
kop's key, topics by their full Pulsar names, answered for the partitions led here. Only
a connection proven by `KOP-PEER` reaches it (kop/api/share_offsets.py)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kio.schema.alter_share_group_offsets.v0.request import AlterShareGroupOffsetsRequest
from kio.schema.delete_share_group_offsets.v0.request import DeleteShareGroupOffsetsRequest
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequestGroup,
)
from kio.schema.describe_share_group_offsets.v1.response import (
    DescribeShareGroupOffsetsResponseGroup,
)

from kop.api.context import RequestContext, Services, topic_for
from kop.api.share_offset_answers import (
    NO_OFFSETS,
    Altered,
    Deleted,
    described_group,
    described_topic,
    target,
)
from kop.groups.share.offsets import ShareTarget
from kop.groups.share.state import StartOffset
from kop.protocol.errors import ErrorCode, KafkaError
from kop.topics.catalog import TopicView

T = TypeVar("T")


async def describe_led(
    services: Services, ctx: RequestContext, g: DescribeShareGroupOffsetsRequestGroup
) -> DescribeShareGroupOffsetsResponseGroup:
    """A coordinator asks for the partitions this instance leads."""
    topics = []
    for t in g.topics or ():
        try:
            view = await _led_view(services, ctx, t.topic_name)
        except KafkaError as exc:
            topics.append(described_topic(t.topic_name, None, {int(p): exc for p in t.partitions}))
            continue
        outcome: dict[int, StartOffset | KafkaError] = {}
        for p in t.partitions:
            outcome[int(p)] = await _led(
                view,
                int(p),
                functools.partial(services.share_offsets.describe_here, g.group_id),
            )
        topics.append(described_topic(t.topic_name, view, outcome))
    return described_group(g.group_id, topics)


async def alter_led(
    services: Services, ctx: RequestContext, request: AlterShareGroupOffsetsRequest
) -> list[Altered]:
    out: list[Altered] = []
    for t in request.topics:
        view = await _led_view(services, ctx, t.topic_name)
        result: dict[int, KafkaError | None] = {}
        for p in t.partitions:
            here = functools.partial(_alter_here, services, request.group_id, int(p.start_offset))
            result[int(p.partition_index)] = await _led(view, int(p.partition_index), here)
        out.append((t.topic_name, view, result))
    return out


async def delete_led(
    services: Services, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
) -> list[Deleted]:
    """Every partition of each topic this instance leads."""
    out: list[Deleted] = []
    for t in request.topics:
        view = await _led_view(services, ctx, t.topic_name)
        found: list[bool | KafkaError] = []
        for index in range(view.partitions if view is not None else 0):
            if view is not None and services.ownership.mine(view.partition_topic(index)):
                found.append(
                    await _led(
                        view,
                        index,
                        functools.partial(services.share_offsets.delete_here, request.group_id),
                    )
                )
        failed = [f for f in found if isinstance(f, KafkaError)]
        if failed:
            out.append((t.topic_name, view, failed[0]))
        elif any(found):
            out.append((t.topic_name, view, None))
        else:
            out.append((t.topic_name, view, NO_OFFSETS))
    return out


async def _alter_here(services: Services, key: str, offset: int, target: ShareTarget) -> None:
    await services.share_offsets.alter_here(key, target, offset)


async def _led_view(services: Services, ctx: RequestContext, name: str) -> TopicView | None:
    """The topic a peer names by its full Pulsar name (any tenant's: a peer is kop)."""
    return await services.catalog.describe(topic_for(ctx, name))


async def _led(
    view: TopicView | None, index: int, call: Callable[[ShareTarget], Awaitable[T]]
) -> T | KafkaError:
    if view is None or not 0 <= index < view.partitions:
        return KafkaError(ErrorCode.unknown_topic_or_partition, f"no partition {index}")
    try:
        return await call(target(view, index))
    except KafkaError as exc:
        return exc
