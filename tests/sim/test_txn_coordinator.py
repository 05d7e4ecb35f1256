"""The transaction coordinator over the in-memory storage: a commit is answered once
it is prepared durably, its markers follow (retried while they fail) and only then
is it complete; a crash between the two is finished by the next owner with the
outcome the client was told; a transaction past its timeout is aborted and its
producer fenced; a change that could not be persisted is not applied."""

from __future__ import annotations

import itertools

from kop.protocol.control import Marker
from kop.protocol.errors import ErrorCode
from kop.storage.types import StorageError
from kop.txn.coordinator import TxnCoordinator
from kop.txn.id_room import TxnLimits
from kop.txn.peers import CoordinatorFenced
from kop.txn.state import Partition, State
from kop.txn.store import TxnStore
from tests.sim.clock import SimLoop
from tests.sim.memory_log import MemoryLog

TOPIC = "persistent://public/__kop/transaction-state"
A0, B1 = ("a", 0), ("b", 1)


class Markers:
    """Records the markers written; fails the first `failures` writes with `error`."""

    def __init__(self, failures: int = 0, error: Exception | None = None) -> None:
        self.written: list[tuple[frozenset[Partition], Marker]] = []
        self.failures = failures
        self.error = error or StorageError("the partition's owner is away")

    async def write(self, partitions: frozenset[Partition], marker: Marker) -> None:
        if self.failures:
            self.failures -= 1
            raise self.error
        self.written.append((partitions, marker))


class Clock:
    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


def coordinator(log: MemoryLog, markers: Markers, clock: Clock) -> TxnCoordinator:
    ids = itertools.count(100)
    return TxnCoordinator(TxnStore(log, TOPIC, 1), markers, 60_000, lambda: next(ids), clock)


def test_a_commit_is_answered_when_prepared_and_completed_after_its_markers(
    loop: SimLoop,
) -> None:
    markers, clock = Markers(failures=2), Clock()
    c = coordinator(MemoryLog(), markers, clock)
    loop.run(c.load(0), within=10)
    error, pid, epoch = loop.run(c.init_producer_id("t", 10_000), within=10)
    assert (error, epoch) == (ErrorCode.none, 0)
    assert loop.run(c.add_partitions("t", pid, epoch, [A0, B1]), within=10) is ErrorCode.none
    assert loop.run(c.end_txn("t", pid, epoch, commit=True), within=10)[0] is ErrorCode.none
    meta = c.meta("t")
    assert meta is not None and meta.state is State.PREPARE_COMMIT
    loop.settle(2.0)  # two failed marker writes, retried
    assert markers.written == [(frozenset({A0, B1}), Marker(True, pid, 0, 0))]
    meta = c.meta("t")
    assert meta is not None and meta.state is State.COMPLETE_COMMIT


def test_a_new_transaction_waits_for_the_markers_of_the_last_one(loop: SimLoop) -> None:
    """A request for an id whose last end is being written waits for it (bounded)
    where Kafka answers CONCURRENT_TRANSACTIONS at once: librdkafka's abort after such
    an answer meets the commit before it and fails fatally (INVALID_TXN_STATE)."""
    markers, clock = Markers(failures=2), Clock()
    c = coordinator(MemoryLog(), markers, clock)
    loop.run(c.load(0), within=10)
    _, pid, epoch = loop.run(c.init_producer_id("t", 10_000), within=10)
    loop.run(c.add_partitions("t", pid, epoch, [A0, B1]), within=10)
    assert loop.run(c.end_txn("t", pid, epoch, commit=True), within=10)[0] is ErrorCode.none
    assert markers.written == []  # the commit is answered before its markers land
    assert loop.run(c.add_partitions("t", pid, epoch, [A0]), within=10) is ErrorCode.none
    assert markers.written == [(frozenset({A0, B1}), Marker(True, pid, 0, 0))]
    assert loop.run(c.end_txn("t", pid, epoch, commit=False), within=10)[0] is ErrorCode.none


def test_past_the_wait_a_new_transaction_is_told_to_retry(loop: SimLoop) -> None:
    markers, clock = Markers(failures=1_000_000), Clock()  # markers never land
    c = coordinator(MemoryLog(), markers, clock)
    loop.run(c.load(0), within=10)
    _, pid, epoch = loop.run(c.init_producer_id("t", 10_000), within=10)
    loop.run(c.add_partitions("t", pid, epoch, [A0]), within=10)
    loop.run(c.end_txn("t", pid, epoch, commit=True), within=10)
    assert loop.run(c.add_partitions("t", pid, epoch, [A0]), within=10) is (
        ErrorCode.concurrent_transactions  # after ENDING_WAIT_S (5 s)
    )
    meta = c.meta("t")
    assert meta is not None and meta.state is State.PREPARE_COMMIT


