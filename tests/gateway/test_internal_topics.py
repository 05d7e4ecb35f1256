"""`__consumer_offsets` is listed in Metadata as internal, as Kafka lists it, so
regex subscriptions and tools skip it (franz-go's TestConsumeRegex); asked for by
name it is described, never auto-created as a user topic. Its records are not
served: reads get what Kafka answers a client not allowed to read it, produce
and create what Kafka answers every client."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.metadata.v12.request import MetadataRequestTopic

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from tests.gateway.memory_gateway import gateway_with_hot_topic

NAME = "__consumer_offsets"


def _metadata(client: RawClient, names: list[str] | None, auto_create: bool = True) -> Any:
    topics = None
    if names is not None:
        topics = tuple(MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=n) for n in names)
    return client.request(
        3, 12, topics=topics, allow_auto_topic_creation=auto_create,
        include_topic_authorized_operations=False,
    )  # fmt: skip


def _steps(client: RawClient) -> dict[str, Any]:
    listed = {t.name: t for t in _metadata(client, None).topics}
    by_name = _metadata(client, [NAME]).topics[0]
    batch = build_batch([Record(0, 1_700_000_000_000, None, b"v")])
    created = client.request(
        19, 7, validate_only=False, timeout=datetime.timedelta(seconds=10),
        topics=(CreatableTopic(name=NAME, num_partitions=1, replication_factor=1,
                               assignments=(), configs=()),),
    )  # fmt: skip
    fetched = client.fetch(NAME, 0).responses[0].partitions[0]
    return {
        "listed": sorted(listed),
        "internal": {n: t.is_internal for n, t in listed.items()},
        "partitions": len(listed[NAME].partitions),
        "by name": (by_name.error_code.name, by_name.is_internal, len(by_name.partitions)),
        "produce": client.produce(NAME, batch)[0].name,
        "create": created.topics[0].error_code.name,
        "fetch": fetched.error_code.name,
        "listed after": sorted(t.name for t in _metadata(client, None).topics),
    }


async def test_the_offsets_topic_is_listed_as_internal_and_not_served() -> None:
    async with gateway_with_hot_topic(1, offsets_topic_partitions=5) as (gateway, _):
        client = RawClient(gateway.kafka_port)
        try:
            got = await asyncio.to_thread(_steps, client)
        finally:
            client.close()
    assert got == {
        "listed": [NAME, "hot"],
        "internal": {NAME: True, "hot": False},
        "partitions": 5,
        "by name": ("none", True, 5),
        "produce": "invalid_topic_exception",
        "create": "topic_already_exists",
        "fetch": "topic_authorization_failed",
        "listed after": [NAME, "hot"],
    }
