"""Issue 19, finding 6: offset-index writes that fail, time out after being stored,
or are stored late and out of order, and kop crashing in between.

The rule proven here: whatever subset of its index writes Pulsar ends up holding,
in whatever order, a restarted kop opens the partition and gives every record the
offset docs/offsets.md's model says (its count of preceding records). A lost or late
checkpoint costs re-reading from the previous one, never a wrong offset; and a
dead index topic never holds up a clean stop beyond the write timeout.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from kop.entries.formats import EntryFormat
from kop.log.checkpoint_store import CheckpointStore, Persisted
from kop.log.receipts import QUIET_S
from kop.log.settings import LogSettings
from kop.protocol.errors import KafkaError
from kop.protocol.records import iter_records
from kop.storage import batch_layout
from kop.storage.types import OutgoingEntry, OutgoingMessage, StoredEntry
from tests.sim.clock import SimLoop
from tests.sim.harness import INDEX_TOPIC, TOPIC, Node, batch
from tests.sim.memory_log import SEND_TIMEOUT_S, MemoryLog, MemoryTopic

EXAMPLES = int(os.environ.get("KOP_SIM_EXAMPLES", "100"))
STEPS = int(os.environ.get("KOP_SIM_STEPS", "50"))
TALLY_FILE = os.environ.get("KOP_SIM_COUNT_FILE")  # one JSON line of counts per example
FLUSH_S = 1.0
SETTINGS = LogSettings(
    checkpoint_interval=2,  # many checkpoints ...
    max_checkpoints=4,  # ... thinned often: tombstones in the index writes too
    tail_buffer_bytes=300,  # small: fetches go through history reads from checkpoints
    write_timeout_s=5,
    retention_check_s=20,
)


def _shard(log: MemoryLog) -> MemoryTopic:
    return log.topic(CheckpointStore(log, INDEX_TOPIC).shard_topic(TOPIC))


def _persisted(loop: SimLoop, log: MemoryLog) -> Persisted:
    """What a kop starting now would load for the partition (the compacted view)."""
    return loop.run(CheckpointStore(log, INDEX_TOPIC).load(TOPIC), within=SEND_TIMEOUT_S)


class Truth:
    """Every record the partition holds or held, at its offset by the rule of docs/offsets.md
    (counted as Pulsar appends; trimmed records keep their offsets)."""

    def __init__(self, topic: MemoryTopic) -> None:
        self.topic = topic
        self.values: list[bytes | None] = []
        self.offset_of: dict[tuple[int, int], int] = {}  # entry -> its base offset
        self.count_of: dict[tuple[int, int], int] = {}  # entry -> records it holds
        topic.observers.append(self._appended)

    def _appended(self, entry: StoredEntry) -> None:
        before = len(self.values)
        self.offset_of[entry.position.entry_key] = before
        for m in batch_layout.messages(entry):
            if m.properties.get("__kafka.entry") == "batch":
                self.values.extend(r.value for r in iter_records(m.payload))
            else:
                self.values.append(None if m.null_value else m.payload)
        self.count_of[entry.position.entry_key] = len(self.values) - before

    @property
    def start(self) -> int:
        entries = self.topic.entries()
        return self.offset_of[entries[0].position.entry_key] if entries else len(self.values)

    def check_index(self, persisted: Persisted) -> None:
        """Every checkpoint and the mark Pulsar holds state true facts about the log."""
        for c in persisted.checkpoints.values():
            key = c.position.entry_key
            assert key in self.offset_of, f"checkpoint {c} names an entry never stored"
            assert self.offset_of[key] == c.offset, (c, self.offset_of[key])
        mark = persisted.mark
        if mark is not None:
            key = mark.position.entry_key
            assert key in self.offset_of, f"mark {mark} names an entry never stored"
            assert self.offset_of[key] + self.count_of[key] == mark.next_offset, mark


class IndexMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = SimLoop()
        self.log = MemoryLog()
        self.truth = Truth(self.log.topic(TOPIC))
        self.shard = _shard(self.log)
        self.node: Node | None = None
        self.unique = itertools.count()
        self.max_hw = 0
        self.tally: Counter[str] = Counter()

    @initialize()
    def boot(self) -> None:
        self._start()

    def _start(self) -> None:
        self.node = Node(self.loop, self.log, SETTINGS)
        self.node.start()
        plog = self.node.partition()  # never fails to open: this raises if it does
        # Opening checks where the data begins: no record is hidden below the index.
        assert plog.log_start == self.truth.start, (plog.log_start, self.truth.start)

    def teardown(self) -> None:
        if TALLY_FILE:
            self._count_failures()
            with open(TALLY_FILE, "a") as f:
                f.write(json.dumps(self.tally) + "\n")
        self.loop.shutdown()

    def _count_failures(self) -> None:
        if TALLY_FILE and self.node is not None and self.node.manager is not None:
            self.tally["index write failures"] += self.node.manager.stats.index_write_failures
            self.node.manager.stats.index_write_failures = 0

    # -- the partition grows ---------------------------------------------------------

    @precondition(lambda self: self.node is not None)
    @rule(n=st.integers(1, 4), fmt=st.sampled_from(list(EntryFormat)), batched=st.booleans())
    def produce(self, n: int, fmt: EntryFormat, batched: bool) -> None:
        assert self.node is not None
        values: list[bytes | None] = [f"v{next(self.unique)}".encode() for _ in range(n)]
        result = self.node.produce(batch(values), fmt, batching=batched)
        assert not isinstance(result, KafkaError), result  # the data topic has no faults
        assert self.truth.values[result : result + n] == values

    @rule(n=st.integers(1, 3), batched=st.booleans())
    def native_write(self, n: int, batched: bool) -> None:
        topic = self.truth.topic
        messages = [
            OutgoingMessage(f"n{next(self.unique)}".encode(), {}, None, None) for _ in range(n)
        ]

        async def write() -> None:
            entries = [batch_layout.entry(messages)] if batched else map(OutgoingEntry.of, messages)
            topic.append(list(entries), "pulsar-app", 0)

        self.loop.run(write(), within=1)

    @rule()
    def roll_ledger(self) -> None:
        self.truth.topic.roll()

    @precondition(lambda self: not self.shard.held)
    @rule(ledgers=st.integers(1, 2))
    def trim(self, ledgers: int) -> None:
        """Pulsar's retention: only ledgers below the mark Pulsar holds (the
        guarantee that offsets never go back is relative to it, docs/offsets.md),
        and not while an older mark may still land (held)."""
        mark = _persisted(self.loop, self.log).mark
        persisted = mark.next_offset if mark is not None else 0
        topic = self.truth.topic
        n = 0
        for i, ledger in enumerate(topic.ledgers[:-1][:ledgers]):
            later = [e for lg in topic.ledgers[i + 1 :] for e in lg.entries]
            end = self.truth.offset_of[later[0].position.entry_key] if later else 1 << 62
            if ledger.entries and end > persisted:
                break
            n += 1
        trimmed = topic.trim(n)
        self.tally["ledgers trimmed"] += trimmed
        event(f"trim: {trimmed} ledgers")

    # -- the index topic misbehaves -----------------------------------------------------

    @rule(
        kind=st.sampled_from(["fail", "receipt", "hold"]),
        then=st.sampled_from(["nothing", "flush", "flush", "stop", "crash"]),
        after=st.floats(0, 1.1 * FLUSH_S),
    )
    def index_fault(self, kind: str, then: str, after: float) -> None:
        """The next index write fails with nothing stored, is stored but its receipt
        never comes, or is stored later (after later writes) while kop sees it time
        out; then, often, what meets it: a flush, a clean stop, or a crash `after`
        seconds (between a flush's send and its receipt, say)."""
        self.tally[f"index fault {kind}"] += 1
        if kind == "fail":
            self.shard.persist_next = 0
        elif kind == "receipt":
            self.shard.lose_next_receipt = True
        else:
            self.shard.hold_next = True
        if self.node is None or then == "nothing":
            return
        if then == "flush":
            self.loop.settle(FLUSH_S + 0.01)
        elif then == "stop":
            self.stop_and_restart()
        else:
            self.crash(after)

    @rule(newest_first=st.booleans())
    def release_held(self, newest_first: bool) -> None:
        async def release() -> int:
            return self.shard.release_held(newest_first)

        released = self.loop.run(release(), within=1)
        self.tally["held index writes stored late"] += released
        event(f"released {released} held index writes")

    @rule(seconds=st.sampled_from([0.001, 0.5, 1.0, 2.0, SEND_TIMEOUT_S + 5]))
    def settle(self, seconds: float) -> None:
        self.loop.settle(seconds)
        if self.node is not None and seconds > SETTINGS.retention_check_s:
            assert self.node.partition().log_start == self.truth.start

    # -- kop stops, crashes and starts ----------------------------------------------------

    @precondition(lambda self: self.node is not None)
    @rule(after=st.floats(0, 2 * FLUSH_S))
    def crash(self, after: float) -> None:
        """kill -9 at any moment, also between a flush's send and its receipt."""
        assert self.node is not None
        self.loop.settle(after)
        self._count_failures()
        self.tally["crashes"] += 1
        self.node.crash()
        self.node = None

    @precondition(lambda self: self.node is not None)
    @rule()
    def stop_and_restart(self) -> None:
        assert self.node is not None
        started = self.loop.time()
        self._count_failures()
        self.tally["clean stops"] += 1
        manager = self.node.manager
        self.node.stop()
        if TALLY_FILE and manager is not None:  # what the stop's own flush met
            self.tally["index write failures"] += manager.stats.index_write_failures
        # A clean stop flushes, but a dead index topic never holds it up for long.
        assert self.loop.time() - started <= SETTINGS.write_timeout_s + 1
        self._start()

    @precondition(lambda self: self.node is None)
    @rule()
    def restart(self) -> None:
        self._start()

    # -- the model ---------------------------------------------------------------------------

    @invariant()
    def every_record_at_its_offset(self) -> None:
        self.tally["steps"] += 1
        self.truth.check_index(_persisted(self.loop, self.log))
        if self.node is None:
            return
        self.loop.settle(QUIET_S * 2)
        plog = self.node.partition()
        hw = plog.high_watermark
        assert hw == len(self.truth.values), (hw, len(self.truth.values))
        assert hw >= self.max_hw
        self.max_hw = hw
        # Until its next retention check kop may still serve records Pulsar just
        # deleted (the right ones, at their offsets), or refuse them: both are fine.
        assert plog.log_start <= self.truth.start, (plog.log_start, self.truth.start)
        start = self.truth.start
        got = self.node.fetch(start)
        assert not isinstance(got, KafkaError), got
        assert got == list(enumerate(self.truth.values))[start:], (start, got)


def _machine() -> IndexMachine:
    return IndexMachine()


def test_every_record_keeps_its_offset_whatever_the_index_topic_does() -> None:
    run_state_machine_as_test(
        _machine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
