"""CreateTopics, DeleteTopics, CreatePartitions over Pulsar partitioned topics."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

from kio.schema.create_partitions.v3.request import CreatePartitionsRequest, CreatePartitionsTopic
from kio.schema.create_partitions.v3.response import (
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.create_topics.v7.response import (
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsResponse,
)
from kio.schema.delete_topics.v1 import request as delete_topics_v1
from kio.schema.delete_topics.v2 import request as delete_topics_v2
from kio.schema.delete_topics.v3 import request as delete_topics_v3
from kio.schema.delete_topics.v4 import request as delete_topics_v4
from kio.schema.delete_topics.v5 import request as delete_topics_v5
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.delete_topics.v6.response import DeletableTopicResult, DeleteTopicsResponse
from kio.static.primitive import i16, i32

from kop.api.configs import topic_entries
from kop.api.context import RequestContext, Services, error_of, permitted, topic_for
from kop.api.internal_topics import refuse_create
from kop.api.metadata import ZERO_UUID
from kop.api.routes import Now, Route
from kop.groups.scope import GroupScope
from kop.groups.topic_deletion import forget_deleted_topics
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.security.authorizer import TopicOp
from kop.storage.naming import InvalidTopicName, PulsarTopic


async def create_topics(
    services: Services, ctx: RequestContext, request: CreateTopicsRequest
) -> Now[CreateTopicsResponse]:
    """Topic by topic, in order, as Kafka answers: each is judged against the limits
    with those before it (created, or validated under validate_only) counted. What
    v5 added to a topic's result (its counts and configs) and v7's topic id are
    dropped for older versions, as Kafka's schema allows."""
    results = []
    seen: set[str] = set()
    reserved = 0
    refused: KafkaError | None = None
    try:
        services.catalog.budget.check_request(_requested(services, request.topics))
    except KafkaError as exc:
        refused = exc  # Kafka's controller refuses the whole request
    for t in request.topics:
        result = CreatableTopicResult(
            name=t.name,
            topic_id=ZERO_UUID,
            error_code=ErrorCode.none,
            error_message=None,
            num_partitions=i32(-1),
            replication_factor=i16(-1),
            configs=(),
        )
        if refused is not None:
            code, message = error_of(refused)
            results.append(dataclasses.replace(result, error_code=code, error_message=message))
            continue
        try:
            if t.name in seen:
                raise KafkaError(ErrorCode.invalid_request, f"topic {t.name!r} is listed twice")
            seen.add(t.name)
            partitions = _partitions_asked(services, t)
            refuse_create(t.name)
            configs = {c.name: c.value for c in t.configs}
            topic = await permitted(ctx, t.name, TopicOp.ALTER)
            view = await services.catalog.create(
                topic, partitions, configs, request.validate_only, reserved
            )
            if request.validate_only:
                reserved += view.partitions
            defaults = services.catalog.defaults.configs()
            result = dataclasses.replace(
                result,
                topic_id=ZERO_UUID if request.validate_only else view.topic_id,
                num_partitions=i32(view.partitions),
                replication_factor=i16(1),
                configs=tuple(
                    CreatableTopicConfigs(
                        name=e.name,
                        value=e.value,
                        read_only=e.read_only,
                        config_source=e.config_source,
                        is_sensitive=e.is_sensitive,
                    )
                    for e in topic_entries(view.configs, view.explicit, defaults)
                ),
            )
        except Exception as exc:
            code, message = error_of(exc)
            result = dataclasses.replace(result, error_code=code, error_message=message)
        results.append(result)
    return Now(CreateTopicsResponse(throttle_time=NO_THROTTLE, topics=tuple(results)))


