"""A fetch that finds the answer budget spent waits for room, not for new data.

kop bounds the answers made and not yet sent in total (`max_queued_response_bytes`).
A fetch that finds no room reads nothing for now; once room is given back it must
read the records that are there. Before, it waited for new records only, so on a
partition nobody wrote to it slept out its whole `max_wait` and answered empty
although records were there: the first Fetch of a consumer starting while others
fetch (Streams, Connect) came back empty after `fetch.max.wait.ms`."""

from __future__ import annotations

import asyncio
import datetime
import socket
from typing import Any

from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from tests.gateway.memory_gateway import gateway_with_hot_topic, until

BUDGET = 8 << 20  # kop's answer budget in this test
VALUE = 64 * 1024
BIG_BATCHES = 160  # 10 MiB in partition 0: one answer of it fills the budget


def _fetch(partition: int, max_bytes: int, wait_ms: int) -> dict[str, Any]:
    part = FetchPartition(partition=partition, fetch_offset=0, partition_max_bytes=max_bytes)
    return {
        "max_wait": datetime.timedelta(milliseconds=wait_ms),
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": (FetchTopic(topic="hot", partitions=(part,)),),
        "forgotten_topics_data": (),
        "rack_id": "",
    }


def _produce(client: RawClient, partition: int, value: bytes, times: int) -> None:
    batch = build_batch([Record(0, 1_700_000_000_000, None, value)])
    for _ in range(times):
        fields = client.produce_fields("hot", batch)
        data = PartitionProduceData(index=partition, records=batch)
        fields["topic_data"] = (TopicProduceData(name="hot", partition_data=(data,)),)
        resp = client.request(0, 9, **fields)
        assert resp.responses[0].partition_responses[0].error_code == 0


def _slow_reader(port: int) -> RawClient:
    """A client whose socket takes little before it is read: its answer stays in kop."""
    client = RawClient(port)
    client.sock.close()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port))
    client.sock = sock
    return client


async def test_a_fetch_without_room_reads_the_records_once_room_is_given_back() -> None:
    async with gateway_with_hot_topic(2, max_queued_response_bytes=BUDGET) as (gateway, _):
        listener = gateway.listener
        assert listener is not None
        writer = RawClient(gateway.kafka_port)
        hog = _slow_reader(gateway.kafka_port)
        consumer = RawClient(gateway.kafka_port)
        try:
            await asyncio.to_thread(_produce, writer, 0, b"x" * VALUE, BIG_BATCHES)
            await asyncio.to_thread(_produce, writer, 1, b"the record", 1)
            # The hog's answer (the whole budget) is made, and stays while it reads nothing.
            correlation, frame = hog.encode(1, 12, **_fetch(0, BUDGET, 0))
            hog.send_frame(frame)
            await until(lambda: listener.answers.used >= BUDGET - VALUE, 10)
            # A consumer's fetch of a partition that holds a record finds no room ...
            denied = listener.answers.denied
            answer = asyncio.create_task(
                asyncio.to_thread(consumer.request, 1, 12, **_fetch(1, 1 << 20, 4000))
            )
            await until(lambda: listener.answers.denied > denied, 10)
            # ... until the hog reads its answer and the room is given back.
            hog.decode(1, 12, correlation, await asyncio.to_thread(hog.recv_frame))
            resp = await answer
            part = resp.responses[0].partitions[0]
            assert resp.error_code == 0 and part.error_code == 0 and part.high_watermark == 1
            assert part.records and b"the record" in bytes(part.records), (
                "answered without the record that was there"
            )
        finally:
            for client in (writer, hog, consumer):
                client.close()


async def test_a_fetch_claims_what_its_partitions_may_return_not_fetch_max_bytes() -> None:
    """Java asks for fetch.max.bytes = 50 MiB and 1 MiB per partition: the room a
    fetch needs is what its partitions may return, which fits while the budget has
    that much left (before, it was refused for want of 1 MiB and answered empty)."""
    async with gateway_with_hot_topic(2, max_queued_response_bytes=BUDGET) as (gateway, _):
        listener = gateway.listener
        assert listener is not None
        writer = RawClient(gateway.kafka_port)
        hog = _slow_reader(gateway.kafka_port)
        consumer = RawClient(gateway.kafka_port)
        try:
            await asyncio.to_thread(_produce, writer, 0, b"x" * VALUE, BIG_BATCHES)
            await asyncio.to_thread(_produce, writer, 1, b"the record", 1)
            # The hog's unread answer leaves about 512 KiB of the budget.
            hog.send_frame(hog.encode(1, 12, **_fetch(0, BUDGET - (512 << 10), 0))[1])
            await until(lambda: listener.answers.used >= BUDGET - (512 << 10) - VALUE, 10)
            fields = _fetch(1, 64 << 10, 3000)
            fields["max_bytes"] = 50 << 20
            resp = await asyncio.to_thread(consumer.request, 1, 12, **fields)
            part = resp.responses[0].partitions[0]
            assert part.error_code == 0 and part.records and b"the record" in bytes(part.records)
        finally:
            for client in (writer, hog, consumer):
                client.close()
