"""Pulsar producers beside kop on the topics kop creates, by default (D21): kop takes
a partition with a fence and then writes it shared, holding the fence's epoch, so a
Pulsar application writes a topic a Kafka producer created, alone or beside several
kop instances; `pulsar_shared_writes=false` (or the topic's own
kop.pulsar.shared.writes) keeps them out while kop writes."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Producer

from kop.config.settings import KopConfig
from kop.topics.configs import SHARED_WRITES, TopicDefaults
from tests.gateway.memory_gateway import CLUSTER_SECRET, gateway_with_hot_topic
from tests.sim.memory_log import WriterMode


def test_the_default_lets_pulsar_producers_in_unless_set() -> None:
    for settings, shared in (
        ({}, True),
        ({"cluster_secret": CLUSTER_SECRET}, True),  # several instances: fenced all the same
        ({"pulsar_shared_writes": False}, False),
    ):
        config = KopConfig(**settings)  # type: ignore[arg-type]
        assert config.pulsar_shared_writes is shared
        defaults = TopicDefaults(shared_writes=config.pulsar_shared_writes)
        assert defaults.configs()[SHARED_WRITES] == str(shared).lower()


def _produce(port: int) -> None:
    """Into a topic the produce creates: kop's own, with its topic id."""
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}"})
    producer.produce("made", b"kafka", partition=0)
    assert producer.flush(30) == 0


@pytest.mark.parametrize(
    ("config", "mode"),
    [
        ({}, WriterMode.FENCING_SHARED),
        ({"cluster_secret": CLUSTER_SECRET}, WriterMode.FENCING_SHARED),
        ({"pulsar_shared_writes": False}, WriterMode.FENCING),
    ],
)
async def test_kop_fences_then_shares_the_partitions_it_writes(
    config: dict[str, object], mode: WriterMode
) -> None:
    async with gateway_with_hot_topic(1, **config) as (gateway, backend):
        await asyncio.to_thread(_produce, gateway.kafka_port)
        topic = backend.log.topic("persistent://public/default/made-partition-0")
        modes = {w.mode for w in topic.attached}
        if mode is WriterMode.FENCING_SHARED:  # a Pulsar application's writer gets in
            app = await backend.log.instance().writer(topic.name, mode=WriterMode.SHARED)
            assert app.epoch == -1
    assert modes == {mode}
