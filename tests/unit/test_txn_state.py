"""The transaction coordinator's rules (kop/txn/requests.py over kop/txn/state.py) against
a simple model, driven by a hypothesis state machine: producers of a few transactional
ids (each InitProducerId a new incarnation, older ones zombies) add partitions, commit
and abort, under transaction version 1 or 2 (an epoch bump at every end); writes to the
state topic fail; time passes and timeouts fire; the coordinator crashes and recovers
from what was durable. After every step:

- every transaction ends exactly once, with markers on exactly the partitions it
  added, committed only if its producer asked to commit and that was made durable;
- a zombie can never add to or end a transaction of a later incarnation;
- producer ids and epochs only move forward;
- after recovery nothing is left ongoing or half-ended, and after the timeouts
  fire no transaction is older than its timeout (the LSO can never hang)."""

from __future__ import annotations

import itertools

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kop.protocol.errors import ErrorCode
from kop.txn.requests import Transactions
from kop.txn.state import MAX_EPOCH, Decision, State, TxnMeta

IDS = ("t1", "t2")
PARTS = [("a", 0), ("a", 1), ("b", 0)]
MAX_TIMEOUT = 60_000


class TxnMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ids = itertools.count(1000)
        self.coordinator = Transactions(MAX_TIMEOUT)
        self.durable: dict[str, TxnMeta] = {}  # the compacted state topic
        self.now = 0
        self.clients: list[tuple[str, int, int]] = []  # (txn id, producer id, epoch)
        self.added: dict[str, set[tuple[str, int]]] = {}  # the model: what each added
        self.wants_commit: dict[str, bool] = {}  # its producer asked to commit (durable)
        self.markers: dict[str, frozenset[tuple[str, int]]] = {}  # prepared, not written
        self.ended: list[tuple[str, frozenset[tuple[str, int]], bool]] = []
        self.history: dict[str, list[tuple[int, int]]] = {}

    def new_id(self) -> int:
        return next(self.ids)

    def settle(self, decision: Decision, durable: bool = True) -> None:
        """The caller's part: make the change durable, then apply it (or abandon it)."""
        meta = decision.write
        if meta is None:
            return
        if not durable:
            self.coordinator.abandon(meta.txn_id)
            return
        self.durable[meta.txn_id] = meta
        self.coordinator.apply(meta)
        self.history.setdefault(meta.txn_id, []).append((meta.producer_id, meta.epoch))
        if meta.state.preparing:
            self.markers[meta.txn_id] = decision.markers
            self.wants_commit[meta.txn_id] = meta.state is State.PREPARE_COMMIT
        if meta.state is State.ONGOING:
            self.added.setdefault(meta.txn_id, set())

    @rule(txn=st.sampled_from(IDS), timeout=st.sampled_from([0, 1000, 5000, 70_000]),
          durable=st.booleans(), retry=st.booleans())  # fmt: skip
    def init(self, txn: str, timeout: int, durable: bool, retry: bool) -> None:
        mine = [c for c in self.clients if c[0] == txn]
        expected = mine[-1][1:] if retry and mine else None
        d = self.coordinator.init(txn, timeout, self.new_id, expected)
        if not 0 < timeout <= MAX_TIMEOUT:
            assert d.error is ErrorCode.invalid_transaction_timeout
            return
        self.settle(d, durable)
        meta = self.coordinator.metas.get(txn)
        if d.error is ErrorCode.none and meta is not None and txn not in self.coordinator.pending:
            self.clients.append((txn, meta.producer_id, meta.epoch))

    @precondition(lambda self: self.clients)
    @rule(data=st.data(), parts=st.sets(st.sampled_from(PARTS), min_size=1),
          durable=st.booleans(), version=st.sampled_from([1, 2]))  # fmt: skip
    def add(
        self, data: st.DataObject, parts: set[tuple[str, int]], durable: bool, version: int
    ) -> None:
        """AddPartitionsToTxn (version 1), or a Produce or TxnOffsetCommit adding its
        partition implicitly (version 2)."""
        txn, pid, epoch = data.draw(st.sampled_from(self.clients))
        meta = self.coordinator.metas.get(txn)
        current = meta is not None and (meta.producer_id, meta.epoch) == (pid, epoch)
        before = meta.state if meta else None
        d = self.coordinator.add(txn, pid, epoch, parts, self.now, version)
        if not current:
            assert d.error in (ErrorCode.producer_fenced, ErrorCode.invalid_producer_id_mapping)
            return
        if d.error is ErrorCode.none and d.write is not None and durable:
            if before is not State.ONGOING:
                self.added[txn] = set()
            self.settle(d)
            self.added[txn] |= parts
        else:
            self.settle(d, durable)

    @precondition(lambda self: self.clients)
    @rule(data=st.data(), commit=st.booleans(), durable=st.booleans(),
          version=st.sampled_from([1, 2]))  # fmt: skip
    def end(self, data: st.DataObject, commit: bool, durable: bool, version: int) -> None:
        """EndTxn; version 2 bumps the epoch at every end, and its producer goes on
        with the ids it is answered (a retry of it carries the epoch before)."""
        txn, pid, epoch = data.draw(st.sampled_from(self.clients))
        meta = self.coordinator.metas.get(txn)
        current = meta is not None and (meta.producer_id, meta.epoch) == (pid, epoch)
        d = self.coordinator.end(txn, pid, epoch, commit, version, self.new_id)
        if not current:
            if d.error not in (ErrorCode.producer_fenced, ErrorCode.invalid_producer_id_mapping):
                # only a retry of the last version-2 end of this very producer, which
                # changes nothing: a zombie can never end a later incarnation's work
                assert version == 2 and d.write is None and meta is not None, (d, meta)
                assert meta.version == 2 and meta.state is not State.ONGOING, meta
                assert (pid, epoch) in (
                    (meta.producer_id, meta.epoch - 1), (meta.prev_producer_id, MAX_EPOCH)
                )  # fmt: skip
            return
        if d.write is not None:
            assert d.markers == frozenset(self.added.get(txn, ()))
            if version == 2:
                assert d.write.epoch == epoch + 1  # bumped in the prepare: markers fence
        self.settle(d, durable)
        meta = self.coordinator.metas.get(txn)
        if version == 2 and d.error is ErrorCode.none and durable and meta is not None:
            self.clients.append((txn, *meta.ids))

    @precondition(lambda self: self.markers)
    @rule(data=st.data(), durable=st.booleans())
    def write_markers(self, data: st.DataObject, durable: bool) -> None:
        """Every marker of a prepared end written, then the end completed."""
        txn = data.draw(st.sampled_from(sorted(self.markers)))
        parts = self.markers.pop(txn)
        committed = self.wants_commit.pop(txn)
        self.ended.append((txn, parts, committed))
        assert parts == frozenset(self.added.pop(txn, set())), "markers not where it wrote"
        self.settle(self.coordinator.complete(txn), durable)
        if not durable:  # still prepared: the markers are written again later (idempotent)
            self.markers[txn], self.wants_commit[txn] = parts, committed
            self.added[txn] = set(parts)
            self.ended.pop()

    @rule(ms=st.sampled_from([500, 2000, 10_000]))
    def time_passes(self, ms: int) -> None:
        self.now += ms
        for d in self.coordinator.expired(self.now):
            assert d.write is not None and d.write.state is State.PREPARE_ABORT
            self.settle(d)

    @rule()
    def crash_and_recover(self) -> None:
        """kill -9: only what was durable survives; a prepared commit completes,
        everything else unfinished is aborted."""
        self.coordinator = Transactions(MAX_TIMEOUT)
        self.markers.clear()
        self.wants_commit.clear()
        for d in self.coordinator.recover(list(self.durable.values())):
            assert d.write is not None
            self.settle(d)
        for txn in sorted(self.markers):
            self.write_markers_of(txn)
        for meta in self.coordinator.metas.values():
            assert meta.state in (State.EMPTY, State.COMPLETE_COMMIT, State.COMPLETE_ABORT)

    def write_markers_of(self, txn: str) -> None:
        parts = self.markers.pop(txn)
        committed = self.wants_commit.pop(txn)
        assert parts == frozenset(self.added.pop(txn, set()))
        self.ended.append((txn, parts, committed))
        self.settle(self.coordinator.complete(txn))

    @invariant()
    def ids_and_epochs_only_move_forward(self) -> None:
        for steps in self.history.values():
            for (pid0, e0), (pid1, e1) in itertools.pairwise(steps):
                assert (pid1 == pid0 and e1 >= e0) or (pid1 != pid0 and e0 >= MAX_EPOCH), steps

    @invariant()
    def no_transaction_outlives_its_timeout_once_timeouts_fire(self) -> None:
        pending = self.coordinator.pending
        for meta in self.coordinator.metas.values():
            if meta.state is State.ONGOING and meta.txn_id not in pending:
                overdue = self.now - meta.started_ms >= meta.timeout_ms
                if overdue:  # it is aborted at the next check; do it and look
                    decisions = self.coordinator.expired(self.now)
                    assert meta.txn_id in {d.write.txn_id for d in decisions if d.write}
                    for d in decisions:
                        self.coordinator.abandon(d.write.txn_id if d.write else "")


