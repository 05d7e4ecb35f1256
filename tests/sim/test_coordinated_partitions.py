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


class Flip:
    """A view of two instances that, once flipped, holds only the other one."""

    def __init__(self, me: Member, other: Member) -> None:
        self.me, self.other = me, other
        self.version = 0
        self._flipped = asyncio.Event()

    def live(self) -> list[Member]:
        return [self.me, self.other] if self.version == 0 else [self.other]

    async def changed(self, version: int) -> int:
        if self.version == version == 0:
            await self._flipped.wait()
        elif self.version == version:
            await asyncio.get_running_loop().create_future()  # flips once only
        return self.version

    def flip(self) -> None:
        self.version = 1
        self._flipped.set()


class SlowLoads:
    """Loads that never end, and take a moment to give up once cancelled."""

    async def load(self, partition: int) -> None:
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            await asyncio.sleep(0.5)
            raise

    async def unload(self, partition: int) -> None:
        return None


def test_cancelling_the_follower_while_it_lets_a_loading_partition_go_stops_it(
    loop: SimLoop,
) -> None:
    """kop stopped right after start (its partitions still loading) did not stop: the
    stop left the cluster, the follower let every loading partition go, and the stop's
    cancel, arriving while it waited for one, was taken for that load's end."""
    loads = SlowLoads()
    me, other = Member(1, "localhost", 9092, "x"), Member(2, "localhost", 9093, "y")
    view = Flip(me, other)
    parts = CoordinatedPartitions(8, lambda p: f"state-partition-{p}", loads.load, loads.unload)
    follower = loop.create_task(parts.follow(Ownership(view, me)))
    loop.settle(0.1)
    assert parts._loading  # some are this instance's, and loading
    view.flip()  # this instance leaves: every loading partition is let go
    loop.settle(0.1)  # the follower waits for the first load to give up
    follower.cancel()
    loop.run(asyncio.wait([follower]), within=10)
    assert follower.cancelled()
