"""The leader epochs table (kop.cluster.epochs) shared by instances through one
compacted topic, over the in-memory storage on simulated time: every take of a
partition, by whichever instance, gets an epoch above every earlier take; every
instance, and one that starts later, comes to name the latest; what another
program wrote to the topic is skipped."""

from __future__ import annotations

import asyncio
import uuid

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kop.cluster.epochs import LeaderEpochs
from kop.cluster.member import Member
from kop.storage.types import OutgoingEntry, OutgoingMessage
from tests.sim.clock import SimLoop
from tests.sim.memory_compaction import compact
from tests.sim.memory_log import MemoryLog

TOPIC = "persistent://public/__kop/kop-leader-epochs"
PARTITIONS = ["t-partition-0", "t-partition-1", "u-partition-0"]


def _start(loop: SimLoop, storage: MemoryLog, node: int) -> LeaderEpochs:
    epochs = LeaderEpochs(storage, TOPIC, Member(node, f"kop-{node}", 9092, uuid.uuid4().hex))
    loop.run(epochs.start(), within=5)
    return epochs


def _as_led_by(epochs: LeaderEpochs, partition: str, leader: LeaderEpochs) -> int:
    """The epoch `epochs` names for `partition` led by the instance of `leader`."""
    return epochs.of(partition, leader._me.instance)


def _settle(loop: SimLoop) -> None:
    loop.run(asyncio.sleep(0.1), within=1)


def test_a_partition_never_taken_is_at_epoch_0_and_its_first_take_is_0(loop: SimLoop) -> None:
    a = _start(loop, MemoryLog(), 0)
    assert _as_led_by(a, "t-partition-0", a) == 0
    assert loop.run(a.take("t-partition-0"), within=5) == 0
    assert loop.run(a.take("t-partition-0"), within=5) == 1


def test_an_instance_taking_over_gets_the_next_epoch_and_the_old_owner_hears_it(
    loop: SimLoop,
) -> None:
    store = MemoryLog()
    a = _start(loop, store, 0)
    b = _start(loop, store.instance(), 1)
    assert loop.run(a.take("t-partition-0"), within=5) == 0
    _settle(loop)
    # Before b takes it, every instance names the epoch b will lead it in.
    assert [_as_led_by(x, "t-partition-0", b) for x in (a, b)] == [1, 1]
    assert loop.run(b.take("t-partition-0"), within=5) == 1  # it reads to the end first
    _settle(loop)
    assert [_as_led_by(x, "t-partition-0", b) for x in (a, b)] == [1, 1]
    later = _start(loop, store.instance(), 2)
    assert _as_led_by(later, "t-partition-0", b) == 1
    assert _as_led_by(later, "t-partition-0", later) == 2  # a restart takes the next


def test_an_instance_that_hears_late_still_takes_above_the_last_take(loop: SimLoop) -> None:
    store = MemoryLog()
    a = _start(loop, store, 0)
    slow = store.instance()
    b = _start(loop, slow, 1)
    slow.read_lag_s = 1.0  # a slow connection to the broker: b hears a's takes late
    assert loop.run(a.take("t-partition-0"), within=5) == 0
    assert loop.run(a.take("t-partition-0"), within=5) == 1
    assert _as_led_by(b, "t-partition-0", b) == 0  # not heard yet
    assert loop.run(b.take("t-partition-0"), within=10) == 2


def test_a_deleted_topics_partitions_start_afresh_everywhere(loop: SimLoop) -> None:
    """As in Kafka: a topic made again under a deleted one's name leads from epoch 0."""
    store = MemoryLog()
    a = _start(loop, store, 0)
    b = _start(loop, store.instance(), 1)
    for _ in range(3):
        loop.run(a.take("t-partition-0"), within=5)
    loop.run(a.take("t-partition-1"), within=5)
    loop.run(a.forget(["t-partition-0", "t-partition-1", "t-partition-2"]), within=5)
    _settle(loop)
    names = [_as_led_by(x, p, b) for x in (a, b) for p in ("t-partition-0", "t-partition-1")]
    assert names == [0, 0, 0, 0]
    later = _start(loop, store.instance(), 2)
    assert _as_led_by(later, "t-partition-0", later) == 0
    assert loop.run(b.take("t-partition-0"), within=5) == 0


