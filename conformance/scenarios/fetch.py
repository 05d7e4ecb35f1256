"""Fetch, sent as exact frames: what one response holds under `max_bytes` and
`partition_max_bytes` (KIP-74). Kafka may end a response with part of a batch,
which every client drops; the observation is what a client reads: the records of
the whole batches. One fetch names two partitions, so both must have one leader:
with several brokers the topic gets one partition more than there are brokers, and
the first two that share a leader are used (kop and Kafka place partitions each
their own way, but one of them always shares)."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData

from conformance.clients.base import until
from conformance.clients.raw import RawClient, leaders
from conformance.model import Ctx, Observation, scenario
from conformance.scenarios.bad_input import RAW, batch
from conformance.setup import broker_count, create_topic

Pair = tuple[int, int]  # two partitions with one leader: observed as p0 and p1


def _produce(client: RawClient, topic: str, partition: int, value: bytes) -> str:
    records = batch([value])
    fields = client.produce_fields(topic, records)
    data = PartitionProduceData(index=partition, records=records)
    fields["topic_data"] = (TopicProduceData(name=topic, partition_data=(data,)),)
    resp = client.request(0, 9, **fields)
    return str(resp.responses[0].partition_responses[0].error_code.name)


def whole_batches(data: bytes) -> list[bytes]:
    """The complete batches of a records field (a trailing partial one is dropped,
    as clients drop it)."""
    out: list[bytes] = []
    pos = 0
    while pos + 12 <= len(data):
        end = pos + 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
        if end > len(data):
            break
        out.append(data[pos:end])
        pos = end
    return out


def _lengths(data: bytes) -> list[int]:
    """Value lengths of every record in the whole batches (one record each here)."""
    from aiokafka.record.default_records import DefaultRecordBatch

    out: list[int] = []
    for b in whole_batches(data):
        out.extend(len(r.value or b"") for r in DefaultRecordBatch(b))
    return out


def _pair_on_one_leader(bootstrap: str, topic: str) -> tuple[Pair, str]:
    """The first two partitions that share a leader, and that leader's address."""
    seen: dict[str, int] = {}
    for partition, leader in sorted(leaders(bootstrap, topic).items()):
        if leader in seen:
            return (seen[leader], partition), leader
        seen[leader] = partition
    raise AssertionError(f"no two partitions of {topic} share a leader: {seen}")


def _fetch(client: RawClient, topic: str, pair: Pair, max_bytes: int, part_max: int) -> Any:
    parts = tuple(
        FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=part_max) for p in pair
    )
    resp = client.request(
        1, 12, max_wait=datetime.timedelta(milliseconds=0), min_bytes=1, max_bytes=max_bytes,
        isolation_level=0, session_id=0, session_epoch=-1,
        topics=(FetchTopic(topic=topic, partitions=parts),), forgotten_topics_data=(),
        rack_id="",
    )  # fmt: skip
    return {
        f"p{pair.index(p.partition_index)}": {
            "error": p.error_code.name,
            "values": _lengths(p.records or b""),
            "within the limit": len(p.records or b"") <= min(max_bytes, part_max),
        }
        for t in resp.responses
        for p in t.partitions
    }


def _readable(client: RawClient, topic: str, pair: Pair) -> bool | None:
    got = _fetch(client, topic, pair, 1 << 20, 1 << 20)
    ready = got["p0"]["values"] == [10, 50_000] and got["p1"]["values"] == [50_000]
    return True if ready else None


def _served(parts: dict[str, Any]) -> dict[str, int]:
    """How many records and partitions a response served. Kafka 4.3.1 answers the
    100-bytes-a-partition fetch either with partition 0's small batch or with partition
    1's large one (seen in two runs of the same requests); both are one batch, whole."""
    values = [v for p in parts.values() for v in p["values"]]
    return {"records": len(values), "partitions": sum(1 for p in parts.values() if p["values"])}


@scenario("fetch/size-limits", RAW, quick=True)
def size_limits(ctx: Ctx, _client: object) -> Observation:
    """Of two partitions with one leader, the first holds a 10-byte record then a 50 KB
    one, the second a 50 KB one. A batch is served only if it fits; the first of a
    response comes whole even if it does not (so a consumer always progresses), and
    only the first."""
    topic = ctx.name("fetch-limits")
    create_topic(ctx.bootstrap, topic, partitions=broker_count(ctx.bootstrap) + 1)
    pair, leader = _pair_on_one_leader(ctx.bootstrap, topic)
    client = RawClient.at(leader, timeout=15)
    try:
        writes = [
            _produce(client, topic, pair[0], b"s" * 10),
            _produce(client, topic, pair[0], b"L" * 50_000),
            _produce(client, topic, pair[1], b"L" * 50_000),
        ]
        # Right after creation Kafka may still answer a partition NOT_LEADER_OR_FOLLOWER,
        # or without its records: wait until both serve everything written.
        until("both partitions readable", 30, lambda: _readable(client, topic, pair))
        return {
            "writes": writes,
            "4000 / 4000": _fetch(client, topic, pair, 4000, 4000),
            "1 MiB / 4000 per partition": _fetch(client, topic, pair, 1 << 20, 4000),
            "4000 / 1 MiB per partition": _fetch(client, topic, pair, 4000, 1 << 20),
            "60000 / 1 MiB per partition": _fetch(client, topic, pair, 60_000, 1 << 20),
            "1 MiB / 100 per partition": _served(_fetch(client, topic, pair, 1 << 20, 100)),
        }
    finally:
        client.close()
