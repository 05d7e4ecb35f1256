"""The transaction coordinator's rules for client requests (InitProducerId,
AddPartitionsToTxn and its implicit form, EndTxn), pure, over the table of
`state.py`: each answers with a `Decision` the caller makes durable.

Transaction version 2 (KIP-890 part 2) is decided per request, as Kafka decides it:
an EndTxn of version 2 bumps the epoch at every end, commit or abort, in the change
that prepares it (its markers carry the new epoch, so a late write of the ended
transaction is fenced in every partition) and is answered with the new epoch; a
retry of it with the epoch before the bump is recognised by `last_epoch`. Past the
last epoch a new producer id takes over once the markers are written (the markers
still name the old one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from kop.protocol.errors import ErrorCode
from kop.txn.state import MAX_EPOCH, Decision, Partition, State, TxnMeta, TxnTable


class Transactions(TxnTable):
    """The table, and what clients may ask of it."""

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


def _retried_v2_end(meta: TxnMeta, producer_id: int, epoch: int) -> bool:
    """A version-2 EndTxn sent again after its end bumped the epoch (its answer was
    lost): the epoch before that bump, under the id it was given for. A fence
    forgets that epoch, so a fenced producer never passes for one."""
    if meta.version < 2 or meta.state in (State.EMPTY, State.ONGOING):
        return False
    if meta.prev_producer_id == producer_id:  # past the last epoch: a new id took over
        return epoch >= MAX_EPOCH and meta.epoch == 0 and meta.last_epoch == -1
    return meta.producer_id == producer_id and meta.last_epoch == epoch == meta.epoch - 1
