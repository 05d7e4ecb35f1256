"""A share group's coordinator moves (kop/groups/share/stored.py): the instance that
takes its offsets partition over reads the group back, so a member's next heartbeat at
the epoch it was told goes on (before, it got UNKNOWN_MEMBER_ID and joined again), and
the instance that let the partition go no longer lists the group."""

from __future__ import annotations

import asyncio
from typing import Any

from conformance.clients.raw import RawClient
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import until
from tests.gateway.test_groups_across_instances import group_coordinated_by, two_instances


def _beat(port: int, group: str, member: str, epoch: int) -> Any:
    client = RawClient(port)
    try:
        return client.request(
            76, 1, group_id=group, member_id=member, member_epoch=epoch, rack_id=None,
            subscribed_topic_names=("hot",) if epoch == 0 else None,
        )  # fmt: skip
    finally:
        client.close()


async def test_members_go_on_at_their_epochs_after_the_coordinator_moves() -> None:
    async with two_instances() as (owner, other, _backend):
        group = group_coordinated_by(other)
        joined = await asyncio.to_thread(_beat, other.kafka_port, group, "m1", 0)
        assert joined.error_code == 0 and joined.member_epoch >= 1
        await other.stop()  # its offsets partitions go to the instance left

        def coordinates(gateway: Gateway) -> bool:
            return gateway.groups is not None and gateway.groups.coordinates(group)

        await until(lambda: coordinates(owner) and owner.groups.loaded, 10)  # type: ignore[union-attr]
        on = await asyncio.to_thread(_beat, owner.kafka_port, group, "m1", joined.member_epoch)
        assert (on.error_code, on.member_epoch) == (0, joined.member_epoch)
        assert other.groups is not None and other.groups.share.get(group) is None
