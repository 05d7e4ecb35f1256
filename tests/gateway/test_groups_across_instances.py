"""Two kop instances over one in-memory Pulsar, with a group coordinated by one of
them and the partition it commits on owned by the other: the partition's owner
mirrors the group's subscription (the coordinator cannot, it has no offset index
for a partition it does not serve), and a DeleteTopics sent to the owner removes
the group's offsets at its coordinator, as Kafka's coordinators all learn of a
deletion."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from collections.abc import AsyncIterator
from typing import Any

from kio.schema.create_topics.v7.request import CreatableReplicaAssignment, CreatableTopic
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.types import BrokerId, TopicName

from conformance.clients.raw import RawClient
from kop.config.settings import KopConfig
from kop.storage.naming import Namespace, PulsarTopic
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import CLUSTER_SECRET, free_port, until
from tests.gateway.test_subscription_mirror import _commit_ok, _produce
from tests.sim.memory_admin import MemoryBackend

PARTITION = "persistent://public/default/hot-partition-0"


@contextlib.asynccontextmanager
async def two_instances(**extra: Any) -> AsyncIterator[tuple[Gateway, Gateway, MemoryBackend]]:
    """(owner of PARTITION, the other one, the backend), each seeing both; `extra`
    settings for both."""
    backend = MemoryBackend()
    await backend.admin.create_partitioned(
        PulsarTopic(Namespace("public", "default"), "hot", "hot"), 1, {}
    )
    gateways = []
    async with contextlib.AsyncExitStack() as stack:
        for node in (0, 1):
            config = KopConfig(
                listen_host="127.0.0.1", port=free_port(), admin_port=0, node_id=node,
                heartbeat_interval_s=0.1, member_ttl_s=0.5, mirror_interval_s=0.05,
                group_initial_rebalance_delay_ms=0, cluster_secret=CLUSTER_SECRET, **extra,
            )  # fmt: skip
            gateway = Gateway(config, backend if node == 0 else backend.instance())
            await gateway.start()
            stack.push_async_callback(gateway.stop)
            gateways.append(gateway)
        a, b = gateways
        assert a.logs is not None and b.logs is not None
        await until(lambda: a.logs.owns(PARTITION) != b.logs.owns(PARTITION), 5)  # type: ignore[union-attr]
        await until(lambda: all(g.groups is not None and g.groups.loaded for g in gateways), 5)
        yield (a, b, backend) if a.logs.owns(PARTITION) else (b, a, backend)


def group_coordinated_by(gateway: Gateway) -> str:
    return next(g for g in (f"grp-{i}" for i in range(200)) if gateway.groups.coordinates(g))


async def test_the_partitions_owner_mirrors_a_group_coordinated_elsewhere() -> None:
    async with two_instances() as (owner, other, backend):
        group = group_coordinated_by(other)
        to_owner, to_coordinator = RawClient(owner.kafka_port), RawClient(other.kafka_port)
        await _produce(to_owner, 10)
        stored = backend.log.topic(PARTITION).entries()
        mirrored = (PARTITION, f"kafka-group-{group}")
        for offset in (4, 7):
            await _commit_ok(to_coordinator, offset, group)
            await until(
                lambda o=offset: (
                    backend.admin.cursors.get(mirrored, "none")  # type: ignore[misc]
                    == stored[o].position
                ),
                5,
            )
        to_owner.close()
        to_coordinator.close()


async def test_deleting_a_topic_at_one_instance_removes_its_offsets_at_the_coordinator() -> None:
    async with two_instances() as (owner, other, _backend):
        assert other.groups is not None
        group = group_coordinated_by(other)
        to_owner, to_coordinator = RawClient(owner.kafka_port), RawClient(other.kafka_port)
        await _produce(to_owner, 3)
        await _commit_ok(to_coordinator, 2, group)
        assert other.groups.offsets.of(group)

        deleted = await asyncio.to_thread(
            to_owner.request, 20, 4, topic_names=(TopicName("hot"),),
            timeout=datetime.timedelta(seconds=10),
        )  # fmt: skip
        assert deleted.responses[0].error_code == 0
        await until(lambda: not other.groups.offsets.of(group), 5)  # type: ignore[union-attr]
        to_owner.close()
        to_coordinator.close()


async def _create(client: RawClient, topic: CreatableTopic) -> Any:
    """CreateTopics v7 of `topic`: the response."""
    return await asyncio.to_thread(
        client.request, 19, 7, topics=(topic,), timeout=datetime.timedelta(seconds=10),
        validate_only=False,
    )  # fmt: skip


async def test_an_assignment_may_name_any_live_instance() -> None:
    """Found by the conformance suite against three instances: an explicit replica
    assignment naming another live instance was refused ('no such broker is
    registered'). The partitions are placed by ownership whichever instance it names."""
    async with two_instances() as (owner, _other, _backend):
        topic = CreatableTopic(
            name=TopicName("placed"), num_partitions=-1, replication_factor=-1,
            assignments=tuple(
                CreatableReplicaAssignment(partition_index=i, broker_ids=(BrokerId(node),))
                for i, node in enumerate((0, 1))
            ),
            configs=(),
        )  # fmt: skip
        client = RawClient(owner.kafka_port)
        created = await _create(client, topic)
        nowhere = CreatableTopic(
            name=TopicName("nowhere"), num_partitions=-1, replication_factor=-1,
            assignments=(CreatableReplicaAssignment(partition_index=0, broker_ids=(BrokerId(7),)),),
            configs=(),
        )  # fmt: skip
        refused = await _create(client, nowhere)
        client.close()
    assert (created.topics[0].error_code, created.topics[0].num_partitions) == (0, 2)
    assert refused.topics[0].error_code == 39  # INVALID_REPLICA_ASSIGNMENT: no broker 7


async def test_a_topic_deleted_through_another_instance_is_let_go_by_the_partitions_owner() -> None:
    """Found by the conformance suite against three instances: the owner kept following
    a partition deleted through another instance, its reader subscribed again, Pulsar
    made the partition anew, and the topic created again went on from the old offsets."""
    async with two_instances() as (owner, other, _backend):
        assert owner.logs is not None
        to_owner, to_other = RawClient(owner.kafka_port), RawClient(other.kafka_port)
        await _produce(to_owner, 3)
        assert owner.logs.is_open(PARTITION)
        deleted = await asyncio.to_thread(
            to_other.request, 20, 4, topic_names=(TopicName("hot"),),
            timeout=datetime.timedelta(seconds=10),
        )  # fmt: skip
        assert deleted.responses[0].error_code == 0
        await until(lambda: not owner.logs.is_open(PARTITION), 5)  # type: ignore[union-attr]
        to_owner.close()
        to_other.close()


async def test_a_topic_created_through_another_instance_is_soon_known_here() -> None:
    """An instance that had looked the topic up before it existed remembered "no such
    topic" for the whole lookup TTL (5 s): a client creating a topic through one
    instance and using it through another was told it is unknown meanwhile."""
    async with two_instances() as (one, other, _backend):
        here, there = RawClient(one.kafka_port), RawClient(other.kafka_port)

        def known_here() -> bool:
            topics = [MetadataRequestTopic(topic_id=None, name=TopicName("fresh"))]
            answer = here.request(3, 12, topics=topics, allow_auto_topic_creation=False,
                                  include_topic_authorized_operations=False)  # fmt: skip
            return bool(answer.topics[0].error_code == 0)

        assert not await asyncio.to_thread(known_here)  # looked up: not there yet
        fresh = CreatableTopic(
            name=TopicName("fresh"), num_partitions=1, replication_factor=1, assignments=(),
            configs=(),
        )  # fmt: skip
        assert (await _create(there, fresh)).topics[0].error_code == 0
        deadline = asyncio.get_running_loop().time() + 2  # well under the 5 s TTL
        while not await asyncio.to_thread(known_here):
            assert asyncio.get_running_loop().time() < deadline, "still unknown here"
            await asyncio.sleep(0.05)
        here.close()
        there.close()