def test_an_unexpected_failure_of_the_markers_is_retried_too(loop: SimLoop) -> None:
    """Whatever a marker write raises (a peer's malformed answer, a bug), the end is
    retried: a transaction left preparing would answer CONCURRENT_TRANSACTIONS to its
    producer, and hold the last stable offset of its partitions, forever."""
    markers = Markers(failures=1, error=RuntimeError("a peer answered nonsense"))
    c = coordinator(MemoryLog(), markers, Clock())
    loop.run(c.load(0), within=10)
    _, pid, epoch = loop.run(c.init_producer_id("t", 10_000), within=10)
    loop.run(c.add_partitions("t", pid, epoch, [A0]), within=10)
    assert loop.run(c.end_txn("t", pid, epoch, commit=False), within=10)[0] is ErrorCode.none
    loop.settle(2.0)
    assert markers.written == [(frozenset({A0}), Marker(False, pid, 0, 0))]
    meta = c.meta("t")
    assert meta is not None and meta.state is State.COMPLETE_ABORT


def test_a_crash_after_the_prepare_is_finished_by_the_next_owner(loop: SimLoop) -> None:
    log, clock = MemoryLog(), Clock()
    first = coordinator(log, Markers(failures=1_000_000), clock)  # markers never land
    loop.run(first.load(0), within=10)
    _, pid, epoch = loop.run(first.init_producer_id("t", 10_000), within=10)
    loop.run(first.add_partitions("t", pid, epoch, [A0]), within=10)
    assert loop.run(first.end_txn("t", pid, epoch, commit=True), within=10)[0] is ErrorCode.none
    # kill -9 of the first; the next owner takes the partition over
    markers = Markers()
    second = coordinator(log.instance(), markers, clock)
    loop.run(second.load(0), within=10)
    loop.settle(1.0)
    # the next owner writes with its own coordinator epoch, 1
    assert markers.written == [(frozenset({A0}), Marker(True, pid, epoch, 1))]
    meta = second.meta("t")
    assert meta is not None and meta.state is State.COMPLETE_COMMIT


def test_an_open_transaction_is_aborted_by_the_next_owner_and_its_producer_fenced(
    loop: SimLoop,
) -> None:
    log, clock = MemoryLog(), Clock()
    first = coordinator(log, Markers(), clock)
    loop.run(first.load(0), within=10)
    _, pid, epoch = loop.run(first.init_producer_id("t", 10_000), within=10)
    loop.run(first.add_partitions("t", pid, epoch, [B1]), within=10)
    markers = Markers()
    second = coordinator(log.instance(), markers, clock)
    loop.run(second.load(0), within=10)
    loop.settle(1.0)
    assert markers.written == [(frozenset({B1}), Marker(False, pid, epoch + 1, 1))]
    assert loop.run(second.end_txn("t", pid, epoch, commit=True), within=10)[0] is (
        ErrorCode.producer_fenced
    )


def test_a_transaction_past_its_timeout_is_aborted_and_fenced(loop: SimLoop) -> None:
    markers, clock = Markers(), Clock()
    c = coordinator(MemoryLog(), markers, clock)
    loop.run(c.load(0), within=10)
    _, pid, epoch = loop.run(c.init_producer_id("t", 5_000), within=10)
    clock.ms = 1_000
    loop.run(c.add_partitions("t", pid, epoch, [A0]), within=10)
    clock.ms = 5_999
    loop.run(c.expire(), within=10)
    assert markers.written == []  # not yet: 4,999 ms of 5,000
    clock.ms = 6_000
    loop.run(c.expire(), within=10)
    loop.settle(1.0)
    assert markers.written == [(frozenset({A0}), Marker(False, pid, epoch + 1, 0))]
    assert loop.run(c.add_partitions("t", pid, epoch, [A0]), within=10) is (
        ErrorCode.producer_fenced
    )
    error, _, new_epoch = loop.run(c.init_producer_id("t", 5_000, (pid, epoch)), within=10)
    assert error is ErrorCode.producer_fenced  # the zombie cannot come back either
    error, _, new_epoch = loop.run(c.init_producer_id("t", 5_000), within=10)
    assert (error, new_epoch) == (ErrorCode.none, epoch + 2)


def test_a_change_that_was_not_persisted_is_not_applied(loop: SimLoop) -> None:
    log, clock = MemoryLog(), Clock()
    c = coordinator(log, Markers(), clock)
    loop.run(c.load(0), within=10)
    _, pid, epoch = loop.run(c.init_producer_id("t", 5_000), within=10)
    log.topic(f"{TOPIC}-partition-0").persist_next = 0  # the write fails, nothing stored
    assert loop.run(c.add_partitions("t", pid, epoch, [A0]), within=10) is (
        ErrorCode.coordinator_not_available
    )
    meta = c.meta("t")
    assert meta is not None and meta.state is State.EMPTY
    assert loop.run(c.add_partitions("t", pid, epoch, [A0]), within=10) is ErrorCode.none


