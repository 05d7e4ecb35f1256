"""DescribeLogDirs across instances (kop/api/log_dirs.py): each instance lists the
partitions it leads and kafka-log-dirs adds up what every broker says. Found by the
conformance suite on three instances (tools/log-dirs): a topic created through one
instance was missing from another's answer, which listed its namespace from a copy
up to 5 s old."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.types import TopicName

from conformance.clients.raw import RawClient
from kop.storage.naming import Namespace, PulsarTopic
from kop.wiring.app import Gateway
from tests.gateway.test_groups_across_instances import _create, two_instances

NS = Namespace("public", "default")


async def _listed(gateway: Gateway, topic: str) -> set[int]:
    client = RawClient(gateway.kafka_port)
    try:
        answer: Any = await asyncio.to_thread(client.request, 35, 4, topics=None)
    finally:
        client.close()
    return {
        int(p.partition_index)
        for r in answer.results for t in r.topics if t.name == topic for p in t.partitions
    }  # fmt: skip


def _split_name(gateway: Gateway) -> str:
    """A topic name whose four partitions both instances lead some of."""
    ownership = gateway.running.services.ownership
    for i in range(200):
        name = f"dirs-{i}"
        topic = PulsarTopic(NS, name, name)
        if len({ownership.owner(topic.partition(p)).node_id for p in range(4)}) == 2:  # type: ignore[union-attr]
            return name
    raise AssertionError("no name splits")


async def test_a_topic_created_elsewhere_is_listed_by_every_instance_at_once() -> None:
    async with two_instances() as (owner, other, _backend):
        await _listed(other, "hot")  # the other instance has listed the namespace now
        name = _split_name(owner)
        client = RawClient(owner.kafka_port)
        created = await _create(client, CreatableTopic(
            name=TopicName(name), num_partitions=4, replication_factor=-1, assignments=(),
            configs=(),
        ))  # fmt: skip
        client.close()
        assert created.topics[0].error_code == 0
        here, there = await _listed(owner, name), await _listed(other, name)
        assert here and there and not here & there
        assert here | there == {0, 1, 2, 3}
