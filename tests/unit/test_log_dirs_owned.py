"""DescribeLogDirs lists the partitions this instance owns, as a Kafka broker lists
the replicas it hosts: kafka-log-dirs asks every broker and adds the answers up, so
three kop instances that each listed every partition showed each one two or three
times (found by `python -m conformance --instances 3`, tools/log-dirs)."""

from __future__ import annotations

import asyncio

from kio.schema.describe_log_dirs.v4.request import DescribableLogDirTopic, DescribeLogDirsRequest

from kop.api import log_dirs
from kop.api.context import Broker, RequestContext, Services
from kop.cluster.member import Member
from kop.cluster.ownership import Ownership
from kop.storage.naming import Namespace, PulsarTopic
from kop.topics.catalog import TopicCatalog, TopicDefaults
from kop.topics.partition_budget import PartitionBudget
from tests.sim.memory_admin import MemoryAdmin
from tests.sim.memory_log import MemoryLog
from tests.sim.memory_services import memory_services

NS = Namespace("public", "default")
CTX = RequestContext(NS, "test", 4)
PARTITIONS = 12


class _Three:
    """A membership view of three live instances that never changes."""

    version = 0

    def __init__(self) -> None:
        self.members = [Member(n, "localhost", 9092 + 100 * n, f"i{n}") for n in range(3)]

    def live(self) -> list[Member]:
        return list(self.members)

    async def changed(self, version: int) -> int:
        await asyncio.get_running_loop().create_future()
        return version


class _Logs:
    async def drop(self, topics: list[str]) -> None:
        return None


async def _services(view: _Three | None, node: int) -> Services:
    admin = MemoryAdmin(MemoryLog())
    catalog = TopicCatalog(admin, TopicDefaults(), PartitionBudget(admin, 100, 1000, NS))
    broker = Broker(node, "localhost", 9092 + 100 * node, "c")
    ownership = None if view is None else Ownership(view, view.members[node])
    return await memory_services(
        catalog,
        _Logs(),
        broker=broker,
        ownership=ownership,
        auto_create_topics=False,
        coordinating=False,
    )


async def _listed(
    services: Services, topics: tuple[DescribableLogDirTopic, ...] | None = None
) -> list[int]:
    admin = services.catalog.budget._admin
    assert isinstance(admin, MemoryAdmin)
    if not await admin.topic_info(PulsarTopic(NS, "t", "t")):
        await admin.create_partitioned(PulsarTopic(NS, "t", "t"), PARTITIONS, {})
    answer = (await log_dirs.handle(services, CTX, DescribeLogDirsRequest(topics=topics))).answer
    listed = answer.results[0].topics
    return sorted(p.partition_index for t in listed for p in t.partitions)


async def test_each_partition_is_listed_by_its_owner_alone() -> None:
    view = _Three()
    per_instance = [await _listed(await _services(view, node)) for node in range(3)]
    everything = sorted(p for listed in per_instance for p in listed)
    assert everything == list(range(PARTITIONS))  # each once, by exactly one instance
    assert sum(1 for listed in per_instance if listed) > 1  # spread, not all on one
    asked = (DescribableLogDirTopic(topic="t", partitions=tuple(range(PARTITIONS))),)
    assert await _listed(await _services(view, 1), asked) == per_instance[1]


async def test_one_instance_alone_lists_every_partition() -> None:
    assert await _listed(await _services(None, 0)) == list(range(PARTITIONS))
