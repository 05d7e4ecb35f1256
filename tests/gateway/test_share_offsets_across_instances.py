"""A share group's offsets asked of its coordinator when another instance leads the
partition (D30): the coordinator has no offset index for it, so the leader counts the
subscription's cursor into offsets, moves it and deletes it, asked over the instances'
own connections (KOP-PEER); a client that sends the leader's half of these requests is
not a peer and is answered as a client."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.alter_share_group_offsets.v0.request import (
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from kio.schema.delete_share_group_offsets.v0.request import (
    DeleteShareGroupOffsetsRequestTopic,
)
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from conformance.clients.raw import RawClient
from kop.storage.types import Position
from tests.gateway.test_groups_across_instances import (
    PARTITION,
    group_coordinated_by,
    two_instances,
)
from tests.gateway.test_subscription_mirror import _produce

DESCRIBE, ALTER, DELETE = 90, 91, 92


def _topics(name: str, parts: list[int]) -> Any:
    return (DescribeShareGroupOffsetsRequestTopic(
        topic_name=TopicName(name), partitions=tuple(i32(p) for p in parts)
    ),)  # fmt: skip


async def _describe(
    client: RawClient, group: str, topics: Any = None
) -> list[tuple[int, int, int]]:

    asked = (DescribeShareGroupOffsetsRequestGroup(group_id=GroupId(group), topics=topics),)
    got = await asyncio.to_thread(client.request, DESCRIBE, 1, groups=asked)
    (g,) = got.groups
    assert g.error_code == 0, g
    return [
        (int(p.start_offset), int(p.lag), int(p.error_code))
        for t in g.topics for p in t.partitions
    ]  # fmt: skip


async def test_the_leader_tells_moves_and_deletes_a_share_groups_start_offset() -> None:
    async with two_instances() as (owner, other, backend):
        group = group_coordinated_by(other)
        coordinator = RawClient(other.kafka_port)
        await _produce(RawClient(owner.kafka_port), 10)
        stored = backend.log.topic(PARTITION).entries()
        subscription = f"kafka-share-{group}"
        assert await _describe(coordinator, group, _topics("hot", [0])) == [(-1, -1, 0)]

        # The group's Shared subscription, as its first fetch would have made it, at 4.
        await backend.admin.place_subscription(PARTITION, subscription, stored[4].position)
        assert await _describe(coordinator, group, _topics("hot", [0])) == [(4, 6, 0)]

        moved = await asyncio.to_thread(
            coordinator.request, ALTER, 0, group_id=GroupId(group), topics=(
                AlterShareGroupOffsetsRequestTopic(topic_name=TopicName("hot"), partitions=(
                    AlterShareGroupOffsetsRequestPartition(
                        partition_index=i32(0), start_offset=i64(2)
                    ),
                )),
            ),
        )  # fmt: skip
        assert moved.error_code == 0
        assert [p.error_code for r in moved.responses for p in r.partitions] == [0]
        assert backend.admin.cursors[(PARTITION, subscription)] == stored[2].position
        assert await _describe(coordinator, group, _topics("hot", [0])) == [(2, 8, 0)]

        deleted = await asyncio.to_thread(
            coordinator.request, DELETE, 0, group_id=GroupId(group),
            topics=(DeleteShareGroupOffsetsRequestTopic(topic_name=TopicName("hot")),),
        )  # fmt: skip
        assert (deleted.error_code, [r.error_code for r in deleted.responses]) == (0, [0])
        assert subscription not in await backend.admin.subscriptions(PARTITION)
        assert await _describe(coordinator, group, None) == []


async def test_a_client_asking_as_a_leader_is_answered_as_a_client() -> None:
    """A client names the group as kop keys it and the topic by its full Pulsar name,
    as an instance asking a leader does: it is not one, so the group is its own
    namespace's (a name it may not use) and nothing of the leader's half is done."""
    async with two_instances() as (owner, _other, backend):
        await _produce(RawClient(owner.kafka_port), 3)
        stored = backend.log.topic(PARTITION).entries()
        await backend.admin.place_subscription(PARTITION, "kafka-share-g", stored[1].position)
        full = "persistent://public/default/hot"
        got = await asyncio.to_thread(
            RawClient(owner.kafka_port).request, DESCRIBE, 1, groups=(
                _group("public/default/g", _topics(full, [0])),
            ),
        )  # fmt: skip
        (g,) = got.groups
        assert [p.start_offset for t in g.topics for p in t.partitions] in ([], [-1]), g
        assert backend.admin.cursors[(PARTITION, "kafka-share-g")] == Position(*stored[1].position)


def _group(group: str, topics: Any) -> Any:
    return DescribeShareGroupOffsetsRequestGroup(group_id=GroupId(group), topics=topics)