def test_finished_ids_expire_as_kafka_s_do_and_an_open_one_never(loop: SimLoop) -> None:
    """Issue 33, finding 6: transactional ids never expired, so memory and the state
    topic grew with every id ever used. Kafka's transactional.id.expiration.ms: an id
    whose last transaction finished that long ago is forgotten (a tombstone, so the
    next owner does not load it either); an id with a transaction open is kept."""
    log, clock = MemoryLog(), Clock()
    limits = TxnLimits(id_expiration_ms=1_000, cleanup_interval_ms=100)
    ids = itertools.count(100)
    c = TxnCoordinator(TxnStore(log, TOPIC, 1), Markers(), 60_000, lambda: next(ids), clock, limits)
    loop.run(c.load(0), within=10)
    _, done_pid, _ = loop.run(c.init_producer_id("done", 10_000), within=10)
    _, open_pid, _ = loop.run(c.init_producer_id("open", 50_000), within=10)
    assert loop.run(c.add_partitions("open", open_pid, 0, [A0]), within=10) is ErrorCode.none
    clock.ms = 999
    loop.run(c.expire(), within=10)
    assert c.meta("done") is not None  # not yet
    clock.ms = 1_200
    loop.run(c.expire(), within=10)
    assert c.meta("done") is None and c.meta("open") is not None
    again = TxnCoordinator(TxnStore(log.instance(), TOPIC, 1), Markers(), 60_000,
                           lambda: next(ids), clock, limits)  # fmt: skip
    loop.run(again.load(0), within=10)
    assert again.meta("done") is None and again.meta("open") is not None
    error, pid, epoch = loop.run(again.init_producer_id("done", 10_000), within=10)
    assert error is ErrorCode.none and (pid, epoch) != (done_pid, 1)  # a new id, epoch 0
    assert epoch == 0


def test_a_tenant_holds_at_most_its_share_of_transactional_ids(loop: SimLoop) -> None:
    """Issue 33, finding 6: any producer could add transactional ids without end. A
    tenant at max_transactional_ids_per_tenant gets COORDINATOR_NOT_AVAILABLE for a
    new id (its own ids go on), and other tenants are not affected."""
    limits = TxnLimits(max_ids_per_tenant=2, default_tenant="public")
    ids = itertools.count(100)
    c = TxnCoordinator(TxnStore(MemoryLog(), TOPIC, 1), Markers(), 60_000, lambda: next(ids),
                       Clock(), limits)  # fmt: skip
    loop.run(c.load(0), within=10)

    def init(txn_id: str) -> ErrorCode:
        return loop.run(c.init_producer_id(txn_id, 10_000), within=10)[0]

    assert init("//evil/ns/a") is ErrorCode.none
    assert init("//evil/other/b") is ErrorCode.none
    assert init("//evil/ns/c") is ErrorCode.coordinator_not_available
    assert init("//evil/ns/a") is ErrorCode.none  # an id it holds: a new epoch
    assert init("mine") is ErrorCode.none  # bare ids: the default namespace's tenant
    assert init("//acme/orders/t") is ErrorCode.none


def test_a_fenced_coordinator_stops_writing_its_markers(loop: SimLoop) -> None:
    """A partition that has taken a marker from a later coordinator refuses this one's
    (TRANSACTION_COORDINATOR_FENCED): it is stale, so it stops instead of retrying
    for ever, and leaves the end to the coordinator that owns the partition now."""
    attempts: list[Marker] = []

    class Fenced:
        async def write(self, partitions: frozenset[Partition], marker: Marker) -> None:
            attempts.append(marker)
            raise CoordinatorFenced("a later coordinator wrote there")

    ids = itertools.count(100)
    c = TxnCoordinator(TxnStore(MemoryLog(), TOPIC, 1), Fenced(), 60_000, lambda: next(ids),
                       Clock())  # fmt: skip
    loop.run(c.load(0), within=10)
    _, pid, epoch = loop.run(c.init_producer_id("t", 10_000), within=10)
    loop.run(c.add_partitions("t", pid, epoch, [A0]), within=10)
    assert loop.run(c.end_txn("t", pid, epoch, commit=True), within=10)[0] is ErrorCode.none
    loop.settle(30.0)
    assert len(attempts) == 1
    meta = c.meta("t")
    assert meta is not None and meta.state is State.PREPARE_COMMIT  # not completed here
