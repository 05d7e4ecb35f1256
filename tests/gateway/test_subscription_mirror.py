"""Committed offsets mirrored as Pulsar subscriptions, end to end through the
Kafka protocol over the in-memory storage: placed at the committed offset's
message under kop's prefix, moved by later commits, removed with the group; a
Pulsar application's subscription of the group's very name is never touched;
after a restart, what the in-memory queues lost is set right."""

from __future__ import annotations

import asyncio
import contextlib
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
from kop.config.settings import KopConfig
from kop.protocol.records import Record, build_batch
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.types import AdminError
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import free_port, gateway_with_hot_topic, until
from tests.sim.memory_admin import MemoryBackend

PARTITION = "persistent://public/default/hot-partition-0"


@pytest.fixture
async def running() -> AsyncIterator[tuple[Gateway, MemoryBackend]]:
    async with gateway_with_hot_topic(
        1, admin_port=0, mirror_interval_s=0.05, group_initial_rebalance_delay_ms=0
    ) as running:
        yield running


@contextlib.asynccontextmanager
async def gateway_on(backend: MemoryBackend, **config: Any) -> AsyncIterator[Gateway]:
    """A gateway over `backend` as it is: what a restart of kop finds."""
    gateway = Gateway(
        KopConfig(listen_host="127.0.0.1", port=free_port(), admin_port=0, **config), backend
    )
    await gateway.start()
    try:
        await until(lambda: gateway.groups.loaded, 5)
        yield gateway
    finally:
        await gateway.stop()


def _commit(offset: int, group: str = "grp") -> dict[str, Any]:
    part = OffsetCommitRequestPartition(
        partition_index=0,
        committed_offset=offset,
        committed_leader_epoch=-1,
        committed_metadata="",
    )
    return {
        "group_id": GroupId(group),
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": (OffsetCommitRequestTopic(name=TopicName("hot"), partitions=(part,)),),
    }


async def _commit_ok(client: RawClient, offset: int, group: str) -> None:
    committed = await asyncio.to_thread(client.request, 8, 7, **_commit(offset, group))
    assert committed.topics[0].partitions[0].error_code == 0


async def _delete_group(client: RawClient, group: str) -> None:
    deleted = await asyncio.to_thread(client.request, 42, 2, groups_names=(GroupId(group),))
    assert deleted.results[0].error_code == 0


async def _produce(client: RawClient, count: int) -> None:
    for i in range(count):  # one record, one entry each
        batch = build_batch([Record(0, 1_700_000_000_000, None, f"v{i}".encode())])
        code, _ = await asyncio.to_thread(client.produce, "hot", batch)
        assert code == 0


async def test_commits_place_move_and_delete_the_groups_subscription(
    running: tuple[Gateway, MemoryBackend],
) -> None:
    gateway, backend = running
    client = RawClient(gateway.kafka_port)
    await _produce(client, 10)
    stored = backend.log.topic(PARTITION).entries()
    await until(lambda: gateway.groups.loaded, 5)

    subs = backend.admin.cursors
    mirrored = (PARTITION, "kafka-group-grp")
    for offset, expected in ((4, stored[4].position), (7, stored[7].position), (10, None)):
        await _commit_ok(client, offset, "grp")
        await until(lambda e=expected: subs.get(mirrored, "none") == e, 5)  # type: ignore[misc]

    await _delete_group(client, "grp")
    await until(lambda: mirrored not in subs, 5)
    client.close()


async def test_a_pulsar_applications_subscription_named_like_the_group_is_left_alone(
    running: tuple[Gateway, MemoryBackend],
) -> None:
    """Before the prefix, kop moved an application's subscription `grp` to the
    group's commits and deleted it with the group."""
    gateway, backend = running
    client = RawClient(gateway.kafka_port)
    await _produce(client, 5)
    stored = backend.log.topic(PARTITION).entries()
    await until(lambda: gateway.groups.loaded, 5)
    subs = backend.admin.cursors
    subs[(PARTITION, "grp")] = stored[1].position  # the application's, where it has read to

    await _commit_ok(client, 3, "grp")
    await until(lambda: subs.get((PARTITION, "kafka-group-grp"), "none") == stored[3].position, 5)
    await _delete_group(client, "grp")
    await until(lambda: (PARTITION, "kafka-group-grp") not in subs, 5)
    assert subs[(PARTITION, "grp")] == stored[1].position
    client.close()


async def test_a_restart_removes_what_no_offset_backs_and_replaces_what_lags() -> None:
    """The first kop never mirrors (its round never comes): the removal DeleteGroups
    queued and the placement of the last commit die with it, as a crash loses
    them. The subscriptions it had placed earlier are planted as they would be."""
    backend = MemoryBackend()
    topic = PulsarTopic(Namespace("public", "default"), "hot", "hot")
    async with gateway_on(backend, mirror_interval_s=3600) as first:
        await backend.admin.create_partitioned(topic, 1, {})
        client = RawClient(first.kafka_port)
        await _produce(client, 10)
        await _commit_ok(client, 3, "gone")
        await _commit_ok(client, 7, "kept")
        await _delete_group(client, "gone")
        client.close()
    stored = backend.log.topic(PARTITION).entries()
    subs = backend.admin.cursors
    subs[(PARTITION, "kafka-group-gone")] = stored[3].position  # its removal was lost
    subs[(PARTITION, "kafka-group-kept")] = stored[2].position  # its move to 7 was lost
    subs[(PARTITION, "gone")] = stored[0].position  # a Pulsar application's
    subs[(PARTITION, "kept")] = stored[1].position  # what kop before the prefix made

    async with gateway_on(backend, mirror_interval_s=0.05) as second:
        await until(lambda: (PARTITION, "kafka-group-gone") not in subs, 5)
        assert gateway_groups_mirror(second).removed == 1
        assert subs[(PARTITION, "kafka-group-kept")] == stored[2].position  # not open yet
        client = RawClient(second.kafka_port)
        await asyncio.to_thread(client.fetch, "hot", 0)  # opens the partition
        await until(lambda: subs[(PARTITION, "kafka-group-kept")] == stored[7].position, 5)
        client.close()
    assert subs[(PARTITION, "gone")] == stored[0].position
    assert subs[(PARTITION, "kept")] == stored[1].position


def gateway_groups_mirror(gateway: Gateway) -> Any:
    assert gateway.groups.mirror is not None
    return gateway.groups.mirror


async def test_a_role_that_may_not_list_subscriptions_stops_the_reconcile_with_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Pulsar answers 403 for every partition alike: one warning, nothing removed
    that could not be looked at, and the mirror goes on placing commits."""
    backend = MemoryBackend()
    topic = PulsarTopic(Namespace("public", "default"), "hot", "hot")
    await backend.admin.create_partitioned(topic, 3, {})
    backend.admin.cursors[(PARTITION, "kafka-group-stale")] = None

    async def refused(_topic: str) -> list[str]:
        raise AdminError(403, "Unauthorized to get subscriptions")

    backend.admin.subscriptions = refused  # type: ignore[method-assign]
    async with gateway_on(backend, mirror_interval_s=0.05) as gateway:
        await until(lambda: "mirror reconcile stopped" in caplog.text, 5)
        client = RawClient(gateway.kafka_port)
        await _commit_ok(client, 0, "grp")
        await until(lambda: (PARTITION, "kafka-group-grp") in backend.admin.cursors, 5)
        client.close()
    assert caplog.text.count("may not list subscriptions") == 1
    assert (PARTITION, "kafka-group-stale") in backend.admin.cursors
