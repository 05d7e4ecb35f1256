"""Produce to partitions this instance has not opened yet, as a new owner gets it
right after a takeover. A partition being opened holds up neither the other
partitions of its request nor the connection's later requests for other partitions;
each partition's batches are still written in the order they arrived."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterable
from typing import Any

import pytest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData

from conformance.clients.raw import RawClient
from kop.log.partition_log import PartitionLog
from kop.protocol.records import Record, build_batch
from tests.gateway.memory_gateway import gateway_with_hot_topic, until

P0, P1 = (f"persistent://public/default/hot-partition-{i}" for i in (0, 1))


def _produce(partitions: Iterable[int], value: bytes = b"v") -> dict[str, Any]:
    batch = build_batch([Record(0, 1_700_000_000_000, None, value)])
    return {
        "transactional_id": None, "acks": -1, "timeout": datetime.timedelta(seconds=30),
        "topic_data": (TopicProduceData(name="hot", partition_data=tuple(
            PartitionProduceData(index=i, records=batch) for i in partitions
        )),),
    }  # fmt: skip


def _answers(answer: Any) -> list[tuple[int, int, int]]:
    parts = answer.responses[0].partition_responses
    return [(p.index, p.error_code, p.base_offset) for p in parts]


async def test_the_partitions_of_one_produce_are_opened_side_by_side(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each opening waits until the other has begun: one after another, the first
    gives up after `open_wait_s` (LEADER_NOT_AVAILABLE)."""
    both_opening = asyncio.Barrier(2)
    real_open = PartitionLog.open

    async def open_once_both_are_opening(self: PartitionLog) -> None:
        await both_opening.wait()
        await real_open(self)

    monkeypatch.setattr(PartitionLog, "open", open_once_both_are_opening)
    async with gateway_with_hot_topic(2, open_wait_s=2.0) as (gateway, _backend):
        client = RawClient(gateway.kafka_port)
        answer = await asyncio.to_thread(client.request, 0, 9, **_produce([0, 1]))
        client.close()
    assert _answers(answer) == [(0, 0, 0), (1, 0, 0)]


async def test_a_partition_opening_holds_up_no_later_request_for_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = asyncio.Event()
    real_open = PartitionLog.open

    async def p0_opens_when_released(self: PartitionLog) -> None:
        if self.topic == P0:
            await release.wait()
        await real_open(self)

    monkeypatch.setattr(PartitionLog, "open", p0_opens_when_released)
    async with gateway_with_hot_topic(2, open_wait_s=30.0) as (gateway, backend):
        client = RawClient(gateway.kafka_port)
        first = await asyncio.to_thread(client.request, 0, 9, **_produce([1], b"early"))
        assert _answers(first) == [(1, 0, 0)]  # partition 1 is open

        sent = []
        for partitions, value in (([0], b"a0"), ([1], b"b1"), ([0], b"a1")):
            correlation, payload = client.encode(0, 9, **_produce(partitions, value))
            await asyncio.to_thread(client.send_frame, payload)
            sent.append(correlation)
        # Partition 0 is still opening; the request after it, for partition 1, is written.
        await until(lambda: len(backend.log.topic(P1).entries()) == 2, 5)
        assert not backend.log.topic(P0).entries()
        release.set()
        answers = [
            _answers(client.decode(0, 9, c, await asyncio.to_thread(client.recv_frame)))
            for c in sent
        ]
        client.close()
    assert answers == [[(0, 0, 0)], [(1, 0, 1)], [(0, 0, 1)]]  # in order, per partition too
