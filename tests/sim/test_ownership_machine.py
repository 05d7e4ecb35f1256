"""Two would-be owners of one partition, driven by hypothesis over the in-memory
storage (issue 21's proof): each instance's view of who owns the partition moves
on its own (so both may believe they own it at once), writes are held back by the
storage and land late, instances crash and come back. The real log code on both.

Checked after every step:
- at most one instance had writes acknowledged under each epoch of the fence;
- every acknowledged record is at its acknowledged offset in the log, counted by
  docs/offsets.md's rule from the storage itself (offsets are a pure function of the log),
  and no offset was acknowledged twice.
"""

from __future__ import annotations

import itertools
import os

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from kop.log.settings import LogSettings
from kop.protocol.errors import KafkaError
from kop.protocol.records import iter_records
from kop.storage import batch_layout
from kop.storage.types import StoredEntry
from tests.sim.clock import SimLoop
from tests.sim.harness import TOPIC, Node, batch
from tests.sim.memory_log import MemoryLog

EXAMPLES = int(os.environ.get("KOP_SIM_EXAMPLES", "60"))
STEPS = int(os.environ.get("KOP_SIM_STEPS", "40"))
NAMES = ("a", "b")


class OwnershipMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = SimLoop()
        self.store = MemoryLog()
        self.settings = LogSettings(write_timeout_s=5, checkpoint_interval=3)
        self.views = {name: [0] for name in NAMES}
        self.nodes = {name: self._start(name) for name in NAMES}
        self.truth: list[bytes | None] = []
        self.store.topic(TOPIC).observers.append(self._appended)
        self.acked: dict[int, tuple[bytes, str]] = {}  # offset -> (value, instance)
        self.epochs: dict[int, set[str]] = {}  # fence epoch -> instances acknowledged under it
        self.unique = itertools.count()
        self.lives = itertools.count(1)

    def _start(self, name: str) -> Node:
        node = Node(self.loop, self.store.instance(), self.settings)
        node.start()
        assert node.manager is not None
        view = self.views[name]
        node.manager._view = lambda: view[0]
        return node

    def _appended(self, entry: StoredEntry) -> None:
        for m in batch_layout.messages(entry):
            if m.properties.get("__kafka.entry") == "batch":
                self.truth.extend(r.value for r in iter_records(m.payload))
            else:
                self.truth.append(None if m.null_value else m.payload)

    # -- what happens -----------------------------------------------------------------

    @rule(name=st.sampled_from(NAMES), count=st.integers(1, 3))
    def produce(self, name: str, count: int) -> None:
        node = self.nodes[name]
        values = [f"{name}{next(self.unique)}".encode() for _ in range(count)]
        got = node.produce(batch(values))
        if isinstance(got, KafkaError):
            event(f"produce refused: {got.code.name}")
            return
        event("produce acknowledged")
        writer = node.log.writers.get(TOPIC)
        assert writer is not None, "acknowledged without a writer"
        self.epochs.setdefault(writer.epoch, set()).add(f"{name}:{id(node)}")
        for i, value in enumerate(values):
            assert got + i not in self.acked, f"offset {got + i} acknowledged twice"
            self.acked[got + i] = (value, name)

    @rule(name=st.sampled_from(NAMES))
    def view_changes(self, name: str) -> None:
        """The instance hears of a change among the instances (a join, a leave)."""
        self.views[name][0] += 1

    @rule()
    def hold_next_write(self) -> None:
        self.store.topic(TOPIC).hold_next = True

    @rule()
    def store_what_was_held(self) -> None:
        """The broker persists a write late, after its client gave up on it."""

        async def release() -> None:
            self.store.topic(TOPIC).release_held()

        self.loop.run(release(), within=1)

    @rule(name=st.sampled_from(NAMES))
    def crash_and_restart(self, name: str) -> None:
        self.nodes[name].crash()
        self.nodes[name] = self._start(name)

    @rule(seconds=st.sampled_from([0.01, 1.0, 6.0]))
    def time_passes(self, seconds: float) -> None:
        self.loop.settle(seconds)

    # -- what must hold ------------------------------------------------------------------

    @invariant()
    def one_instance_per_epoch(self) -> None:
        for epoch, who in self.epochs.items():
            assert len(who) == 1, f"epoch {epoch}: writes acknowledged to {sorted(who)}"

    @invariant()
    def acknowledged_records_are_where_the_log_puts_them(self) -> None:
        for offset, (value, _name) in self.acked.items():
            assert offset < len(self.truth), f"offset {offset} acknowledged, not in the log"
            assert self.truth[offset] == value, f"offset {offset}: {self.truth[offset]!r}"

    def teardown(self) -> None:
        self.loop.shutdown()


def test_two_would_be_owners_never_share_an_epoch_nor_move_an_offset() -> None:
    run_state_machine_as_test(
        OwnershipMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
