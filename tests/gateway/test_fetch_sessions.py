"""Fetch sessions as Kafka 4.3.1 answers them when it declines to create one
(KIP-227): epoch 0 or -1 gets a full answer with session id 0 naming exactly the
partitions asked for, each once; an epoch that continues an incremental session
kop never created is FETCH_SESSION_ID_NOT_FOUND with no partitions. (What Kafka
answers was read off the reference broker with the same requests.)"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from tests.gateway.memory_gateway import gateway_with_hot_topic


def _fetch(session_id: int, epoch: int, partitions: tuple[int, ...]) -> dict[str, Any]:
    parts = tuple(
        FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20) for p in partitions
    )
    return {
        "max_wait": datetime.timedelta(milliseconds=0),
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": (FetchTopic(topic="hot", partitions=parts),) if parts else (),
        "forgotten_topics_data": (),
        "rack_id": "",
    }


def _answers(port: int, cases: list[dict[str, Any]]) -> list[Any]:
    client = RawClient(port)
    try:
        assert client.produce("hot", build_batch([Record(0, 1, None, b"v")]))[0] == 0
        return [client.request(1, 12, **fields) for fields in cases]
    finally:
        client.close()


def _named(resp: Any) -> list[tuple[str, int]]:
    return [(t.topic, p.partition_index) for t in resp.responses for p in t.partitions]


@pytest.mark.parametrize("session_id", [0, 777])
async def test_session_epochs_are_answered_as_kafka_answers_them(session_id: int) -> None:
    cases = {
        "new session": (0, (0, 1)),
        "no session": (-1, (0, 1)),
        "close, asking nothing": (-1, ()),
        "incremental": (1, (0,)),
        "incremental, later": (5, (1,)),
        "below -1": (-2, (0,)),
    }
    async with gateway_with_hot_topic(2) as (gateway, _):
        fields = [_fetch(session_id, epoch, parts) for epoch, parts in cases.values()]
        got = await asyncio.to_thread(_answers, gateway.kafka_port, fields)
    answers = dict(zip(cases, got, strict=True))
    for name in ("new session", "no session"):
        resp = answers[name]
        assert resp.error_code == ErrorCode.none and resp.session_id == 0, name
        assert _named(resp) == [("hot", 0), ("hot", 1)], name
        assert resp.responses[0].partitions[0].records, name
    closing = answers["close, asking nothing"]
    assert closing.error_code == ErrorCode.none and _named(closing) == []
    for name in ("incremental", "incremental, later", "below -1"):
        resp = answers[name]
        assert resp.error_code == ErrorCode.fetch_session_id_not_found, name
        assert resp.session_id == 0 and _named(resp) == [], name


async def test_a_partition_named_twice_is_answered_once() -> None:
    async with gateway_with_hot_topic(2) as (gateway, _):
        fields = _fetch(0, -1, (1, 0, 1))
        (resp,) = await asyncio.to_thread(_answers, gateway.kafka_port, [fields])
    assert resp.error_code == ErrorCode.none and _named(resp) == [("hot", 1), ("hot", 0)]
