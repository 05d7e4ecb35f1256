"""Every group's committed offsets as another instance reads them
(kop.groups.committed_view), over the in-memory storage on simulated time: commits
and deletions by the coordinator, readers of the viewing instance that fail and are
opened again, compaction of the offsets topic. Once the tail has caught up, the view
equals what the coordinator stored, and the changes told to the mirror, applied in
order to the state at start, give the same."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from kop.groups.committed_view import CommittedView
from kop.groups.offsets_store import OffsetsStore
from kop.groups.types import CommittedOffset, TopicPartition
from tests.sim.clock import SimLoop
from tests.sim.memory_compaction import compact
from tests.sim.memory_log import MemoryLog

TOPIC = "persistent://public/__kop/consumer-offsets"
GROUPS = ["g0", "g1", "g2"]
TPS = [TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)]

State = dict[tuple[str, TopicPartition], int]


class Told:
    """The mirror's side: changes applied as they are told."""

    def __init__(self) -> None:
        self.state: State = {}
        self.calls = 0

    def committed(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        self.calls += 1
        for tp, offset in offsets.items():
            self.state[(group, tp)] = offset

    def forgotten(self, group: str, tps: list[TopicPartition]) -> None:
        self.calls += 1
        for tp in tps:
            assert (group, tp) in self.state, "told to forget what it was never told"
            del self.state[(group, tp)]


def _flat(view: CommittedView) -> State:
    return {(g, tp): o.offset for g, offsets in view.items() for tp, o in offsets.items()}


class CommittedViewMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = SimLoop()
        self.log = MemoryLog()
        self.store = OffsetsStore(self.log, TOPIC, 2)
        for p in range(2):
            self.loop.run(self.store.load(p), within=5)
        self.stored: State = {}
        self.viewer = self.log.instance()
        self.view: CommittedView | None = None
        self.told = Told()
        self.task: asyncio.Task[None] | None = None

    def teardown(self) -> None:
        if self.task is not None:
            self.task.cancel()
        self.loop.shutdown()

    @precondition(lambda self: self.view is None)
    @rule()
    def start_view(self) -> None:
        topics = [self.store.partition_topic(p) for p in range(2)]
        self.view = CommittedView(self.viewer, topics, retry_s=0.5)
        self.task = self.loop.create_task(self.view.run())
        self.loop.run(asyncio.sleep(0.1), within=1)
        assert self.view.loaded
        self.told.state = _flat(self.view)  # the state at start is not told
        self.view.sink = self.told

    @rule(group=st.sampled_from(GROUPS), tp=st.sampled_from(TPS), offset=st.integers(0, 3))
    def commit(self, group: str, tp: TopicPartition, offset: int) -> None:
        self.loop.run(self.store.commit(group, {tp: CommittedOffset(offset)}), within=5)
        self.stored[(group, tp)] = offset

    @rule(group=st.sampled_from(GROUPS), tp=st.sampled_from(TPS))
    def delete(self, group: str, tp: TopicPartition) -> None:
        if (group, tp) in self.stored:
            self.loop.run(self.store.delete_offsets(group, [tp]), within=5)
            del self.stored[(group, tp)]

    @rule(group=st.sampled_from(GROUPS))
    def delete_group(self, group: str) -> None:
        tps = [tp for g, tp in self.stored if g == group]
        self.loop.run(self.store.delete_group(group, tps), within=5)
        for tp in tps:
            del self.stored[(group, tp)]

    @rule(partition=st.integers(0, 1))
    def compaction_runs(self, partition: int) -> None:
        compact(self.log.topic(self.store.partition_topic(partition)))

    @rule(partition=st.integers(0, 1))
    def viewers_reader_fails(self, partition: int) -> None:
        """A reader ends in an error (a topic unloaded for good, a broken connection
        given up on); what is stored meanwhile is read on the next pass."""
        for reader in list(self.log.topic(self.store.partition_topic(partition)).readers):
            if reader._view is self.viewer:
                self.loop.run(reader.close(), within=1)

    @rule()
    def time_passes(self) -> None:
        self.loop.run(asyncio.sleep(1.0), within=2)
        if self.view is not None:
            assert _flat(self.view) == self.stored
            assert self.told.state == self.stored


CommittedViewMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
TestCommittedView = CommittedViewMachine.TestCase