def test_transactions_against_the_model() -> None:
    TxnMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=40,
                                            deadline=None)  # fmt: skip
    TxnMachine.TestCase().runTest()


def test_a_commit_made_durable_survives_a_crash_before_its_markers() -> None:
    ids = itertools.count(1)
    tx = Transactions(MAX_TIMEOUT)
    d = tx.init("t", 1000, lambda: next(ids))
    assert d.write is not None
    tx.apply(d.write)
    d = tx.add("t", d.write.producer_id, 0, [("a", 0)], now_ms=0)
    assert d.write is not None
    tx.apply(d.write)
    d = tx.end("t", d.write.producer_id, 0, commit=True)
    assert d.write is not None and d.markers == {("a", 0)}
    durable = d.write
    again = Transactions(MAX_TIMEOUT)
    (finish,) = again.recover([durable])
    assert finish.markers == {("a", 0)} and finish.write is not None
    assert finish.write.state is State.PREPARE_COMMIT  # committed, not aborted
    done = again.complete("t")
    assert done.write is not None and done.write.state is State.COMPLETE_COMMIT


def test_a_new_incarnation_fences_the_ongoing_transaction() -> None:
    ids = itertools.count(1)
    tx = Transactions(MAX_TIMEOUT)
    first = tx.init("t", 1000, lambda: next(ids)).write
    assert first is not None
    tx.apply(first)
    added = tx.add("t", first.producer_id, first.epoch, [("a", 0)], now_ms=0).write
    assert added is not None
    tx.apply(added)
    fence = tx.init("t", 1000, lambda: next(ids))
    assert fence.error is ErrorCode.concurrent_transactions  # the client retries
    assert fence.write is not None and fence.write.state is State.PREPARE_ABORT
    assert fence.write.epoch == first.epoch + 1 and fence.markers == {("a", 0)}
    tx.apply(fence.write)
    assert tx.end("t", first.producer_id, first.epoch, True).error is ErrorCode.producer_fenced
    # nor can the fenced producer pass for a retry of the bump (Kafka's lastProducerEpoch)
    retry = tx.init("t", 1000, lambda: next(ids), (first.producer_id, first.epoch))
    assert retry.error in (ErrorCode.producer_fenced, ErrorCode.concurrent_transactions)
    tx.apply(tx.complete("t").write)  # type: ignore[arg-type]
    retry = tx.init("t", 1000, lambda: next(ids), (first.producer_id, first.epoch))
    assert retry.error is ErrorCode.producer_fenced


