"""DescribeTopicPartitions (KIP-966), which Kafka 4's admin tools use to describe
topics: the Metadata view of partitions, with (empty) eligible leader replicas,
paged by a partition limit and a cursor."""

from __future__ import annotations

from typing import Any

from kop.api.context import RequestContext, Response, Services, error_of, existing_topic
from kop.api.internal_topics import OFFSETS_TOPIC_ID, is_internal
from kop.api.metadata import offsets_partitions, partitions, topic_entry
from kop.protocol.errors import ErrorCode


async def handle(services: Services, ctx: RequestContext, request: Any) -> Response:
    names = sorted({t.name for t in request.topics})
    cursor = request.cursor
    if cursor is not None:
        names = [n for n in names if n >= cursor.topic_name]
    budget = max(1, request.response_partition_limit)
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in names:
        if budget <= 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
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
            topics.append(topic_entry(name, code, []))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        parts = [p for p in every if p["partition_index"] >= first]
        if len(parts) > budget:
            next_cursor = {"topic_name": name, "partition_index": parts[budget]["partition_index"]}
            parts = parts[:budget]
        budget -= len(parts)
        elr = [_with_elr(p) for p in parts]
        topics.append(topic_entry(name, ErrorCode.none, elr, topic_id, internal))
        if next_cursor is not None:
            break
    return {"throttle_time": 0, "topics": topics, "next_cursor": next_cursor}


def _with_elr(partition: dict[str, Any]) -> dict[str, Any]:
    return {**partition, "eligible_leader_replicas": (), "last_known_elr": ()}
