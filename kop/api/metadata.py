"""Metadata: Kafka topics are Pulsar partitioned topics; the brokers are the live kop
instances, and each partition's leader is its owner (kop.cluster.ownership)."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.metadata.v12.response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from kop.api.context import RequestContext, Services, error_of, permitted, topic_for
from kop.api.internal_topics import OFFSETS_TOPIC, OFFSETS_TOPIC_ID, is_internal
from kop.api.routes import Now, Route
from kop.cluster.member import Member
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey, response_schema
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import downgrade
from kop.security.authorizer import TopicOp
from kop.topics.catalog import TopicView

ZERO_UUID = uuid.UUID(int=0)
UNKNOWN_OPERATIONS = -(2**31)
# The versions whose answer tells the cluster's authorized operations (v11 left them
# to DescribeCluster, KIP-700), so the newest class has no field for them.
CLUSTER_OPERATIONS_VERSIONS = range(8, 11)


async def handle(
    services: Services, ctx: RequestContext, request: MetadataRequest
) -> Now[MetadataResponse]:
    b = services.broker
    brokers = services.ownership.brokers()
    if request.topics is None:
        names = await services.catalog.names(ctx.namespace)
        names = [n for n in names if not is_internal(n)]
        allowed = await asyncio.gather(*(_may_describe(ctx, n) for n in names))
        names = [n for n, ok in zip(names, allowed, strict=True) if ok]
        if services.offsets_topic_partitions and await ctx.access.cluster():
            names.append(OFFSETS_TOPIC)
        topics = await asyncio.gather(*(_describe(services, ctx, n, False) for n in names))
    else:
        allow = services.auto_create_topics and request.allow_auto_topic_creation
        topics = await asyncio.gather(
            *(_describe(services, ctx, t.name, allow) for t in request.topics if t.name),
            *(_by_id(services, ctx, t.topic_id) for t in request.topics if not t.name),
        )
    return Now(
        MetadataResponse(
            throttle_time=NO_THROTTLE,
            brokers=tuple(_broker(m, ctx.listener) for m in brokers),
            cluster_id=b.cluster_id,
            # Kafka names its active controller; kop has none, and the lowest live node
            # id is the same answer from every instance.
            controller_id=BrokerId(brokers[0].node_id if brokers else -1),
            topics=tuple(topics),
        )
    )


def _written(answer: MetadataResponse, version: int) -> Any:
    """v8-10 also tell the cluster's authorized operations: kop tells none (unknown),
    whatever the request's include_cluster_authorized_operations (which the newest
    request lacks and kop never read: up-converting drops it)."""
    written = downgrade(answer, response_schema(ApiKey.METADATA, version), ApiKey.METADATA)
    if version in CLUSTER_OPERATIONS_VERSIONS:
        written = dataclasses.replace(
            written, cluster_authorized_operations=i32(UNKNOWN_OPERATIONS)
        )
    return written


ROUTES = (Route(ApiKey.METADATA, MetadataRequest, MetadataResponse, handle, down=_written),)


async def _describe(
    services: Services, ctx: RequestContext, name: str, auto_create: bool
) -> MetadataResponseTopic:
    if is_internal(name) and services.offsets_topic_partitions:
        if not await ctx.access.cluster():
            return _topic(name, ErrorCode.topic_authorization_failed)
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
        return _topic(name, code)
    return _topic(name, ErrorCode.none, partitions(services, view), view.topic_id)


async def _by_id(
    services: Services, ctx: RequestContext, topic_id: uuid.UUID | None
) -> MetadataResponseTopic:
    """A topic asked for by its id alone (v12: a KIP-848 consumer learns its assignment
    as topic ids, and a regex subscriber has not named those topics). Only the client's
    own namespace is searched, so another tenant's ids are unknown (UNKNOWN_TOPIC_ID)."""
    if topic_id is not None and topic_id != ZERO_UUID:
        names = [n for n in await services.catalog.names(ctx.namespace) if not is_internal(n)]
        views = await asyncio.gather(*(_view_of(services, ctx, n) for n in names))
        for name, view in zip(names, views, strict=True):
            if view is not None and view.topic_id == topic_id:
                return await _describe(services, ctx, name, False)
    nameless = None if ctx.api_version >= 12 else TopicName("")  # null from v12 on
    return MetadataResponseTopic(
        error_code=ErrorCode.unknown_topic_id, name=nameless, topic_id=topic_id or ZERO_UUID,
        is_internal=False, partitions=(),
    )  # fmt: skip


async def _view_of(services: Services, ctx: RequestContext, name: str) -> TopicView | None:
    try:
        return await services.catalog.describe(topic_for(ctx, name))
    except KafkaError:
        return None


async def _may_describe(ctx: RequestContext, name: str) -> bool:
    """Listing every topic shows only those the principal may see (as Kafka does)."""
    try:
        return await ctx.access.topic(topic_for(ctx, name), TopicOp.DESCRIBE)
    except KafkaError:
        return True  # an illegal name: listed with its error, as before


def _offsets_topic(services: Services) -> MetadataResponseTopic:
    """Listed as Kafka lists its own, so regex subscriptions and tools skip it."""
    parts = offsets_partitions(services)
    return _topic(OFFSETS_TOPIC, ErrorCode.none, parts, OFFSETS_TOPIC_ID, internal=True)


def _topic(
    name: str,
    code: ErrorCode,
    parts: tuple[MetadataResponsePartition, ...] = (),
    topic_id: uuid.UUID = ZERO_UUID,
    internal: bool = False,
) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=code,
        name=TopicName(name),
        topic_id=topic_id,
        is_internal=internal,
        partitions=parts,
        topic_authorized_operations=i32(UNKNOWN_OPERATIONS),
    )


def partitions(services: Services, view: TopicView) -> tuple[MetadataResponsePartition, ...]:
    """Each partition's owner leads it and is its only replica."""
    return tuple(_partition(services, i, view.partition_topic(i)) for i in range(view.partitions))


def offsets_partitions(services: Services) -> tuple[MetadataResponsePartition, ...]:
    """`__consumer_offsets`: as many partitions as kop's own offsets topic, each led
    by the coordinator of its groups."""
    count = services.offsets_topic_partitions
    return tuple(_partition(services, i, services.offsets_partition(i)) for i in range(count))


def _partition(services: Services, index: int, key: str) -> MetadataResponsePartition:
    owner = services.ownership.owner(key)
    if owner is None:  # no instance is alive in this one's view
        return MetadataResponsePartition(
            error_code=ErrorCode.leader_not_available,
            partition_index=i32(index),
            leader_id=BrokerId(-1),
            leader_epoch=i32(-1),
            replica_nodes=(),
            isr_nodes=(),
            offline_replicas=(),
        )
    node = BrokerId(owner.node_id)
    return MetadataResponsePartition(
        error_code=ErrorCode.none,
        partition_index=i32(index),
        leader_id=node,
        leader_epoch=i32(services.logs.leader_epoch(key, owner.instance)),
        replica_nodes=(node,),
        isr_nodes=(node,),
        offline_replicas=(),
    )


def _broker(member: Member, listener: str) -> MetadataResponseBroker:
    host, port = member.address(listener)
    return MetadataResponseBroker(
        node_id=BrokerId(member.node_id), host=host, port=i32(port), rack=None
    )
