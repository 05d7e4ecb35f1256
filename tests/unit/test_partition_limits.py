"""The partition limits, through the admin handlers over the in-memory storage:
CreateTopics, CreatePartitions and Metadata's auto-creation are refused with
POLICY_VIOLATION before anything is created; each topic of a request is judged
with those before it counted, also under validate_only; Kafka's own cap on one
CreateTopics refuses the whole request."""

from __future__ import annotations

import datetime

from kio.schema.create_partitions.v3.request import CreatePartitionsRequest, CreatePartitionsTopic
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from kop.api import metadata, topics_admin
from kop.api.context import Broker, RequestContext, Services
from kop.protocol.errors import ErrorCode
from kop.storage.naming import Namespace, PulsarTopic
from kop.topics.catalog import TopicCatalog, TopicDefaults
from kop.topics.partition_budget import PER_REQUEST_MESSAGE, PartitionBudget
from tests.sim.memory_admin import MemoryAdmin
from tests.sim.memory_log import MemoryLog
from tests.sim.memory_services import memory_services

NS = Namespace("public", "default")
CTX = RequestContext(NS, "test", 7)
TIMEOUT = datetime.timedelta(seconds=30)


class _Logs:
    async def drop(self, topics: list[str]) -> None:
        return None


async def _services(per_topic: int = 4, total: int = 10, default_partitions: int = 1) -> Services:
    admin = MemoryAdmin(MemoryLog())
    budget = PartitionBudget(admin, per_topic, total, NS)
    catalog = TopicCatalog(admin, TopicDefaults(partitions=default_partitions), budget)
    return await memory_services(
        catalog, _Logs(), broker=Broker(0, "localhost", 9092, "c"), coordinating=False
    )


def _admin(services: Services) -> MemoryAdmin:
    admin = services.catalog.budget._admin
    assert isinstance(admin, MemoryAdmin)
    return admin


async def _existing(services: Services, name: str, partitions: int, ns: Namespace = NS) -> None:
    """A topic made behind kop's back (a Pulsar client's, or before kop started)."""
    await _admin(services).create_partitioned(PulsarTopic(ns, name, name), partitions, {})


async def _create(
    services: Services, topics: dict[str, int], validate_only: bool = False
) -> list[tuple[str, ErrorCode, str | None]]:
    request = CreateTopicsRequest(
        topics=tuple(
            CreatableTopic(name=n, num_partitions=p, replication_factor=-1, assignments=(),
                           configs=())
            for n, p in topics.items()
        ),
        timeout=TIMEOUT,
        validate_only=validate_only,
    )  # fmt: skip
    response = (await topics_admin.create_topics(services, CTX, request)).answer
    return [(t.name, t.error_code, t.error_message) for t in response.topics]


async def _grow(
    services: Services, counts: dict[str, int], validate_only: bool = False
) -> list[tuple[str, ErrorCode, str | None]]:
    request = CreatePartitionsRequest(
        topics=tuple(CreatePartitionsTopic(name=n, count=c, assignments=None)
                     for n, c in counts.items()),
        timeout=TIMEOUT,
        validate_only=validate_only,
    )  # fmt: skip
    response = (await topics_admin.create_partitions(services, CTX, request)).answer
    return [(t.name, t.error_code, t.error_message) for t in response.results]


def _codes(results: list[tuple[str, ErrorCode, str | None]]) -> dict[str, ErrorCode]:
    return {name: code for name, code, _ in results}


def _stored(services: Services) -> dict[str, int]:
    return {
        name.rsplit("/", 1)[-1]: info.partitions for name, info in _admin(services).topics.items()
    }


async def test_a_topic_above_the_per_topic_limit_is_refused_and_not_created() -> None:
    services = await _services(per_topic=4, total=100)
    [(_, code, message)] = await _create(services, {"wide": 5})
    assert code is ErrorCode.policy_violation
    assert message is not None and "max_partitions_per_topic" in message and "4" in message
    assert _stored(services) == {}
    assert _codes(await _create(services, {"wide": 4})) == {"wide": ErrorCode.none}


async def test_each_topic_is_judged_with_the_ones_before_it_counted() -> None:
    services = await _services(per_topic=4, total=10)
    await _existing(services, "old", 4)  # 6 left
    results = await _create(services, {"a": 3, "b": 4, "c": 3})
    assert _codes(results) == {
        "a": ErrorCode.none, "b": ErrorCode.policy_violation, "c": ErrorCode.none,
    }  # fmt: skip
    message = results[1][2]
    assert message is not None and "max_partitions_total" in message and "10" in message
    assert _stored(services) == {"old": 4, "a": 3, "c": 3}


async def test_validate_only_gives_the_same_answers_and_creates_nothing() -> None:
    services = await _services(per_topic=4, total=10)
    await _existing(services, "old", 4)
    validated = await _create(services, {"a": 3, "b": 4, "c": 3, "d": 1}, validate_only=True)
    assert _codes(validated) == {
        "a": ErrorCode.none, "b": ErrorCode.policy_violation,
        "c": ErrorCode.none, "d": ErrorCode.policy_violation,
    }  # fmt: skip
    assert _stored(services) == {"old": 4}
    assert _codes(await _create(services, {"a": 3, "b": 4, "c": 3, "d": 1})) == _codes(validated)


