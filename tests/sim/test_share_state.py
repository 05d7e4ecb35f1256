"""A share group's state on a partition as DescribeShareGroupOffsets, AlterShareGroupOffsets
and DeleteShareGroupOffsets see it (kop/groups/share/state.py), over the in-memory log and
its Shared subscription: the start offset is the first record after the cursor's
mark-delete position, the lag leaves out what members finished beyond it, a reset moves
the subscription (kop's consumer of it closed first) and a delete removes it."""

from __future__ import annotations

import asyncio

from kop.entries.formats import EntryFormat
from kop.groups.share.coordinator import ShareSettings
from kop.groups.share.partition import SharePartition
from kop.groups.share.partitions import SharePartitions
from kop.groups.share.records import AckBatch, AckType
from kop.groups.share.state import ABSENT, ShareStates, StartOffset
from kop.log.partition_log import LogSettings, PartitionLog
from tests.sim.clock import SimLoop
from tests.sim.harness import Node, batch
from tests.sim.memory_admin import MemoryAdmin
from tests.sim.memory_log import MemoryLog

GROUP = "g"


class _World:
    """Five single-record entries (offsets 0-4), then one Kafka batch of three (5-7)."""

    def __init__(self, loop: SimLoop, max_scan_bytes: int = 64 << 20) -> None:
        self.loop = loop
        self.log = MemoryLog()
        self.node = Node(loop, self.log, LogSettings())
        self.node.start()
        for i in range(5):
            self.node.produce(batch([f"r{i}".encode()]), EntryFormat.PULSAR)
        self.node.produce(batch([b"k5", b"k6", b"k7"]), EntryFormat.KAFKA)
        self.plog: PartitionLog = self.node.partition()
        settings = ShareSettings(auto_offset_reset_earliest=True)
        self.shares = SharePartitions(
            self.log, settings, lambda: int(loop.time() * 1000), lambda _t: self.plog
        )
        self.states = ShareStates(MemoryAdmin(self.log), self.shares, max_scan_bytes)

    def share(self) -> SharePartition:
        return self.loop.run(self.shares.of(GROUP, GROUP, self.plog, ("t", 0)), within=10)

    def finish(self, sp: SharePartition, offsets: list[int]) -> None:
        """A member acquires records until it holds `offsets`, and accepts those."""

        async def go() -> None:
            held: set[int] = set()
            for _ in range(200):
                got, _data = sp.acquire("m", 100, 1 << 20)
                held |= {o for a in got for o in range(a.first, a.last + 1)}
                if set(offsets) <= held:
                    break
                await asyncio.sleep(0.01)
            batches = [AckBatch(o, o, (AckType.ACCEPT,)) for o in offsets]
            await sp.acknowledge("m", batches)
            rest = sorted(held - set(offsets))
            await sp.acknowledge("m", [AckBatch(o, o, (AckType.RELEASE,)) for o in rest])

        self.loop.run(go(), within=30)

    def describe(self) -> StartOffset:
        return self.loop.run(self.states.describe(GROUP, self.plog), within=10)


def test_no_subscription_is_no_state(loop: SimLoop) -> None:
    w = _World(loop)
    assert w.describe() == ABSENT


def test_the_start_offset_follows_the_mark_delete_and_the_lag_leaves_out_what_is_finished(
    loop: SimLoop,
) -> None:
    w = _World(loop)
    sp = w.share()
    assert w.describe() == StartOffset(0, w.plog.leader_epoch, 8)
    w.finish(sp, [2, 3])  # beyond the start: finished, the start stays
    assert w.describe() == StartOffset(0, w.plog.leader_epoch, 6)
    w.finish(sp, [0])
    assert w.describe().start_offset == 1
    assert w.describe().lag == 5
    w.finish(sp, [1])  # 0-3 finished: the start moves past them
    assert w.describe() == StartOffset(4, w.plog.leader_epoch, 4)
    loop.run(w.shares.close(), within=10)


def test_a_lag_too_far_to_count_is_unknown(loop: SimLoop) -> None:
    w = _World(loop, max_scan_bytes=1)
    sp = w.share()
    w.finish(sp, [3])
    assert w.describe().start_offset == 0
    assert w.describe().lag == -1
    loop.run(w.shares.close(), within=10)


def test_a_reset_moves_the_subscription_and_closes_kops_consumer_of_it(loop: SimLoop) -> None:
    w = _World(loop)
    before = w.share()
    loop.run(w.states.alter(GROUP, GROUP, w.plog, 6), within=10)
    assert w.shares.opened(GROUP, w.plog.topic) is None
    # Mid-batch: the whole Kafka batch is delivered again, so the start is its base.
    assert w.describe() == StartOffset(5, w.plog.leader_epoch, 3)
    after = w.share()
    assert after is not before
    w.finish(after, [5, 6, 7])
    assert w.describe() == StartOffset(8, w.plog.leader_epoch, 0)
    loop.run(w.states.alter(GROUP, GROUP, w.plog, -7), within=10)  # below the log: its start
    assert w.describe().start_offset == 0
    loop.run(w.states.alter(GROUP, GROUP, w.plog, 99), within=10)  # past the end: the end
    assert w.describe() == StartOffset(8, w.plog.leader_epoch, 0)
    loop.run(w.shares.close(), within=10)


def test_a_delete_removes_the_state_once(loop: SimLoop) -> None:
    w = _World(loop)
    w.share()
    assert loop.run(w.states.delete(GROUP, GROUP, w.plog), within=10) is True
    assert w.shares.opened(GROUP, w.plog.topic) is None
    assert w.describe() == ABSENT
    assert loop.run(w.states.delete(GROUP, GROUP, w.plog), within=10) is False
