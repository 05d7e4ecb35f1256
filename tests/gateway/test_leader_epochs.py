"""Leader epochs as consumers use them (KIP-320): the batches kop serves carry the
epoch Metadata and ListOffsets report (0), so a consumer's position and commits
carry it; OffsetForLeaderEpoch says where that epoch ends (the log end), so the
consumer's validation of its position finds nothing truncated; a client that
claims a newer or older epoch than the leader's is answered as Kafka answers it.
Through a socket, over the in-memory storage, in both entry formats."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

import pytest
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from kio.schema.types import TopicName

from conformance.clients.raw import RawClient
from kop.config.settings import KopConfig
from kop.log.leader_epoch import end_offset_for
from kop.protocol.records import Record, build_batch
from kop.storage.naming import Namespace, PulsarTopic
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import CLUSTER_SECRET, free_port, gateway_with_hot_topic
from tests.sim.memory_admin import MemoryAdmin, MemoryBackend
from tests.sim.memory_log import MemoryLog


def _epoch_end(client: RawClient, current: int, epoch: int) -> tuple[str, int, int]:
    part = OffsetForLeaderPartition(partition=0, current_leader_epoch=current, leader_epoch=epoch)
    topic = OffsetForLeaderTopic(topic=TopicName("hot"), partitions=(part,))
    p = client.request(23, 4, replica_id=-1, topics=(topic,)).topics[0].partitions[0]
    return p.error_code.name, p.leader_epoch, p.end_offset


def _fetch(client: RawClient, current: int) -> tuple[str, list[int]]:
    part = FetchPartition(
        partition=0, current_leader_epoch=current, fetch_offset=0, partition_max_bytes=1 << 20
    )
    p = client.request(
        1, 12, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20,
        isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
        topics=(FetchTopic(topic="hot", partitions=(part,)),), forgotten_topics_data=(),
    ).responses[0].partitions[0]  # fmt: skip
    data, epochs, pos = p.records or b"", [], 0
    while pos + 17 <= len(data):
        epochs.append(int.from_bytes(data[pos + 12 : pos + 16], "big", signed=True))
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    return p.error_code.name, epochs


def _list(client: RawClient, current: int) -> tuple[str, int, int]:
    part = ListOffsetsPartition(partition_index=0, current_leader_epoch=current, timestamp=-1)
    topic = ListOffsetsTopic(name=TopicName("hot"), partitions=(part,))
    p = client.request(2, 7, replica_id=-1, isolation_level=0, topics=(topic,))
    q = p.topics[0].partitions[0]
    return q.error_code.name, q.offset, q.leader_epoch


def _list_every_version(client: RawClient) -> dict[int, tuple[str, int, int | None]]:
    """ListOffsets LATEST at every version kop serves: (error, offset, leader epoch, or
    None where the version has no such field)."""
    part = ListOffsetsPartition(partition_index=0, timestamp=-1)
    topic = ListOffsetsTopic(name=TopicName("hot"), partitions=(part,))
    out = {}
    for version in range(1, 8):
        fields: dict[str, Any] = {"replica_id": -1, "topics": (topic,)}
        if version >= 2:
            fields["isolation_level"] = 0
        q = client.request(2, version, **fields).topics[0].partitions[0]
        out[version] = (q.error_code.name, q.offset, getattr(q, "leader_epoch", None))
    return out


def _steps(client: RawClient) -> dict[str, Any]:
    for values in ([b"a", b"b", b"c"], [b"d"]):
        batch = build_batch([Record(i, 1_700_000_000_000, None, v) for i, v in enumerate(values)])
        assert client.produce("hot", batch)[0].name == "none"
    return {
        "batch epochs": _fetch(client, -1),
        "epoch 0": _epoch_end(client, -1, 0),
        "epoch 0, current 0": _epoch_end(client, 0, 0),
        "epoch 1": _epoch_end(client, -1, 1),
        "current 1": _epoch_end(client, 1, 0),
        "current -2": _epoch_end(client, -2, 0),
        "fetch, current 1": _fetch(client, 1)[0],
        "fetch, current -2": _fetch(client, -2)[0],
        "list, current 1": _list(client, 1),
        "list": _list(client, 0),
        "list, every version": _list_every_version(client),
    }


@pytest.mark.parametrize("fmt", ["pulsar", "kafka"])
async def test_consumers_see_epoch_0_and_where_it_ends(fmt: str) -> None:
    async with gateway_with_hot_topic(1, default_entry_format=fmt) as (gateway, _):
        client = RawClient(gateway.kafka_port)
        try:
            got = await asyncio.to_thread(_steps, client)
        finally:
            client.close()
    assert got == {
        "batch epochs": ("none", [0, 0]),
        "epoch 0": ("none", 0, 4),
        "epoch 0, current 0": ("none", 0, 4),
        "epoch 1": ("none", -1, -1),
        "current 1": ("unknown_leader_epoch", -1, -1),
        "current -2": ("fenced_leader_epoch", -1, -1),
        "fetch, current 1": "unknown_leader_epoch",
        "fetch, current -2": "none",  # Fetch takes any negative epoch for "none"
        "list, current 1": ("unknown_leader_epoch", -1, -1),
        "list": ("none", 4, 0),
        # The leader epoch from v4, as Kafka answers (the field is not ignorable before):
        # a typed answer that set it at v1-3 closed the connection.
        "list, every version": {v: ("none", 4, 0 if v >= 4 else None) for v in range(1, 8)},
    }


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (3, (3, 9)),
        (2, (2, 9)),
        (0, (0, 9)),
        (4, (-1, -1)),
        (7, (-1, -1)),
        (-1, (-1, -1)),
        (-3, (-3, 2)),
    ],
)
def test_every_epoch_up_to_the_current_one_ends_at_the_log_end(
    requested: int, expected: tuple[int, int]
) -> None:
    """The current epoch (3) ends at the log end (9), as in Kafka; so does every older
    one, since kop never truncates (a consumer's position from any of them is valid);
    a newer or undefined one is unknown; one below the first ends at the log start (2),
    as Kafka answers them."""
    assert end_offset_for(requested, 2, 9, 3) == expected


def _metadata_epoch(client: RawClient) -> int:
    topic = MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=TopicName("hot"))
    resp = client.request(
        3, 12, topics=(topic,), allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )  # fmt: skip
    return int(resp.topics[0].partitions[0].leader_epoch)


def _list_at(client: RawClient, current: int, timestamp: int) -> tuple[str, int, int]:
    part = ListOffsetsPartition(
        partition_index=0, current_leader_epoch=current, timestamp=timestamp
    )
    topic = ListOffsetsTopic(name=TopicName("hot"), partitions=(part,))
    q = client.request(2, 7, replica_id=-1, isolation_level=0, topics=(topic,))
    p = q.topics[0].partitions[0]
    return p.error_code.name, p.offset, p.leader_epoch


async def _serve(store: MemoryLog, admin: MemoryAdmin, node: int, steps: Any) -> Any:
    """One kop instance (node id `node`) over `store`, `steps` run by a client
    against it, then the instance stopped (it hands its partitions over)."""
    config = KopConfig(
        listen_host="127.0.0.1", port=free_port(), admin_port=0, node_id=node,
        cluster_secret=CLUSTER_SECRET,
    )  # fmt: skip
    backend = MemoryBackend(store.instance())
    backend.admin = admin  # one Pulsar's topic metadata for both
    gateway = Gateway(config, backend)
    await gateway.start()
    client = RawClient(gateway.kafka_port)
    try:
        return await asyncio.to_thread(steps, client)
    finally:
        client.close()
        await gateway.stop()


async def test_the_next_instance_to_serve_a_partition_leads_it_in_a_newer_epoch() -> None:
    """kop restarted, or another instance taking a partition over: its epoch grows,
    a client still holding the old one is fenced and refreshes metadata, and the
    consumer's check of its position (epoch 0, offset 4) finds nothing truncated."""
    store = MemoryLog()
    admin = MemoryAdmin(store)
    await admin.create_partitioned(PulsarTopic(Namespace("public", "default"), "hot", "hot"), 1, {})

    def first(client: RawClient) -> dict[str, Any]:
        for values in ([b"a", b"b", b"c"], [b"d"]):
            batch = build_batch(
                [Record(i, 1_700_000_000_000, None, v) for i, v in enumerate(values)]
            )
            assert client.produce("hot", batch)[0].name == "none"
        return {"metadata": _metadata_epoch(client), "fetch, current 0": _fetch(client, 0)}

    def second(client: RawClient) -> dict[str, Any]:
        return {
            "metadata before it serves": _metadata_epoch(client),
            "fetch, current 0": _fetch(client, 0)[0],
            "metadata": _metadata_epoch(client),
            "fetch, current 1": _fetch(client, 1),
            "epoch 0 ends": _epoch_end(client, 1, 0),
            "epoch 1 ends": _epoch_end(client, 1, 1),
            "epoch 2 ends": _epoch_end(client, 1, 2),
            "latest": _list_at(client, 1, -1),
            "earliest": _list_at(client, 1, -2),
            "list, current 0": _list_at(client, 0, -1)[0],
        }

    assert await _serve(store, admin, 0, first) == {
        "metadata": 0, "fetch, current 0": ("none", [0, 0])
    }  # fmt: skip
    assert await _serve(store, admin, 1, second) == {
        "metadata before it serves": 1,  # the epoch it will take: another took 0
        "fetch, current 0": "fenced_leader_epoch",  # opening it took epoch 1
        "metadata": 1,
        "fetch, current 1": ("none", [0, 0]),  # batches carry epoch 0
        "epoch 0 ends": ("none", 0, 4),  # at the log end: nothing was truncated
        "epoch 1 ends": ("none", 1, 4),
        "epoch 2 ends": ("none", -1, -1),
        "latest": ("none", 4, 1),
        "earliest": ("none", 0, 0),
        "list, current 0": "fenced_leader_epoch",
    }