def _ongoing(tx: Transactions, epoch: int = 0, pid: int = 7) -> TxnMeta:
    """An id whose producer (pid, epoch) has a transaction on ("a", 0) ongoing."""
    meta = TxnMeta("t", pid, epoch, 1000, State.ONGOING, frozenset({("a", 0)}), 0, epoch - 1)
    tx.apply(meta)
    return meta


def _applied(tx: Transactions, d: Decision) -> TxnMeta:
    assert d.write is not None, d
    tx.apply(d.write)
    return d.write


def test_a_version_2_end_bumps_the_epoch_and_a_retry_of_it_is_answered_as_it_was() -> None:
    """KIP-890 part 2: the prepare carries epoch + 1 (its markers fence every late
    write of the transaction); the producer goes on with it; the same EndTxn sent
    again (its answer lost) carries the epoch before and is recognised as a retry."""
    tx = Transactions(MAX_TIMEOUT)
    _ongoing(tx, epoch=4)
    d = tx.end("t", 7, 4, True, 2, lambda: 99)
    assert d.error is ErrorCode.none and d.markers == {("a", 0)}
    prepared = _applied(tx, d)
    assert (prepared.state, prepared.epoch, prepared.ids) == (State.PREPARE_COMMIT, 5, (7, 5))
    assert tx.end("t", 7, 4, True, 2, lambda: 99).error is ErrorCode.concurrent_transactions
    assert tx.add("t", 7, 5, [("b", 0)], 0, 2).error is ErrorCode.concurrent_transactions
    _applied(tx, tx.complete("t"))
    retry = tx.end("t", 7, 4, True, 2, lambda: 99)
    assert (retry.error, retry.write) == (ErrorCode.none, None)
    assert tx.metas["t"].ids == (7, 5)
    assert tx.end("t", 7, 4, False, 2, lambda: 99).error is ErrorCode.invalid_txn_state
    # the next transaction, under the bumped epoch
    assert _applied(tx, tx.add("t", 7, 5, [("b", 0)], 0, 2)).state is State.ONGOING
    assert tx.end("t", 7, 4, True, 2, lambda: 99).error is ErrorCode.producer_fenced


