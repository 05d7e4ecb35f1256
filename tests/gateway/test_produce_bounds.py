"""A produced batch through the whole gateway (in-memory storage): one that would
inflate past `max_uncompressed_batch_bytes` is answered MESSAGE_TOO_LARGE and the
connection goes on; one of many records is encoded off the event loop."""

from __future__ import annotations

import asyncio
import datetime
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData

from conformance.clients.raw import RawClient
from kop.entries import codec as entries
from kop.log import appender
from kop.protocol.errors import ErrorCode
from kop.protocol.records import Record, build_batch
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import gateway_with_hot_topic
from tests.sim.memory_admin import MemoryBackend


@pytest.fixture
async def running() -> AsyncIterator[tuple[Gateway, MemoryBackend]]:
    async with gateway_with_hot_topic(1, admin_port=0) as running:
        yield running


def _produce(batch: bytes) -> dict[str, Any]:
    data = PartitionProduceData(index=0, records=batch)
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout": datetime.timedelta(seconds=30),
        "topic_data": (TopicProduceData(name="hot", partition_data=(data,)),),
    }


async def _code(client: RawClient, batch: bytes) -> int:
    response = await asyncio.to_thread(client.request, 0, 9, **_produce(batch))
    return int(response.responses[0].partition_responses[0].error_code)


async def test_a_decompression_bomb_is_message_too_large_and_the_connection_goes_on(
    running: tuple[Gateway, MemoryBackend],
) -> None:
    gateway, _ = running
    client = RawClient(gateway.kafka_port)
    bomb = build_batch([Record(0, 1, None, bytes(256 << 20))], compression=4)  # zstd
    assert len(bomb) < 64 << 10
    assert await _code(client, bomb) == ErrorCode.message_too_large
    fine = build_batch([Record(0, 1, None, b"x" * 1000)], compression=4)
    assert await _code(client, fine) == ErrorCode.none
    client.close()


async def test_a_batch_of_many_records_is_encoded_off_the_event_loop(
    running: tuple[Gateway, MemoryBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway, _ = running
    threads: list[bool] = []
    encode = entries.encode

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread() is threading.main_thread())
        return encode(*args, **kwargs)

    monkeypatch.setattr(entries, "encode", recording)
    client = RawClient(gateway.kafka_port)
    few = [Record(i, 1, None, b"v") for i in range(10)]
    many = [Record(i, 1, None, b"v") for i in range(appender.OFFLOAD_RECORDS + 1)]
    assert await _code(client, build_batch(few)) == ErrorCode.none
    assert await _code(client, build_batch(many)) == ErrorCode.none
    assert threads == [True, False]  # the event loop's thread, then a worker
    client.close()
