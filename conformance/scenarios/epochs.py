"""Leader epochs (KIP-101, KIP-320), sent as exact frames: the epoch Metadata,
ListOffsets and fetched batches carry; OffsetForLeaderEpoch for the current, a
newer and an older epoch; a current_leader_epoch newer or older than the
leader's in Fetch, ListOffsets and OffsetForLeaderEpoch. Consumers validate
their positions with these (Java, librdkafka)."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from kio.schema.types import TopicName

from conformance.clients.raw import RawClient
from conformance.model import Ctx, Observation, scenario
from conformance.scenarios.bad_input import RAW, batch, raw_client
from conformance.setup import create_topic


def _epoch_end(client: RawClient, topic: str, current: int, epoch: int) -> list[Any]:
    part = OffsetForLeaderPartition(partition=0, current_leader_epoch=current, leader_epoch=epoch)
    wanted = OffsetForLeaderTopic(topic=TopicName(topic), partitions=(part,))
    resp = client.request(23, 4, replica_id=-1, topics=(wanted,))
    p = resp.topics[0].partitions[0]
    return [p.error_code.name, p.leader_epoch, p.end_offset]


def _list(client: RawClient, topic: str, current: int, timestamp: int) -> list[Any]:
    part = ListOffsetsPartition(
        partition_index=0, current_leader_epoch=current, timestamp=timestamp
    )
    resp = client.request(
        2, 7, replica_id=-1, isolation_level=0,
        topics=(ListOffsetsTopic(name=TopicName(topic), partitions=(part,)),),
    )  # fmt: skip
    p = resp.topics[0].partitions[0]
    return [p.error_code.name, p.offset, p.leader_epoch]


def _fetch(client: RawClient, topic: str, current: int) -> list[Any]:
    part = FetchPartition(
        partition=0, current_leader_epoch=current, fetch_offset=0, partition_max_bytes=1 << 20
    )
    resp = client.request(
        1, 12, max_wait=datetime.timedelta(milliseconds=0), min_bytes=1, max_bytes=1 << 20,
        isolation_level=0, session_id=0, session_epoch=-1,
        topics=(FetchTopic(topic=topic, partitions=(part,)),), forgotten_topics_data=(),
        rack_id="",
    )  # fmt: skip
    p = resp.responses[0].partitions[0]
    data = p.records or b""
    epochs = []
    pos = 0
    while pos + 17 <= len(data):
        epochs.append(int.from_bytes(data[pos + 12 : pos + 16], "big", signed=True))
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    return [p.error_code.name, p.high_watermark, epochs]


@scenario("positions/leader-epochs", RAW, quick=True)
def leader_epochs(ctx: Ctx, _client: object) -> Observation:
    """A topic with 3 records in one batch on a leader that never changed."""
    topic = ctx.name("epochs")
    create_topic(ctx.bootstrap, topic)
    client = raw_client(ctx, topic)
    try:
        code, _ = client.produce(topic, batch([b"a", b"b", b"c"]))
        meta = client.request(
            3, 12, topics=(MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=topic),),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False,
        )  # fmt: skip
        return {
            "produce": code.name,
            "metadata epoch": meta.topics[0].partitions[0].leader_epoch,
            "list latest": _list(client, topic, -1, -1),
            "list earliest": _list(client, topic, -1, -2),
            "list after the last": _list(client, topic, -1, 4_000_000_000_000),
            "list, current 0": _list(client, topic, 0, -1),
            "list, current 1": _list(client, topic, 1, -1),
            "list, current -2": _list(client, topic, -2, -1),
            "epoch 0": _epoch_end(client, topic, -1, 0),
            "epoch 0, current 0": _epoch_end(client, topic, 0, 0),
            "epoch 1": _epoch_end(client, topic, -1, 1),
            "epoch -1": _epoch_end(client, topic, -1, -1),
            "epoch -3": _epoch_end(client, topic, -1, -3),
            "epoch 0, current 1": _epoch_end(client, topic, 1, 0),
            "epoch 0, current -2": _epoch_end(client, topic, -2, 0),
            "unknown topic": _epoch_end(client, ctx.name("missing"), -1, 0),
            "fetch": _fetch(client, topic, -1),
            "fetch, current 0": _fetch(client, topic, 0),
            "fetch, current 1": _fetch(client, topic, 1),
            "fetch, current -2": _fetch(client, topic, -2),
        }
    finally:
        client.close()
