"""Metadata: Kafka topics are Pulsar partitioned topics; the brokers are the live kop
instances, and each partition's leader is its owner (kop.cluster.ownership)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kop.api.context import RequestContext, Response, Services, error_of, permitted, topic_for
from kop.api.internal_topics import OFFSETS_TOPIC, OFFSETS_TOPIC_ID, is_internal
from kop.cluster.member import Member
from kop.protocol.errors import ErrorCode, KafkaError
from kop.security.authorizer import TopicOp
from kop.topics.catalog import TopicView

ZERO_UUID = uuid.UUID(int=0)
UNKNOWN_OPERATIONS = -(2**31)


async def handle(services: Services, ctx: RequestContext, request: Any) -> Response:
    b = services.broker
    brokers = services.owners.brokers()
    if request.topics is None:
        names = await services.catalog.names(ctx.namespace)
        names = [n for n in names if not is_internal(n)]
        allowed = await asyncio.gather(*(_may_describe(ctx, n) for n in names))
        names = [n for n, ok in zip(names, allowed, strict=True) if ok]
        if services.offsets_topic_partitions and await ctx.access.cluster():
            names.append(OFFSETS_TOPIC)
        topics = await asyncio.gather(*(_describe(services, ctx, n, False) for n in names))
    else:
        allow = services.auto_create_topics and getattr(request, "allow_auto_topic_creation", True)
        topics = await asyncio.gather(
            *(_describe(services, ctx, t.name, allow) for t in request.topics if t.name)
        )
    return {
        "throttle_time": 0,
        "brokers": [_broker(m, ctx.listener) for m in brokers],
        "cluster_id": b.cluster_id,
        # Kafka names its active controller; kop has none, and the lowest live node id
        # is the same answer from every instance.
        "controller_id": brokers[0].node_id if brokers else -1,
        "topics": [t for t in topics if t is not None],
        "cluster_authorized_operations": UNKNOWN_OPERATIONS,
    }


async def _describe(
    services: Services, ctx: RequestContext, name: str, auto_create: bool
) -> dict[str, Any] | None:
    if is_internal(name) and services.offsets_topic_partitions:
        if not await ctx.access.cluster():
            return topic_entry(name, ErrorCode.topic_authorization_failed, [])
        return _offsets_topic(services)
    try:
        topic = await permitted(ctx, name, TopicOp.DESCRIBE)
        view = await services.catalog.describe(topic)
        if view is None and auto_create:
            try:
                view = await services.catalog.create(topic, -1, {})
            except KafkaError as exc:
                if exc.code != ErrorCode.topic_already_exists:
                    raise
                services.catalog.invalidate(topic)
                view = await services.catalog.describe(topic)
        if view is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"no topic {name!r}")
    except Exception as exc:
        code, _ = error_of(exc)
        return topic_entry(name, code, [])
    return topic_entry(name, ErrorCode.none, partitions(services, view), view.topic_id)


async def _may_describe(ctx: RequestContext, name: str) -> bool:
    """Listing every topic shows only those the principal may see (as Kafka does)."""
    try:
        return await ctx.access.topic(topic_for(ctx, name), TopicOp.DESCRIBE)
    except KafkaError:
        return True  # an illegal name: listed with its error, as before


def _offsets_topic(services: Services) -> dict[str, Any]:
    """Listed as Kafka lists its own, so regex subscriptions and tools skip it."""
    parts = offsets_partitions(services)
    return topic_entry(OFFSETS_TOPIC, ErrorCode.none, parts, OFFSETS_TOPIC_ID, internal=True)


def topic_entry(
    name: str,
    code: ErrorCode,
    parts: list[dict[str, Any]],
    topic_id: uuid.UUID = ZERO_UUID,
    internal: bool = False,
) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": topic_id,
        "is_internal": internal,
        "partitions": parts,
        "topic_authorized_operations": UNKNOWN_OPERATIONS,
    }


def partitions(services: Services, view: TopicView) -> list[dict[str, Any]]:
    """Each partition's owner leads it and is its only replica."""
    return [_partition(services, i, view.partition_topic(i)) for i in range(view.partitions)]


def offsets_partitions(services: Services) -> list[dict[str, Any]]:
    """`__consumer_offsets`: as many partitions as kop's own offsets topic, each led
    by the coordinator of its groups."""
    count = services.offsets_topic_partitions
    return [_partition(services, i, services.offsets_partition(i)) for i in range(count)]


def _partition(services: Services, index: int, key: str) -> dict[str, Any]:
    owner = services.owners.owner(key)
    if owner is None:  # no instance is alive in this one's view
        return {
            "error_code": ErrorCode.leader_not_available, "partition_index": index,
            "leader_id": -1, "leader_epoch": -1, "replica_nodes": (), "isr_nodes": (),
            "offline_replicas": (),
        }  # fmt: skip
    node = owner.node_id
    return {
        "error_code": ErrorCode.none,
        "partition_index": index,
        "leader_id": node,
        "leader_epoch": services.logs.leader_epoch(key, owner.instance),
        "replica_nodes": (node,),
        "isr_nodes": (node,),
        "offline_replicas": (),
    }


def _broker(member: Member, listener: str) -> dict[str, Any]:
    host, port = member.address(listener)
    return {"node_id": member.node_id, "host": host, "port": port, "rack": None}
