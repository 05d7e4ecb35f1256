"""Deterministic simulation of compacted topics (issue 20).

A hypothesis state machine drives the real log code (tail follower, appender,
history and compacted reads, retention, the compaction cycle, the checkpoint
store) over the in-memory log, whose compaction does what Pulsar's does
(tests/sim/memory_compaction.py): keyed produces and tombstones, compaction
cycles (some failing), ledger rolls, retention trims (only what Pulsar would
delete: below every durable cursor, kop's pin included), clean restarts and
crashes. After every fetch it checks the served records against a model of
Kafka's compacted log:

- offsets never change: a record served at offset o is the one written at o;
- offsets only grow within a fetch, and a consumer that always continues after
  the batch it got (as Kafka clients do) reaches the high watermark;
- at or above the live ledgers' start every record is served (the uncleaned head);
- below it, every key's latest record is served whenever it lies at or above the
  fetch offset (however old it is), and a record is served only if no later
  record of its key lies below the live start (Kafka's cleaner would have
  removed it); a tombstone's key is absent there (Pulsar removes tombstones
  when it compacts; docs/decisions.md D10 on the delay).
"""

from __future__ import annotations

import contextlib
import itertools
import os

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
from kop.log.partition_log import PartitionLog
from kop.log.settings import LogSettings
from kop.protocol.errors import KafkaError
from kop.protocol.records import Record, build_batch, iter_records, read_header, split_batches
from kop.storage import batch_layout
from kop.storage.types import StorageError, StoredEntry
from tests.sim.clock import SimLoop
from tests.sim.harness import TOPIC, TS, Node
from tests.sim.memory_compaction import MemoryCompaction
from tests.sim.memory_log import MemoryLog

EXAMPLES = int(os.environ.get("KOP_SIM_EXAMPLES", "100"))
STEPS = int(os.environ.get("KOP_SIM_STEPS", "50"))
KEYS = [b"a", b"b", b"c", b"d", b"e"]
FLUSH_S = 1.0


class CompactionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = SimLoop()
        self.log = MemoryLog()
        self.port = MemoryCompaction(self.log)
        self.settings = LogSettings(
            checkpoint_interval=3,
            tail_buffer_bytes=300,  # small: most fetches go through history reads
            write_timeout_s=5,
            retention_check_s=20,
            history_readers=3,
            max_entry_bytes=60,  # a batch of several records takes several entries
            compaction_interval_s=15,
        )
        self.node: Node | None = None
        # The truth: every record ever written, by offset, as (key, value).
        self.truth: list[tuple[bytes, bytes | None]] = []
        self.offset_of: dict[tuple[int, int], int] = {}
        self.unique = itertools.count()
        self.flushed_through = 0

    # -- the truth -----------------------------------------------------------------

    def _appended(self, entry: StoredEntry) -> None:
        self.offset_of[entry.position.entry_key] = len(self.truth)
        for m in batch_layout.messages(entry):
            value = None if m.null_value else m.payload
            self.truth.append((m.partition_key.encode(), value))

    def _live_start(self) -> int:
        first = self.log.topic(TOPIC).entries()
        return self.offset_of[first[0].position.entry_key] if first else len(self.truth)

    def _trimmable(self, ledgers: int) -> int:
        """How many of the oldest closed ledgers hold only flushed records."""
        topic = self.log.topic(TOPIC)
        n = 0
        for i, ledger in enumerate(topic.ledgers[:-1][:ledgers]):
            later = [e for lg in topic.ledgers[i + 1 :] for e in lg.entries]
            end = self.offset_of[later[0].position.entry_key] if later else len(self.truth)
            if end > self.flushed_through and ledger.entries:
                break
            n += 1
        return n

    def _plog(self) -> PartitionLog:
        assert self.node is not None
        return self.node.partition()

    # -- lifecycle -----------------------------------------------------------------

    @initialize()
    def boot(self) -> None:
        self.log.topic(TOPIC).observers.append(self._appended)
        self._start()

    def _start(self) -> None:
        self.node = Node(self.loop, self.log, self.settings, self.port, compacted=True)
        self.node.start()
        self.node.partition()

    def teardown(self) -> None:
        self.loop.shutdown()

    @rule(seconds=st.sampled_from([0.01, 0.5, 2.0, 25.0]))
    def settle(self, seconds: float) -> None:
        self.loop.settle(seconds)
        if self.node is not None and seconds > FLUSH_S:
            self.flushed_through = self._plog().high_watermark

    @precondition(lambda self: self.node is not None)
    @rule()
    def stop_and_restart(self) -> None:
        assert self.node is not None
        self.flushed_through = self._plog().high_watermark
        self.node.stop()
        self._start()

    @precondition(lambda self: self.node is not None)
    @rule()
    def crash_and_restart(self) -> None:
        assert self.node is not None
        self.node.crash()
        self._start()

    # -- Pulsar doing things -----------------------------------------------------------

    @rule()
    def roll_ledger(self) -> None:
        self.log.topic(TOPIC).roll()

    @rule(ledgers=st.integers(1, 3))
    def trim(self, ledgers: int) -> None:
        self.log.topic(TOPIC).trim(self._trimmable(ledgers))

    @precondition(lambda self: self.node is not None)
    @rule()
    def time_passes(self) -> None:
        """Long enough for a flush, a compaction cycle and Pulsar's retention check,
        with the current ledger rolled first (as a ledger rollover does)."""
        self.log.topic(TOPIC).roll()
        self.loop.settle(self.settings.compaction_interval_s + 2 * FLUSH_S)
        self.flushed_through = self._plog().high_watermark
        self.trim(10)
        self.loop.settle(self.settings.retention_check_s)
        self._read_and_check(self._plog().log_start, 1 << 20)

    @rule()
    def compaction_fails_next(self) -> None:
        self.port.fail_next.add(TOPIC)

    # -- clients ---------------------------------------------------------------------

    @rule(writes=st.lists(st.tuples(st.sampled_from(KEYS), st.booleans()), min_size=1, max_size=5))
    def produce(self, writes: list[tuple[bytes, bool]]) -> None:
        records = [
            Record(i, TS + i, key, None if tombstone else f"v{next(self.unique)}".encode())
            for i, (key, tombstone) in enumerate(writes)
        ]
        plog = self._plog()

        async def go() -> int | KafkaError:
            try:
                batches = split_batches(build_batch(records), max_batch_bytes=1 << 20)
                return await (await plog.begin_append(batches, EntryFormat.PULSAR))
            except KafkaError as exc:
                return exc

        got = self.loop.run(go(), within=self.settings.write_timeout_s + 10)
        if not isinstance(got, KafkaError):
            for i, (key, _t) in enumerate(writes):
                assert self.truth[got + i][0] == key

    @precondition(lambda self: self.node is not None)
    @rule()
    def compact(self) -> None:
        plog = self._plog()
        assert plog.compacted is not None

        async def go() -> None:
            # An injected failure: the next cycle repeats the work.
            with contextlib.suppress(StorageError):
                await plog.compacted.compactor.cycle()  # type: ignore[union-attr]

        self.loop.run(go(), within=120)

    @rule(data=st.data())
    def fetch(self, data: st.DataObject) -> None:
        plog = self._plog()
        hw = plog.high_watermark
        start = plog.log_start
        offset = data.draw(st.integers(start, hw), label="offset")
        max_bytes = data.draw(st.sampled_from([1, 100, 1 << 20]), label="max_bytes")
        self._read_and_check(offset, max_bytes)

    def _read_and_check(self, offset: int, max_bytes: int) -> None:
        plog = self._plog()
        hw = plog.high_watermark

        async def go() -> list[Record] | KafkaError:
            out: list[Record] = []
            at = offset
            try:
                while at < plog.high_watermark:
                    raw = await plog.read(at, max_bytes)
                    if not raw:
                        break
                    pos = 0
                    while pos < len(raw):
                        head = read_header(raw, pos)
                        chunk = raw[pos : pos + head.length]
                        out.extend(r for r in iter_records(chunk) if r.offset >= at)
                        at = max(at, head.base_offset + head.last_offset_delta + 1)
                        pos += head.length
                return out
            except KafkaError as exc:
                return exc

        got = self.loop.run(go(), within=60)
        if isinstance(got, KafkaError):
            return  # trims under the read, storage errors: a retriable answer
        self._check(offset, hw, got)

    # -- the model -----------------------------------------------------------------------

    def _check(self, offset: int, hw: int, got: list[Record]) -> None:
        offsets = [r.offset for r in got]
        assert offsets == sorted(set(offsets)), offsets
        live = self._live_start()
        served = {r.offset: r for r in got}
        for r in got:
            key, value = self.truth[r.offset]
            assert (r.key, r.value) == (key, value), (r.offset, r.key, r.value, key, value)
        for o in range(max(offset, live), hw):
            assert o in served, f"offset {o} of the live ledgers (from {live}) not served"
        latest: dict[bytes, int] = {}
        for o, (key, _v) in enumerate(self.truth[:hw]):
            latest[key] = o
        for key, o in latest.items():
            if o >= offset and self.truth[o][1] is not None:
                assert o in served, f"key {key!r}: its latest record {o} is missing"
        below: dict[bytes, int] = {}
        for o, (key, _v) in enumerate(self.truth[:live]):
            below[key] = o
        if any(o < live for o in served):
            event("records served from the compacted view")
        if any(self.truth[o][0] == self.truth[p][0] for o in served for p in range(o + 1, live)):
            event("a superseded record hidden below the live start")
        for o in served:
            if o < live:
                key, value = self.truth[o]
                assert value is not None, f"tombstone {o} served below the live start {live}"
                assert below[key] == o, f"{o} superseded by {below[key]} below {live}"

    @invariant()
    def offsets_never_move(self) -> None:
        if self.node is None:
            return
        plog = self._plog()
        assert plog.high_watermark <= len(self.truth)


def test_compacted_topic_matches_kafkas_model() -> None:
    run_state_machine_as_test(
        CompactionMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
