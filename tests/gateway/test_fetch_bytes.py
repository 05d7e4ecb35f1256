"""A fetch's size: whatever `max_bytes` a client asks for, kop answers with at most
`fetch_max_bytes_cap` plus one record batch (KIP-74), as Kafka's fetch.max.bytes
caps it; under the cap the client's own limit holds. End to end through a socket,
over the in-memory storage."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from tests.gateway.memory_gateway import gateway_with_hot_topic
from tests.sim.harness import iter_records_all

CAP = 256 * 1024
VALUE = 32 * 1024
BATCHES = 20  # per partition: 640 KiB each, 1.25 MiB stored in all
HUGE = 2**31 - 1


def _fetch(max_bytes: int, partition_max_bytes: int) -> dict[str, Any]:
    parts = tuple(
        FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=partition_max_bytes)
        for p in (0, 1)
    )
    return {
        "max_wait": datetime.timedelta(milliseconds=0),
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": (FetchTopic(topic="hot", partitions=parts),),
        "forgotten_topics_data": (),
        "rack_id": "",
    }


def _fill(client: RawClient) -> int:
    """BATCHES batches of one VALUE-byte record into each partition; one batch's size."""
    batch = build_batch([Record(0, 1_700_000_000_000, None, b"x" * VALUE)])
    for partition in (0, 1):
        for _ in range(BATCHES):
            data = PartitionProduceData(index=partition, records=batch)
            fields = client.produce_fields("hot", batch)
            fields["topic_data"] = (TopicProduceData(name="hot", partition_data=(data,)),)
            resp = client.request(0, 9, **fields)
            assert resp.responses[0].partition_responses[0].error_code == 0
    return len(batch)


def _sizes(client: RawClient, max_bytes: int, partition_max_bytes: int) -> list[int]:
    resp = client.request(1, 12, **_fetch(max_bytes, partition_max_bytes))
    assert resp.error_code == 0
    parts = resp.responses[0].partitions
    assert all(p.error_code == 0 for p in parts)
    return [len(p.records or b"") for p in parts]


async def test_a_fetch_asking_for_2_gib_is_answered_within_the_cap() -> None:
    async with gateway_with_hot_topic(2, fetch_max_bytes_cap=CAP) as (gateway, _):
        client = RawClient(gateway.kafka_port)
        try:
            batch = await asyncio.to_thread(_fill, client)
            sizes = await asyncio.to_thread(_sizes, client, HUGE, HUGE)
            assert 0 < sum(sizes) <= CAP + batch, sizes
            under = await asyncio.to_thread(_sizes, client, 100 * 1024, HUGE)
            assert 0 < sum(under) <= 100 * 1024 + batch, under
        finally:
            client.close()


async def test_a_fetch_asking_to_wait_24_days_is_answered_by_the_wait_cap() -> None:
    """max_wait 2^31-1 ms and a min_bytes nothing will reach: kop answers (empty) once
    fetch_max_wait_cap_ms has passed, long before the client's socket gives up."""
    async with gateway_with_hot_topic(1, fetch_max_wait_cap_ms=200) as (gateway, _):
        client = RawClient(gateway.kafka_port, timeout=20)
        try:
            fields = client.fetch_fields("hot", 0, wait_ms=HUGE, min_bytes=HUGE)
            resp = await asyncio.to_thread(client.request, 1, 12, **fields)
            part = resp.responses[0].partitions[0]
            assert (part.error_code, part.records or b"") == (0, b"")
        finally:
            client.close()


def _produce(client: RawClient, partition: int, value: bytes) -> None:
    batch = build_batch([Record(0, 1_700_000_000_000, None, value)])
    data = PartitionProduceData(index=partition, records=batch)
    fields = client.produce_fields("hot", batch)
    fields["topic_data"] = (TopicProduceData(name="hot", partition_data=(data,)),)
    resp = client.request(0, 9, **fields)
    assert resp.responses[0].partition_responses[0].error_code == 0


def _values(client: RawClient, max_bytes: int, partition_max_bytes: int) -> list[list[bytes]]:
    resp = client.request(1, 12, **_fetch(max_bytes, partition_max_bytes))
    parts = resp.responses[0].partitions
    assert all(p.error_code == 0 for p in parts)
    return [[r.value for r in iter_records_all(p.records or b"")] for p in parts]


async def test_a_batch_is_served_only_if_it_fits_except_the_first_of_the_response() -> None:
    """KIP-74 as Kafka applies it: 10 bytes then 50 KB in partition 0, 50 KB in
    partition 1. A 4,000-byte fetch gets the 10-byte batch alone; once partition 0
    is read, partition 1's batch is first and comes whole; never a second one that
    does not fit, in a partition or in the response."""
    async with gateway_with_hot_topic(2) as (gateway, _):
        client = RawClient(gateway.kafka_port)
        try:
            small, large = b"s" * 10, b"L" * 50_000
            await asyncio.to_thread(_produce, client, 0, small)
            await asyncio.to_thread(_produce, client, 0, large)
            await asyncio.to_thread(_produce, client, 1, large)
            got = await asyncio.to_thread(_values, client, 4000, 4000)
            assert got == [[small], []]
            got = await asyncio.to_thread(_values, client, 1 << 20, 4000)
            assert got == [[small], []]
            got = await asyncio.to_thread(_values, client, 4000, 1 << 20)
            assert got == [[small], []]
            got = await asyncio.to_thread(_values, client, 60_000, 1 << 20)
            assert got == [[small, large], []]
        finally:
            client.close()