def _partitions_asked(services: Services, t: CreatableTopic) -> int:
    """How many partitions a CreateTopics entry asks for (-1: the default), judged as
    Kafka's controller judges it: a manual assignment must name kop's node, once per
    partition, for partitions 0..n-1, and leaves the counts at -1."""
    if not t.assignments:
        if t.num_partitions == 0 or t.num_partitions < -1:
            raise KafkaError(
                ErrorCode.invalid_partitions,
                "Number of partitions was set to an invalid non-positive value.",
            )
        if t.replication_factor == 0 or t.replication_factor < -1:
            raise KafkaError(
                ErrorCode.invalid_replication_factor,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        return int(t.num_partitions)
    manual = "A manual partition assignment was specified, but"
    if t.num_partitions != -1:
        raise KafkaError(ErrorCode.invalid_request, f"{manual} numPartitions was not set to -1.")
    if t.replication_factor != -1:
        raise KafkaError(
            ErrorCode.invalid_request, f"{manual} replication factor was not set to -1."
        )
    seen: set[int] = set()
    for a in t.assignments:
        index = int(a.partition_index)
        if index in seen:
            raise KafkaError(
                ErrorCode.invalid_replica_assignment,
                f"Found multiple manual partition assignments for partition {index}",
            )
        seen.add(index)
        _check_replicas(services, [int(b) for b in a.broker_ids])
    if seen != set(range(len(seen))):
        raise KafkaError(
            ErrorCode.invalid_replica_assignment,
            "partitions should be a consecutive 0-based integer sequence",
        )
    return len(seen)


def _check_replicas(services: Services, ids: list[int]) -> None:
    what = "The manual partition assignment includes"
    if not ids:
        raise KafkaError(ErrorCode.invalid_replica_assignment, f"{what} an empty replica list.")
    for b in ids:
        if ids.count(b) > 1:
            raise KafkaError(
                ErrorCode.invalid_replica_assignment, f"{what} the broker {b} more than once."
            )
        if b not in _live_nodes(services):
            raise KafkaError(
                ErrorCode.invalid_replica_assignment,
                f"{what} broker {b}, but no such broker is registered.",
            )


def _live_nodes(services: Services) -> set[int]:
    """The brokers an assignment may name: the live instances. The partition is placed
    by ownership (D15) whichever it names: Pulsar holds and replicates the data."""
    return {m.node_id for m in services.ownership.brokers()}


def _requested(services: Services, topics: Sequence[CreatableTopic]) -> int:
    """Partitions a CreateTopics asks for in all, counted as Kafka's controller does."""
    total = 0
    for t in topics:
        if t.assignments:
            total += len(t.assignments)
        elif t.num_partitions == -1:
            total += services.catalog.defaults.partitions
        elif t.num_partitions > 0:
            total += t.num_partitions
    return total


async def delete_topics(
    services: Services, ctx: RequestContext, request: DeleteTopicsRequest
) -> Now[DeleteTopicsResponse]:
    """By name; v6's topics named by id alone are refused. The topic id and error
    message of a result are dropped for the versions without them, as Kafka's schema
    allows."""
    responses = []
    for name in (t.name for t in request.topics):
        code, message, topic_id = ErrorCode.none, None, ZERO_UUID
        try:
            if name is None:
                raise KafkaError(
                    ErrorCode.unknown_topic_id, "deleting by topic id is not supported"
                )
            topic = await permitted(ctx, name, TopicOp.ALTER)
            view = await services.catalog.describe(topic)
            if view is not None:
                # Let go first: Pulsar would cut kop's readers and writers off and
                # they would retry against a topic that no longer exists.
                await services.logs.drop([view.partition_topic(i) for i in range(view.partitions)])
            topic_id = (await services.catalog.delete(topic)).topic_id
            gone = functools.partial(_names, services.groups.scope, topic)
            await forget_deleted_topics(services.groups, gone)
        except Exception as exc:
            code, message = error_of(exc)
        responses.append(
            DeletableTopicResult(
                name=name, topic_id=topic_id, error_code=code, error_message=message
            )
        )
    return Now(DeleteTopicsResponse(throttle_time=NO_THROTTLE, responses=tuple(responses)))


# DeleteTopics v1-5: the topics as a flat `topic_names`.
_NamesOnly = (
    delete_topics_v1.DeleteTopicsRequest
    | delete_topics_v2.DeleteTopicsRequest
    | delete_topics_v3.DeleteTopicsRequest
    | delete_topics_v4.DeleteTopicsRequest
    | delete_topics_v5.DeleteTopicsRequest
)


def _delete_topics_request(
    body: _NamesOnly | DeleteTopicsRequest, version: int
) -> DeleteTopicsRequest:
    """v6 made each topic an entry of `topics` (a name, or a topic id instead) where
    v1-5 list names: these become entries of a name alone, as Kafka's
    DeleteTopicsRequest reads them."""
    if isinstance(body, DeleteTopicsRequest):
        return body
    return DeleteTopicsRequest(
        topics=tuple(DeleteTopicState(name=n, topic_id=None) for n in body.topic_names),
        timeout=body.timeout,
    )


def _names(scope: GroupScope, topic: PulsarTopic, group: str, name: str) -> bool:
    """Whether a topic name a group committed under is the deleted topic (its short
    name in the group's namespace, or its full Pulsar name)."""
    try:
        return scope.topic(group, name).full == topic.full
    except InvalidTopicName:
        return False


async def create_partitions(
    services: Services, ctx: RequestContext, request: CreatePartitionsRequest
) -> Now[CreatePartitionsResponse]:
    """Judged topic by topic against the limits, as CreateTopics."""
    results = []
    reserved = 0
    for t in request.topics:
        code, message = ErrorCode.none, None
        try:
            topic = await permitted(ctx, t.name, TopicOp.ALTER)
            if t.assignments:
                await _check_assignments(services, ctx, t)
            added = await services.catalog.add_partitions(
                topic, t.count, request.validate_only, reserved
            )
            if request.validate_only:
                reserved += added
        except Exception as exc:
            code, message = error_of(exc)
        results.append(
            CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=message)
        )
    return Now(CreatePartitionsResponse(throttle_time=NO_THROTTLE, results=tuple(results)))


ROUTES = (
    Route(ApiKey.CREATE_TOPICS, CreateTopicsRequest, CreateTopicsResponse, create_topics),
    Route(
        ApiKey.DELETE_TOPICS,
        DeleteTopicsRequest,
        DeleteTopicsResponse,
        delete_topics,
        up=_delete_topics_request,
    ),
    Route(
        ApiKey.CREATE_PARTITIONS,
        CreatePartitionsRequest,
        CreatePartitionsResponse,
        create_partitions,
    ),
)


async def _check_assignments(
    services: Services, ctx: RequestContext, t: CreatePartitionsTopic
) -> None:
    """An explicit assignment names one live instance per new partition (topics have one
    replica), as Kafka checks against its brokers."""
    view = await services.catalog.describe(topic_for(ctx, t.name))
    if view is None:
        raise KafkaError(ErrorCode.unknown_topic_or_partition, f"no topic {t.name!r}")
    assignments = t.assignments or ()
    if len(assignments) != t.count - view.partitions:
        raise KafkaError(
            ErrorCode.invalid_replica_assignment,
            f"{len(assignments)} assignments for {t.count - view.partitions} new partitions",
        )
    live = _live_nodes(services)
    for a in assignments:
        ids = list(a.broker_ids)
        if len(ids) != 1 or ids[0] not in live:
            raise KafkaError(
                ErrorCode.invalid_replica_assignment,
                f"replicas {ids}: topics have one replica, on one of the brokers {sorted(live)}",
            )