async def test_the_default_partition_count_counts_too() -> None:
    services = await _services(per_topic=4, total=5, default_partitions=3)
    assert _codes(await _create(services, {"a": -1, "b": -1})) == {
        "a": ErrorCode.none, "b": ErrorCode.policy_violation,
    }  # fmt: skip


async def test_an_existing_topic_is_reported_as_existing_whatever_it_asks_for() -> None:
    """Set-up scripts create their topics again on every run and rely on this code."""
    services = await _services(per_topic=4, total=4)
    await _existing(services, "t", 4)
    assert _codes(await _create(services, {"t": 50})) == {"t": ErrorCode.topic_already_exists}


async def test_kafkas_cap_on_one_request_refuses_every_topic_of_it() -> None:
    """Kafka's controller: more than 10,000 partitions asked for in one CreateTopics
    fail all of its topics with POLICY_VIOLATION, whatever else is wrong with them."""
    services = await _services(per_topic=10_000, total=100_000)
    results = await _create(services, {"a": 5000, "b": 5000, "c": 1}, validate_only=True)
    assert results == [(n, ErrorCode.policy_violation, PER_REQUEST_MESSAGE) for n in "abc"]
    at_cap = await _create(services, {"a": 5000, "b": 5000}, validate_only=True)
    assert _codes(at_cap) == {"a": ErrorCode.none, "b": ErrorCode.none}


async def test_partitions_added_past_a_limit_are_refused_and_not_added() -> None:
    services = await _services(per_topic=4, total=10)
    await _existing(services, "a", 2)
    await _existing(services, "b", 4)  # 4 left
    [(_, code, message)] = await _grow(services, {"a": 5})
    assert code is ErrorCode.policy_violation
    assert message is not None and "max_partitions_per_topic" in message
    await _existing(services, "c", 3)  # 1 left
    assert _codes(await _grow(services, {"a": 4})) == {"a": ErrorCode.policy_violation}
    assert _codes(await _grow(services, {"a": 3})) == {"a": ErrorCode.none}
    assert _stored(services) == {"a": 3, "b": 4, "c": 3}


async def test_growing_several_topics_judges_each_with_the_ones_before_it() -> None:
    services = await _services(per_topic=4, total=10)
    await _existing(services, "a", 2)
    await _existing(services, "b", 2)
    await _existing(services, "c", 2)  # 4 left
    for validate_only in (True, False):
        results = await _grow(services, {"a": 4, "b": 4, "c": 4}, validate_only)
        assert _codes(results) == {
            "a": ErrorCode.none, "b": ErrorCode.none, "c": ErrorCode.policy_violation,
        }  # fmt: skip
    assert _stored(services) == {"a": 4, "b": 4, "c": 2}


async def test_auto_creation_obeys_the_total() -> None:
    services = await _services(per_topic=4, total=3)
    await _existing(services, "old", 3)
    request = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name="fresh"),),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    response = (await metadata.handle(services, CTX, request)).answer
    [entry] = response.topics
    assert entry.error_code is ErrorCode.policy_violation
    assert "fresh" not in _stored(services)


async def test_topics_in_other_namespaces_kop_serves_count_towards_the_total() -> None:
    """A full Pulsar name reaches another namespace: what is created there counts."""
    services = await _services(per_topic=4, total=6)
    assert _codes(await _create(services, {"persistent://public/other/x": 4})) == {
        "persistent://public/other/x": ErrorCode.none
    }
    assert _codes(await _create(services, {"here": 3})) == {"here": ErrorCode.policy_violation}
    assert _codes(await _create(services, {"here": 2})) == {"here": ErrorCode.none}


async def test_deleting_a_topic_gives_its_partitions_back() -> None:
    services = await _services(per_topic=4, total=4)
    assert _codes(await _create(services, {"a": 4})) == {"a": ErrorCode.none}
    assert _codes(await _create(services, {"b": 1})) == {"b": ErrorCode.policy_violation}
    request = DeleteTopicsRequest(
        topics=(DeleteTopicState(name="a", topic_id=None),),
        timeout=TIMEOUT,
    )
    response = (await topics_admin.delete_topics(services, CTX, request)).answer
    assert response.responses[0].error_code is ErrorCode.none
    assert _codes(await _create(services, {"b": 4})) == {"b": ErrorCode.none}


async def test_a_request_of_many_topics_counts_each_namespace_once() -> None:
    """The total is cheap: one count per namespace, not one per topic."""
    services = await _services(per_topic=4, total=1000)
    results = await _create(services, {f"t{i}": 2 for i in range(100)})
    assert set(_codes(results).values()) == {ErrorCode.none}
    assert _admin(services).counted == 1
