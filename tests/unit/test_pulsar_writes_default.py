"""Pulsar producers beside kop on the topics kop creates (D21): by default where one
kop instance serves (a Pulsar application writing to a topic a Kafka producer created
must just work), fenced where several may own a partition (no cluster secret, no
several instances: D18); kop's setting and the topic's own config override it."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Producer

from kop.config import KopConfig
from kop.log.topic_configs import SHARED_WRITES, TopicDefaults
from tests.sim.memory_log import WriterMode
from tests.unit.memory_gateway import CLUSTER_SECRET, gateway_with_hot_topic


@pytest.mark.parametrize(
    ("settings", "shared"),
    [
        ({}, True),  # one instance
        ({"cluster_secret": CLUSTER_SECRET}, False),  # several
        ({"cluster_secret": CLUSTER_SECRET, "pulsar_shared_writes": True}, True),
        ({"pulsar_shared_writes": False}, False),
    ],
)
def test_the_default_follows_the_deployment_unless_set(
    settings: dict[str, object], shared: bool
) -> None:
    config = KopConfig(**settings)  # type: ignore[arg-type]
    assert config.shared_writes_by_default is shared
    defaults = TopicDefaults(shared_writes=config.shared_writes_by_default)
    assert defaults.configs()[SHARED_WRITES] == str(shared).lower()


def _produce(port: int) -> None:
    """Into a topic the produce creates: kop's own, with its topic id."""
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}"})
    producer.produce("made", b"kafka", partition=0)
    assert producer.flush(30) == 0


@pytest.mark.parametrize("several", [False, True])
async def test_kops_writer_leaves_room_for_pulsar_producers_only_alone(several: bool) -> None:
    config = {"cluster_secret": CLUSTER_SECRET} if several else {}
    async with gateway_with_hot_topic(1, **config) as (gateway, backend):
        await asyncio.to_thread(_produce, gateway.kafka_port)
        topic = backend.log.topic("persistent://public/default/made-partition-0")
        modes = {w.mode for w in topic.attached}
    assert modes == ({WriterMode.FENCING} if several else {WriterMode.SHARED})