def test_a_version_2_end_past_the_last_epoch_hands_over_to_a_new_producer_id() -> None:
    """Markers go out under the old id at Kafka's Short.MaxValue; the answer names the
    new id at epoch 0, which waits (CONCURRENT_TRANSACTIONS) until they are written."""
    tx = Transactions(MAX_TIMEOUT)
    _ongoing(tx, epoch=MAX_EPOCH)
    prepared = _applied(tx, tx.end("t", 7, MAX_EPOCH, False, 2, lambda: 99))
    assert (prepared.producer_id, prepared.epoch, prepared.ids) == (7, MAX_EPOCH + 1, (99, 0))
    assert tx.add("t", 99, 0, [("b", 0)], 0, 2).error is ErrorCode.concurrent_transactions
    done = _applied(tx, tx.complete("t"))
    assert (done.producer_id, done.epoch, done.prev_producer_id) == (99, 0, 7)
    retry = tx.end("t", 7, MAX_EPOCH, False, 2, lambda: 100)
    assert (retry.error, retry.write, tx.metas["t"].ids) == (ErrorCode.none, None, (99, 0))
    assert _applied(tx, tx.add("t", 99, 0, [("b", 0)], 0, 2)).state is State.ONGOING


def test_a_fenced_version_2_producer_never_passes_for_a_retry() -> None:
    """A timeout's abort bumps the epoch once, as an end does, but forgets the epoch
    before it: the fenced producer's EndTxn is PRODUCER_FENCED, not a retry."""
    tx = Transactions(MAX_TIMEOUT)
    _ongoing(tx, epoch=3)
    (fence,) = tx.expired(now_ms=10_000)
    assert fence.write is not None and fence.write.epoch == 4
    _applied(tx, fence)
    _applied(tx, tx.complete("t"))
    assert tx.end("t", 7, 3, False, 2, lambda: 99).error is ErrorCode.producer_fenced


def test_a_version_2_abort_with_nothing_ongoing_bumps_the_epoch_and_writes_no_marker() -> None:
    """A producer whose implicit add failed cannot know whether it was made: it
    aborts, and its epoch is bumped all the same (any write of it still on its way
    is fenced); a commit with nothing ongoing is INVALID_TXN_STATE, as before."""
    ids = itertools.count(1)
    tx = Transactions(MAX_TIMEOUT)
    first = _applied(tx, tx.init("t", 1000, lambda: next(ids)))
    pid = first.producer_id
    assert tx.end("t", pid, 0, True, 2, lambda: 99).error is ErrorCode.invalid_txn_state
    d = tx.end("t", pid, 0, False, 2, lambda: 99)
    assert d.markers == frozenset()
    assert _applied(tx, d).ids == (pid, 1)


def test_a_fence_at_the_last_epoch_keeps_the_producer_id_so_its_markers_close_the_transaction() -> (
    None
):
    """Before: a fence at epoch 32766 moved the id to a new producer id, and the abort
    markers named the new id, so the fenced transaction stayed open in its partitions
    (a last stable offset held for good). The fence takes Short.MaxValue under the
    same id; the id changes at the next InitProducerId."""
    ids = itertools.count(50)
    tx = Transactions(MAX_TIMEOUT)
    _ongoing(tx, epoch=MAX_EPOCH)
    fence = tx.init("t", 1000, lambda: next(ids))
    assert fence.write is not None and fence.markers == {("a", 0)}
    assert (fence.write.producer_id, fence.write.epoch) == (7, MAX_EPOCH + 1)
    _applied(tx, fence)
    _applied(tx, tx.complete("t"))
    new = _applied(tx, tx.init("t", 1000, lambda: next(ids)))
    assert (new.producer_id, new.epoch) == (50, 0)
