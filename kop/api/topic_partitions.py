"""DescribeTopicPartitions (KIP-966), which Kafka 4's admin tools use to describe
topics: the Metadata view of partitions, with (empty) eligible leader replicas,
paged by a partition limit and a cursor."""

from __future__ import annotations

import uuid

from kio.schema.describe_topic_partitions.v0.request import DescribeTopicPartitionsRequest
from kio.schema.describe_topic_partitions.v0.response import (
    Cursor,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)
from kio.schema.metadata.v12.response import MetadataResponsePartition
from kio.schema.types import TopicName
from kio.static.primitive import i32

from kop.api.context import RequestContext, Services, error_of, existing_topic
from kop.api.internal_topics import OFFSETS_TOPIC_ID, is_internal
from kop.api.metadata import UNKNOWN_OPERATIONS, ZERO_UUID, offsets_partitions, partitions
from kop.api.routes import Now, Route
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE


async def handle(
    services: Services, ctx: RequestContext, request: DescribeTopicPartitionsRequest
) -> Now[DescribeTopicPartitionsResponse]:
    names = sorted({t.name for t in request.topics})
    cursor = request.cursor
    if cursor is not None:
        names = [n for n in names if n >= cursor.topic_name]
    budget = max(1, request.response_partition_limit)
    topics: list[DescribeTopicPartitionsResponseTopic] = []
    next_cursor = None
    for name in names:
        if budget <= 0:
            next_cursor = Cursor(topic_name=name, partition_index=i32(0))
            break
        internal = is_internal(name) and services.offsets_topic_partitions > 0
        try:
            if internal:
                every, topic_id = offsets_partitions(services), OFFSETS_TOPIC_ID
            else:
                view = await existing_topic(services, ctx, name)
                every, topic_id = partitions(services, view), view.topic_id
        except Exception as exc:
            code, _ = error_of(exc)
            topics.append(_topic(name, code, ()))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        parts = [p for p in every if p.partition_index >= first]
        if len(parts) > budget:
            next_cursor = Cursor(topic_name=name, partition_index=parts[budget].partition_index)
            parts = parts[:budget]
        budget -= len(parts)
        elr = tuple(_with_elr(p) for p in parts)
        topics.append(_topic(name, ErrorCode.none, elr, topic_id, internal))
        if next_cursor is not None:
            break
    return Now(
        DescribeTopicPartitionsResponse(
            throttle_time=NO_THROTTLE, topics=tuple(topics), next_cursor=next_cursor
        )
    )


ROUTES = (
    Route(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        DescribeTopicPartitionsRequest,
        DescribeTopicPartitionsResponse,
        handle,
    ),
)


def _topic(
    name: TopicName,
    code: ErrorCode,
    parts: tuple[DescribeTopicPartitionsResponsePartition, ...],
    topic_id: uuid.UUID = ZERO_UUID,
    internal: bool = False,
) -> DescribeTopicPartitionsResponseTopic:
    """A topic as Metadata describes it (kop.api.metadata)."""
    return DescribeTopicPartitionsResponseTopic(
        error_code=code,
        name=name,
        topic_id=topic_id,
        is_internal=internal,
        partitions=parts,
        topic_authorized_operations=i32(UNKNOWN_OPERATIONS),
    )


def _with_elr(partition: MetadataResponsePartition) -> DescribeTopicPartitionsResponsePartition:
    """A partition of Metadata's view (kop.api.metadata.partitions), its eligible
    leader replicas empty."""
    return DescribeTopicPartitionsResponsePartition(
        error_code=partition.error_code,
        partition_index=partition.partition_index,
        leader_id=partition.leader_id,
        leader_epoch=partition.leader_epoch,
        replica_nodes=partition.replica_nodes,
        isr_nodes=partition.isr_nodes,
        eligible_leader_replicas=(),
        last_known_elr=(),
        offline_replicas=partition.offline_replicas,
    )
