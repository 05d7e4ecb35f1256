"""`__consumer_offsets`, sent as exact frames: how Metadata lists it (internal, so
regex subscriptions and tools skip it), and what produce and create get. Its
partition count is the broker's own setting (Kafka 50, kop its offsets topic's),
and reading it is where kop differs on purpose (docs/compatibility.md), so
neither is observed here."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.metadata.v12.request import MetadataRequestTopic

from conformance.clients.raw import RawClient
from conformance.model import Ctx, Observation, scenario
from conformance.scenarios.bad_input import RAW, _list_topic, batch, raw_client

NAME = "__consumer_offsets"


def _metadata(client: RawClient, names: list[str] | None) -> Any:
    topics = None
    if names is not None:
        topics = tuple(MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=n) for n in names)
    return client.request(
        3, 12, topics=topics, allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )  # fmt: skip


@scenario("metadata/internal-topics", RAW, quick=True)
def internal_topics(ctx: Ctx, _client: object) -> Observation:
    """All topics list __consumer_offsets as internal; by name it is described (not
    auto-created); a produce to it (at its leader) is refused, and so is creating it."""
    client = raw_client(ctx)
    try:
        listed = [t for t in _metadata(client, None).topics if t.name == NAME]
        named = _metadata(client, [NAME]).topics[0]
        created = client.request(
            19, 7, validate_only=True, timeout=datetime.timedelta(seconds=10),
            topics=(CreatableTopic(name=NAME, num_partitions=1, replication_factor=1,
                                   assignments=(), configs=()),),
        )  # fmt: skip
    finally:
        client.close()
    leader = raw_client(ctx, NAME)
    try:
        produced = leader.produce(NAME, batch([b"v"]))[0].name
    finally:
        leader.close()
    return {
        "listed": [(t.error_code.name, t.is_internal, len(t.partitions) > 0) for t in listed],
        "by name": [named.error_code.name, named.is_internal, len(named.partitions) > 0],
        "produce": produced,
        "create": created.topics[0].error_code.name,
    }


@scenario("metadata/offsets-topic-reads", RAW, quick=True)
def offsets_topic_reads(ctx: Ctx, _client: object) -> Observation:
    """Fetch and ListOffsets of __consumer_offsets partition 0, at its leader."""
    client = raw_client(ctx, NAME)
    try:
        fetched = client.fetch(NAME, 0).responses[0].partitions[0]
        listed = (
            client.request(2, 7, replica_id=-1, isolation_level=0, topics=(_list_topic(NAME),))
            .topics[0]
            .partitions[0]
        )
        return {"fetch": fetched.error_code.name, "list-offsets": listed.error_code.name}
    finally:
        client.close()
