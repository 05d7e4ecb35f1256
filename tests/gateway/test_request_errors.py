"""Kafka's error codes as metrics: `kop_request_errors_total{api, error}` counts each
error an answer carries, as Kafka's RequestMetrics ErrorsPerSec does (one failed
partition of several is one error; a request whose partitions all succeeded adds
nothing), so a dashboard can show which errors clients meet, not only that a request
was answered."""

from __future__ import annotations

import asyncio
import datetime

from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from prometheus_client import generate_latest

from conformance.clients.raw import RawClient
from kop.ops.metrics import Metrics
from kop.protocol.error_counts import error_counts
from kop.protocol.errors import ErrorCode
from kop.protocol.records import Record, build_batch
from tests.gateway.memory_gateway import gateway_with_hot_topic

PRODUCE = 0


def _produce(topic: str, partitions: range) -> dict[str, object]:
    batch = build_batch([Record(0, 0, None, b"v")])
    data = tuple(PartitionProduceData(index=p, records=batch) for p in partitions)
    return {
        "transactional_id": None, "acks": -1, "timeout": datetime.timedelta(seconds=5),
        "topic_data": (TopicProduceData(name=topic, partition_data=data),),
    }  # fmt: skip


def test_error_codes_are_counted_wherever_an_answer_holds_them() -> None:
    answer = {
        "error_code": ErrorCode.none,
        "responses": [
            {"name": "t", "partitions": [
                {"index": 0, "error_code": ErrorCode.none, "records": b"\x00" * 8},
                {"index": 1, "error_code": ErrorCode.not_leader_or_follower},
                {"index": 2, "error_code": ErrorCode.not_leader_or_follower},
            ]},
            {"name": "u",
             "partitions": ({"index": 0, "error_code": ErrorCode.unknown_server_error},)},
        ],
    }  # fmt: skip
    assert error_counts(answer) == {
        ErrorCode.not_leader_or_follower: 2,
        ErrorCode.unknown_server_error: 1,
    }
    assert error_counts({"error_code": 0, "records": memoryview(b"x")}) == {}


async def test_each_failed_partition_of_a_produce_is_one_error_in_the_metrics() -> None:
    async with gateway_with_hot_topic(2) as (gateway, _backend):
        client = RawClient(gateway.kafka_port)
        try:
            # partitions 0 and 1 exist, 7 and 8 do not
            r = await asyncio.to_thread(client.request, PRODUCE, 9, **_produce("hot", range(2)))
            codes = [p.error_code for p in r.responses[0].partition_responses]
            assert codes == [ErrorCode.none, ErrorCode.none]
            r = await asyncio.to_thread(client.request, PRODUCE, 9, **_produce("hot", range(7, 9)))
            codes = [p.error_code for p in r.responses[0].partition_responses]
            assert codes == [ErrorCode.unknown_topic_or_partition] * 2
        finally:
            client.close()
        text = generate_latest(gateway.metrics.registry).decode()
        line = 'kop_request_errors_total{api="produce",error="UNKNOWN_TOPIC_OR_PARTITION"} 2.0'
        assert line in text
        assert 'error="NONE"' not in text


def test_made_up_api_keys_share_one_label() -> None:
    """The API label comes from the client's request header: a key kop does not
    implement is `unknown`, whatever its number, or a client cycling through 32,768
    made-up keys would make as many series in every scrape."""
    metrics = Metrics()
    for key in (999, 1000, 31_000):
        metrics.request_done(key, 0.001, True, {35: 1})
    text = generate_latest(metrics.registry).decode()
    assert 'kop_requests_total{api="unknown",outcome="ok"} 3.0' in text
    assert 'kop_request_errors_total{api="unknown",error="UNSUPPORTED_VERSION"} 3.0' in text
    assert 'api="999"' not in text
