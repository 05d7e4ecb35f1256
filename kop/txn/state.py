"""The transaction coordinator's rules, pure: Kafka's TransactionMetadata as data
and decisions, no I/O, no clock of its own.

Every change is decided here, made durable by the caller (the transaction state
topic), and only then applied (`apply`), as the group coordinator does with its
offsets topic. While a change is on its way the transactional id is *pending*: any
other request for it is answered CONCURRENT_TRANSACTIONS, the retriable error Kafka
gives for the same window. Ending a transaction is two changes: PREPARE_COMMIT (or
PREPARE_ABORT) with the partitions whose logs need a marker, then, once every
marker is written, COMPLETE_COMMIT (COMPLETE_ABORT). A transaction that is fenced
(a new InitProducerId, its timeout) gets its epoch bumped in the same change that
prepares its abort, so its markers carry an epoch the old producer cannot write
past. After a restart (`recover`) a transaction that was preparing to commit
completes and every other unfinished one is aborted, so nothing ends half-done.

Transaction version 2 (KIP-890 part 2) is decided per request, as Kafka decides it:
an EndTxn of version 2 bumps the epoch at every end, commit or abort, in the change
that prepares it (its markers carry the new epoch, so a late write of the ended
transaction is fenced in every partition) and is answered with the new epoch; a
retry of it with the epoch before the bump is recognised by `last_epoch`. Past the
last epoch a new producer id takes over once the markers are written (the markers
still name the old one).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from kop.protocol.errors import ErrorCode

MAX_EPOCH = 32766  # Kafka's Short.MaxValue - 1: past it a producer gets a new id
Partition = tuple[str, int]  # (the partition's Pulsar topic, its Kafka index)


class State(enum.Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"

    @property
    def preparing(self) -> bool:
        return self in (State.PREPARE_COMMIT, State.PREPARE_ABORT)


@dataclass(frozen=True, slots=True)
class TxnMeta:
    """What the transaction state topic holds for one transactional id."""

    txn_id: str
    producer_id: int
    epoch: int
    timeout_ms: int
    state: State = State.EMPTY
    partitions: frozenset[Partition] = frozenset()
    started_ms: int = -1  # when the ongoing transaction added its first partition
    last_epoch: int = -1  # the epoch before the last bump (a retried InitProducerId)
    version: int = 1  # the client transaction version the last change was asked with
    # A version-2 end past the last epoch: the id the producer goes on with (while
    # preparing), and the one it had (once complete), for a retry of that end.
    next_producer_id: int = -1
    prev_producer_id: int = -1

    @property
    def committing(self) -> bool:
        return self.state in (State.PREPARE_COMMIT, State.COMPLETE_COMMIT)

    @property
    def ids(self) -> tuple[int, int]:
        """The producer id and epoch the producer goes on with (EndTxn v5's answer)."""
        if self.next_producer_id >= 0:
            return self.next_producer_id, 0
        return self.producer_id, self.epoch


@dataclass(frozen=True, slots=True)
class Decision:
    """An answer (`error`), and the change to make durable before it is given; with
    `markers`, the change prepares an end and these logs need a marker first."""

    error: ErrorCode = ErrorCode.none
    write: TxnMeta | None = None
    markers: frozenset[Partition] = frozenset()


def _bump(meta: TxnMeta, new_id: Callable[[], int]) -> TxnMeta:
    if meta.epoch >= MAX_EPOCH:
        return replace(meta, producer_id=new_id(), epoch=0, last_epoch=-1, prev_producer_id=-1)
    return replace(meta, epoch=meta.epoch + 1, last_epoch=meta.epoch)


def _ended(meta: TxnMeta, state: State, new_id: Callable[[], int]) -> TxnMeta:
    """A version-2 end: the epoch bumped in the prepare (up to Kafka's Short.MaxValue,
    kept for markers and fences), a new producer id to follow past the last epoch."""
    following = new_id() if meta.epoch >= MAX_EPOCH else -1
    return replace(
        meta, state=state, epoch=meta.epoch + 1, last_epoch=meta.epoch, version=2,
        next_producer_id=following,
    )  # fmt: skip


class Transactions:
    """Every transactional id this coordinator owns, and which have a change on its way."""

    def __init__(self, max_timeout_ms: int) -> None:
        self.max_timeout_ms = max_timeout_ms
        self.metas: dict[str, TxnMeta] = {}
        self.pending: set[str] = set()

    def init(
        self, txn_id: str, timeout_ms: int, new_id: Callable[[], int],
        expected: tuple[int, int] | None = None,
    ) -> Decision:  # fmt: skip
        """InitProducerId with a transactional id (`expected`: KIP-360's id and epoch)."""
        if not 0 < timeout_ms <= self.max_timeout_ms:
            return Decision(ErrorCode.invalid_transaction_timeout)
        meta = self.metas.get(txn_id)
        if meta is None:
            return self._decide(TxnMeta(txn_id, new_id(), 0, timeout_ms))
        if txn_id in self.pending or meta.state.preparing:
            return Decision(ErrorCode.concurrent_transactions)
        if expected is not None:
            pid, epoch = expected
            if pid != meta.producer_id or epoch not in (meta.epoch, meta.last_epoch):
                return Decision(ErrorCode.producer_fenced)
            if epoch == meta.last_epoch and meta.state is not State.ONGOING:
                return Decision()  # the reply to its bump was lost: the same answer again
        if meta.state is State.ONGOING:  # a new incarnation fences the old one's work
            return self._abort(meta, ErrorCode.concurrent_transactions)
        return self._decide(replace(_bump(meta, new_id), timeout_ms=timeout_ms))

    def add(self, txn_id: str, producer_id: int, epoch: int, parts: Iterable[Partition],
            now_ms: int, version: int = 1) -> Decision:  # fmt: skip
        """AddPartitionsToTxn (AddOffsetsToTxn adds the group's offsets partition);
        version 2: a partition added implicitly by a Produce or TxnOffsetCommit."""
        meta, error = self._current(txn_id, producer_id, epoch)
        if meta is None:
            return Decision(error)
        if meta.state.preparing:
            return Decision(ErrorCode.concurrent_transactions)
        parts = frozenset(parts)
        if meta.state is State.ONGOING:
            if parts <= meta.partitions and version <= meta.version:
                return Decision()
            return self._decide(replace(
                meta, partitions=meta.partitions | parts, version=max(version, meta.version)
            ))  # fmt: skip
        return self._decide(replace(
            meta, state=State.ONGOING, partitions=parts, started_ms=now_ms, version=version,
            prev_producer_id=-1,
        ))  # fmt: skip

    def end(
        self, txn_id: str, producer_id: int, epoch: int, commit: bool,
        version: int = 1, new_id: Callable[[], int] | None = None,
    ) -> Decision:  # fmt: skip
        """EndTxn: prepare the end (markers to write), or answer a retry of one;
        version 2 needs `new_id`, for a producer past its last epoch."""
        if version >= 2:
            assert new_id is not None
            return self._end_v2(txn_id, producer_id, epoch, commit, new_id)
        meta, error = self._current(txn_id, producer_id, epoch)
        if meta is None:
            return Decision(error)
        if meta.state is State.ONGOING:
            end = State.PREPARE_COMMIT if commit else State.PREPARE_ABORT
            return self._decide(replace(meta, state=end, version=1), meta.partitions)
        if meta.state.preparing or meta.state in (State.COMPLETE_COMMIT, State.COMPLETE_ABORT):
            if meta.committing != commit:
                return Decision(ErrorCode.invalid_txn_state)
            if meta.state.preparing:
                return Decision(ErrorCode.concurrent_transactions)
            return Decision()  # a retry of an end that completed
        return Decision(ErrorCode.invalid_txn_state)  # EMPTY: nothing to end

    def _end_v2(
        self, txn_id: str, producer_id: int, epoch: int, commit: bool, new_id: Callable[[], int]
    ) -> Decision:
        """Version 2: every end bumps the epoch; a retry carries the epoch before it."""
        meta = self.metas.get(txn_id)
        if meta is not None and _retried_v2_end(meta, producer_id, epoch):
            if meta.committing != commit:
                return Decision(ErrorCode.invalid_txn_state)
            if meta.state.preparing:
                return Decision(ErrorCode.concurrent_transactions)
            return Decision()  # it completed: the answer is the ids it went on with
        meta, error = self._current(txn_id, producer_id, epoch)
        if meta is None:
            return Decision(error)
        end = State.PREPARE_COMMIT if commit else State.PREPARE_ABORT
        if meta.state is State.ONGOING:
            return self._decide(_ended(meta, end, new_id), meta.partitions)
        if meta.state.preparing:
            return Decision(ErrorCode.concurrent_transactions)
        if not commit:  # nothing ongoing (an implicit add that failed): abort it all the same
            return self._decide(_ended(meta, end, new_id))
        return Decision(ErrorCode.invalid_txn_state)

    def complete(self, txn_id: str) -> Decision:
        """Every marker of a prepared end is written: the transaction is over (past
        the last epoch, the producer id that follows takes over now)."""
        meta = self.metas[txn_id]
        assert meta.state.preparing, meta
        done = State.COMPLETE_COMMIT if meta.committing else State.COMPLETE_ABORT
        meta = replace(meta, state=done, partitions=frozenset(), started_ms=-1)
        if meta.next_producer_id >= 0:
            meta = replace(
                meta, producer_id=meta.next_producer_id, epoch=0, last_epoch=-1,
                next_producer_id=-1, prev_producer_id=meta.producer_id,
            )  # fmt: skip
        return self._decide(meta)

    def expired(self, now_ms: int) -> list[Decision]:
        """Abort (and fence) every ongoing transaction past its timeout."""
        return [
            self._abort(meta)
            for meta in list(self.metas.values())
            if meta.state is State.ONGOING and meta.txn_id not in self.pending
            and now_ms - meta.started_ms >= meta.timeout_ms
        ]  # fmt: skip

    def recover(self, metas: Iterable[TxnMeta]) -> list[Decision]:
        """After a restart: what the state topic held; the ends to finish (a prepared
        commit is committed, everything else unfinished is aborted)."""
        self.metas = {m.txn_id: m for m in metas}
        self.pending.clear()
        out = []
        for meta in list(self.metas.values()):
            if meta.state.preparing:
                self.pending.add(meta.txn_id)
                out.append(Decision(write=meta, markers=meta.partitions))
            elif meta.state is State.ONGOING:
                out.append(self._abort(meta))
        return out

    def apply(self, meta: TxnMeta) -> None:
        """The decided change is durable: it is the state now."""
        self.metas[meta.txn_id] = meta
        if not meta.state.preparing:
            self.pending.discard(meta.txn_id)

    def abandon(self, txn_id: str) -> None:
        """The change could not be made durable: the old state stands."""
        self.pending.discard(txn_id)

    def _decide(self, meta: TxnMeta, markers: frozenset[Partition] = frozenset()) -> Decision:
        self.pending.add(meta.txn_id)
        return Decision(write=meta, markers=markers)

    def _abort(self, meta: TxnMeta, error: ErrorCode = ErrorCode.none) -> Decision:
        # A fence bumps the epoch under the same producer id (up to Kafka's
        # Short.MaxValue, which no producer is ever given), so its markers close the
        # transaction it fences, and forgets the epoch before it (Kafka's
        # lastProducerEpoch = -1): the fenced producer cannot pass for a retry of a bump.
        fenced = replace(
            meta, epoch=meta.epoch + 1, last_epoch=-1, state=State.PREPARE_ABORT,
            next_producer_id=-1,
        )  # fmt: skip
        return replace(self._decide(fenced, meta.partitions), error=error)

    def _current(
        self, txn_id: str, producer_id: int, epoch: int
    ) -> tuple[TxnMeta | None, ErrorCode]:
        meta = self.metas.get(txn_id)
        if meta is not None and meta.next_producer_id == producer_id and epoch == 0:
            return None, ErrorCode.concurrent_transactions  # its id takes over once complete
        if meta is None or meta.producer_id != producer_id:
            return None, ErrorCode.invalid_producer_id_mapping
        if epoch != meta.epoch:
            return None, ErrorCode.producer_fenced
        if txn_id in self.pending:
            return None, ErrorCode.concurrent_transactions
        return meta, ErrorCode.none


def _retried_v2_end(meta: TxnMeta, producer_id: int, epoch: int) -> bool:
    """A version-2 EndTxn sent again after its end bumped the epoch (its answer was
    lost): the epoch before that bump, under the id it was given for. A fence
    forgets that epoch, so a fenced producer never passes for one."""
    if meta.version < 2 or meta.state in (State.EMPTY, State.ONGOING):
        return False
    if meta.prev_producer_id == producer_id:  # past the last epoch: a new id took over
        return epoch >= MAX_EPOCH and meta.epoch == 0 and meta.last_epoch == -1
    return meta.producer_id == producer_id and meta.last_epoch == epoch == meta.epoch - 1
