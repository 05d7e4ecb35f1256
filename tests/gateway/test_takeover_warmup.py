"""An instance that gains partitions opens those another process served, before any
client asks: a Kafka leader is ready when it is elected. Opened only on a client's
first request, a third of 1,000 partitions came back 12-34 s after a kill, at the
pace librdkafka names partitions (one per request, five requests in flight)."""

from __future__ import annotations

import asyncio

from conformance.clients.raw import RawClient
from kop.config.settings import KopConfig
from kop.partitions.warmup import topic_and_index
from kop.storage.naming import Namespace, PulsarTopic
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import CLUSTER_SECRET, free_port, until
from tests.gateway.test_subscription_mirror import _produce
from tests.sim.memory_admin import MemoryBackend

PARTITION = "persistent://public/default/hot-partition-0"


def _config(node: int) -> KopConfig:
    return KopConfig(
        listen_host="127.0.0.1", port=free_port(), admin_port=0, node_id=node,
        heartbeat_interval_s=0.1, member_ttl_s=0.5, cluster_secret=CLUSTER_SECRET,
    )  # fmt: skip


async def test_the_new_owner_opens_what_the_old_one_served_without_being_asked() -> None:
    backend = MemoryBackend()
    await backend.admin.create_partitioned(
        PulsarTopic(Namespace("public", "default"), "hot", "hot"), 1, {}
    )
    a, b = Gateway(_config(0), backend), Gateway(_config(1), backend.instance())
    for gateway in (a, b):
        await gateway.start()
    try:
        assert a.logs is not None and b.logs is not None
        await until(lambda: a.logs.owns(PARTITION) != b.logs.owns(PARTITION), 5)  # type: ignore[union-attr]
        owner, heir = (a, b) if a.logs.owns(PARTITION) else (b, a)
        client = RawClient(owner.kafka_port)
        await _produce(client, 3)
        client.close()
        assert heir.logs is not None and not heir.logs.is_open(PARTITION)

        await owner.stop()  # its partitions go to the heir, which no client has asked
        await until(lambda: heir.logs.is_open(PARTITION), 5)  # type: ignore[union-attr]
        plog = await heir.logs.partition(PARTITION)
        assert plog.high_watermark == 3
    finally:
        for gateway in (a, b):
            await asyncio.shield(gateway.stop())


def test_a_partition_topic_names_its_topic_and_index() -> None:
    assert topic_and_index("persistent://t/n/x-partition-12") == ("persistent://t/n/x", 12)
    assert topic_and_index("persistent://t/n/plain") == ("persistent://t/n/plain", 0)
