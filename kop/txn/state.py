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

The rules for client requests are in `requests.py`; this is the table they decide
over and the changes that need no client (completion, timeouts, recovery).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace

from kop.groups.tenant_keys import TenantKeyed
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
    # When the last change was made durable (Kafka's txnLastUpdateTimestamp): a
    # finished id unchanged for transactional_id_expiration_ms is forgotten.
    updated_ms: int = -1

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


class TxnTable:
    """Every transactional id this coordinator owns, and which have a change on its way."""

    def __init__(self, max_timeout_ms: int, default_tenant: str = "") -> None:
        self.max_timeout_ms = max_timeout_ms
        self.metas: TenantKeyed[TxnMeta] = TenantKeyed(default_tenant)
        self.pending: set[str] = set()

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

    def idle_since(self, before_ms: int) -> list[str]:
        """The finished ids whose last change is older than `before_ms` (Kafka expires
        an id in Empty, CompleteCommit or CompleteAbort, never one with a transaction)."""
        finished = (State.EMPTY, State.COMPLETE_COMMIT, State.COMPLETE_ABORT)
        return [
            meta.txn_id
            for meta in self.metas.values()
            if meta.state in finished and meta.txn_id not in self.pending
            and 0 <= meta.updated_ms < before_ms
        ]  # fmt: skip

    def recover(self, metas: Iterable[TxnMeta]) -> list[Decision]:
        """After a restart: what the state topic held; the ends to finish (a prepared
        commit is committed, everything else unfinished is aborted)."""
        self.metas.clear()
        self.metas.update((m.txn_id, m) for m in metas)
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
