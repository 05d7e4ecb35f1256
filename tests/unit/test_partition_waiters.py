"""Long-poll bookkeeping: fetches that give up on an idle partition leave nothing behind."""

from __future__ import annotations

import asyncio

from kop.log.checkpoint_store import CheckpointStore
from kop.log.partition_log import PartitionLog
from kop.log.settings import LogSettings


class _NoPulsar:
    """The waiter bookkeeping needs no Pulsar; any call to it is a test failure."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"unexpected Pulsar call {name}")


async def test_abandoned_fetch_waiters_are_pruned() -> None:
    store = CheckpointStore(_NoPulsar(), "persistent://t/n/index")  # type: ignore[arg-type]
    plog = PartitionLog(_NoPulsar(), store, "persistent://t/n/x-partition-0", LogSettings())  # type: ignore[arg-type]
    for _ in range(10_000):
        plog.data_changed().cancel()
    live = plog.data_changed()
    assert len(plog.follower.wakeups.waiting) <= 65
    assert live in plog.follower.wakeups.waiting and not live.done()
    await asyncio.sleep(0)
