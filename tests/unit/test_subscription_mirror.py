"""Committed offsets mirrored as Pulsar subscriptions, end to end through the
Kafka protocol over the in-memory storage: placed at the committed offset's
message, moved by later commits, removed with the group."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kio.schema.offset_commit.v7.request import (
    GroupId,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    TopicName,
)

from conformance.clients.raw import RawClient
from kop.app import Gateway
from kop.protocol.records import Record, build_batch
from tests.sim.memory_admin import MemoryBackend
from tests.unit.memory_gateway import gateway_with_hot_topic, until

PARTITION = "persistent://public/default/hot-partition-0"


@pytest.fixture
async def running() -> AsyncIterator[tuple[Gateway, MemoryBackend]]:
    async with gateway_with_hot_topic(
        1, admin_port=0, mirror_interval_s=0.05, group_initial_rebalance_delay_ms=0
    ) as running:
        yield running


def _commit(offset: int) -> dict[str, Any]:
    part = OffsetCommitRequestPartition(
        partition_index=0,
        committed_offset=offset,
        committed_leader_epoch=-1,
        committed_metadata="",
    )
    return {
        "group_id": GroupId("grp"),
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": (OffsetCommitRequestTopic(name=TopicName("hot"), partitions=(part,)),),
    }


async def test_commits_place_move_and_delete_the_groups_subscription(
    running: tuple[Gateway, MemoryBackend],
) -> None:
    gateway, backend = running
    client = RawClient(gateway.kafka_port)
    for i in range(10):  # ten records, one entry each
        batch = build_batch([Record(0, 1_700_000_000_000, None, f"v{i}".encode())])
        code, _ = await asyncio.to_thread(client.produce, "hot", batch)
        assert code == 0
    stored = backend.log.topic(PARTITION).entries()
    await until(lambda: gateway.groups is not None and gateway.groups.loaded, 5)

    subs = backend.admin.subscriptions
    for offset, expected in ((4, stored[4].position), (7, stored[7].position), (10, None)):
        committed = await asyncio.to_thread(client.request, 8, 7, **_commit(offset))
        assert committed.topics[0].partitions[0].error_code == 0
        await until(lambda e=expected: subs.get((PARTITION, "grp"), "none") == e, 5)  # type: ignore[misc]

    deleted = await asyncio.to_thread(
        client.request,
        42,
        2,
        groups_names=(GroupId("grp"),),
    )
    assert deleted.results[0].error_code == 0
    await until(lambda: (PARTITION, "grp") not in subs, 5)
    client.close()