def test_a_compacted_away_tombstone_at_the_end_does_not_stall_a_take(loop: SimLoop) -> None:
    """Pulsar's compaction drops a tombstone, and a compacted reader never delivers
    the topic's last entry: reading "to the last message id" would wait for good."""
    store = MemoryLog()
    a = _start(loop, store, 0)
    loop.run(a.take("t-partition-0"), within=5)
    loop.run(a.forget(["t-partition-0"]), within=5)
    compact(store.topic(TOPIC))  # its horizon is the tombstone, the topic's last entry
    b = _start(loop, store.instance(), 1)
    assert loop.run(b.take("t-partition-0"), within=5) == 0
    assert loop.run(b.take("u-partition-0"), within=5) == 0


def test_what_another_program_wrote_is_skipped(loop: SimLoop) -> None:
    store = MemoryLog()

    async def write_foreign() -> None:
        writer = await store.writer(TOPIC)
        for body in (b"not json", b'{"epoch": "x"}', b'{"epoch": -4}', b'{"epoch": 5}'):
            message = OutgoingMessage(body, {}, "t-partition-0", None)
            await writer.send_all([OutgoingEntry.of(message)])[1]

    loop.run(write_foreign(), within=5)
    a = _start(loop, store.instance(), 0)
    assert a.malformed == 3
    assert loop.run(a.take("t-partition-0"), within=5) == 6


class EpochsMachine(RuleBasedStateMachine):
    """Instances start, take partitions, and read on; a model holds each partition's
    highest epoch taken."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = SimLoop()
        self.store = MemoryLog()
        self.views = [self.store.instance()]
        self.instances = [_start(self.loop, self.views[0], 0)]
        self.highest: dict[str, tuple[int, LeaderEpochs]] = {}  # epoch, and who took it

    def teardown(self) -> None:
        for epochs in self.instances:
            self.loop.run(epochs.close(), within=5)
        self.loop.shutdown()

    @rule()
    def start_another(self) -> None:
        if len(self.instances) < 4:
            node = len(self.instances)
            self.views.append(self.store.instance())
            self.instances.append(_start(self.loop, self.views[-1], node))

    @rule(who=st.integers(0, 3), partition=st.sampled_from(PARTITIONS))
    def take(self, who: int, partition: str) -> None:
        epochs = self.instances[who % len(self.instances)]
        got = self.loop.run(epochs.take(partition), within=5)
        last = self.highest.get(partition)
        assert got == (0 if last is None else last[0] + 1)
        self.highest[partition] = (got, epochs)

    @rule(who=st.integers(0, 3), lag=st.sampled_from([0.0, 0.05, 0.2]))
    def readers_lag(self, who: int, lag: float) -> None:
        """A slow broker connection: this instance hears others' takes late, and must
        still read to the end before it takes."""
        view = self.views[who % len(self.views)]
        view.read_lag_s = lag

    @rule(seconds=st.sampled_from([0.0, 0.01, 0.5]))
    def time_passes(self, seconds: float) -> None:
        self.loop.run(asyncio.sleep(seconds), within=seconds + 1)

    @invariant()
    def no_instance_names_an_epoch_above_the_last_taken(self) -> None:
        for epochs in self.instances:
            for partition, (epoch, taker) in self.highest.items():
                assert _as_led_by(epochs, partition, taker) <= epoch

    def check_all_agree_once_settled(self) -> None:
        """Every instance names the last take for its taker, the next for any other."""
        self.loop.run(asyncio.sleep(0.2 * 30), within=10)  # the slowest lag, every entry
        for epochs in self.instances:
            for partition in PARTITIONS:
                if partition not in self.highest:
                    assert _as_led_by(epochs, partition, epochs) == 0
                    continue
                epoch, taker = self.highest[partition]
                for leader in self.instances:
                    want = epoch if leader is taker else epoch + 1
                    assert _as_led_by(epochs, partition, leader) == want

    @rule()
    def settle(self) -> None:
        self.check_all_agree_once_settled()


TestEpochsMachine = EpochsMachine.TestCase
TestEpochsMachine.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
