"""Per-topic traffic as metrics (Kafka's BytesInPerSec, BytesOutPerSec and
MessagesInPerSec by topic): `kop_topic_{bytes,records}_{in,out}_total` with the
topic's tenant, namespace and name, counted when a write is stored and when a fetch
serves batches, summed over the topic's partitions."""

from __future__ import annotations

import asyncio

from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from prometheus_client import generate_latest

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch, count_records
from tests.gateway.memory_gateway import gateway_with_hot_topic
from tests.gateway.test_fetch_room import _fetch

LABELS = '{namespace="default",tenant="public",topic="hot"}'


def _produce(client: RawClient, partition: int, batch: bytes) -> None:
    fields = client.produce_fields("hot", batch)
    data = PartitionProduceData(index=partition, records=batch)
    fields["topic_data"] = (TopicProduceData(name="hot", partition_data=(data,)),)
    resp = client.request(0, 9, **fields)
    assert resp.responses[0].partition_responses[0].error_code == 0


def test_records_are_counted_by_batch_headers_and_a_cut_batch_counts_nothing() -> None:
    three = build_batch([Record(i, 0, None, b"v") for i in range(3)])
    two = build_batch([Record(i, 0, None, b"w") for i in range(2)])
    assert count_records(three + two) == 5
    assert count_records(three + two[:-1]) == 3
    assert count_records(b"") == 0


async def test_a_topics_traffic_in_and_out_is_counted_over_its_partitions() -> None:
    three = build_batch([Record(i, 0, None, b"value") for i in range(3)])
    two = build_batch([Record(i, 0, None, b"other") for i in range(2)])
    async with gateway_with_hot_topic(2) as (gateway, _backend):
        client = RawClient(gateway.kafka_port)
        try:
            await asyncio.to_thread(_produce, client, 0, three)
            await asyncio.to_thread(_produce, client, 1, two)
            r = await asyncio.to_thread(client.request, 1, 12, **_fetch(0, 1 << 20, 0))
            served = r.responses[0].partitions[0].records
        finally:
            client.close()
        assert count_records(served) == 3
        text = generate_latest(gateway.metrics.registry).decode()
        assert f"kop_topic_records_in_total{LABELS} 5.0" in text
        assert f"kop_topic_bytes_in_total{LABELS} {float(len(three) + len(two))}" in text
        assert f"kop_topic_records_out_total{LABELS} 3.0" in text
        assert f"kop_topic_bytes_out_total{LABELS} {float(len(served))}" in text
