"""A coordinator's state partition whose load fails is loaded again until it is,
whatever the failure: left unloaded, every group or transactional id of it would be
answered COORDINATOR_LOAD_IN_PROGRESS forever (clients retry that without end)."""

from __future__ import annotations

import asyncio

from kop.cluster.coordinated import CoordinatedPartitions
from kop.cluster.member import Member
from kop.cluster.ownership import Ownership, Solo
from kop.storage.types import StorageError
from tests.sim.clock import SimLoop


class FailingLoads:
    """Fails each partition's first loads: an unavailable storage, then a bug."""

    def __init__(self) -> None:
        self.failures: dict[int, list[Exception]] = {}

    async def load(self, partition: int) -> None:
        pending = self.failures.setdefault(
            partition, [StorageError("bookies away"), RuntimeError("a record it cannot read")]
        )
        if pending:
            raise pending.pop(0)

    async def unload(self, partition: int) -> None:
        return None


def test_a_partition_is_loaded_again_after_any_failure(loop: SimLoop) -> None:
    loads = FailingLoads()
    parts = CoordinatedPartitions(2, lambda p: f"state-partition-{p}", loads.load, loads.unload)
    me = Member(1, "localhost", 9092, "x")
    follower = loop.create_task(parts.follow(Ownership(Solo(me), me)))
    loop.settle(5.0)  # back-off 0.5 s, then 1 s
    assert parts.all_loaded and parts.loaded == {0, 1}
    follower.cancel()
    loop.run(asyncio.gather(follower, return_exceptions=True), within=5)
